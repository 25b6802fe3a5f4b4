"""Tune on your own runs, end to end from the command line: `ctxlab run competitive-analysis`
records the flagship on the simulated model, `ctxlab scenarios import` turns it into a file,
and `ctxlab eval` / `ctxlab sweep` replay it, all against the session's Prefect server.

Round trip tolerance. The session is recorded with the built-in scenario's week-1 turns,
probe questions included; the import replays the user's questions as the turns they were
(a thread takes the one path of every trace, whose probes are asked by role where the run
used a value), so without its derived probes the file replays the recorded session. Replayed
under `full`, every model call has the same input tokens as the built-in replay's up to the
first question, where the built-in's fallible reader may draw a retrieval round the recorded
answer has not: it adds ~1.5k tokens to every later call until summarization cuts it, ~8% of
the session. So: input tokens within 10%, model calls within 5."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from evals.scenarios import get_scenario
from flows.cli import main
from flows.server import ServerInfo

TRACES_DOC = (Path(__file__).resolve().parents[2] / "docs" / "traces.md").read_text()


def _record(db: Path, inputs: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """`ctxlab run competitive-analysis` against the session's Prefect server."""
    given = [a for text in inputs for a in ("--input", text)]
    capsys.readouterr()
    assert main(["run", "competitive-analysis", "--db", str(db), "--json", *given]) == 0
    return str(json.loads(capsys.readouterr().out)["runs"][0]["run_id"])


def _eval(path: str, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    argv = ["eval", "--scenario", path, "--seed", "0", "--no-save", "--json", *extra]
    assert main(argv) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_recorded_run_round_trips_against_the_built_in_scenario(
    prefect_server: ServerInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    cli_env: None,
) -> None:  # fmt: skip
    week_1 = get_scenario("competitive-analysis", 0, "small").sessions[0]
    run_id = _record(tmp_path / "rt.duckdb", [t.text for t in week_1.turns], capsys)
    out = tmp_path / "rt.yaml"
    argv = ["scenarios", "import", run_id, "--db", str(tmp_path / "rt.duckdb"), "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    doc = yaml.safe_load(out.read_text())
    # The questions the run was asked are turns of the plan, answered as they were.
    questions = [t.text.split("\n", 1)[0] for t in week_1.turns if t.probe is not None]
    firsts = {t["text"].split("\n", 1)[0] for t in doc["turns"]}
    assert questions and all(q in firsts for q in questions)
    assert all(p.get("role") or p.get("check") for p in doc["probes"])
    doc["probes"] = []  # the recorded session alone, as the reference replays it
    only = tmp_path / "asked.yaml"
    only.write_text(yaml.safe_dump(doc, sort_keys=False))

    (imported,) = _eval(str(only), capsys, "--strategy", "full")
    (reference,) = _reference()
    assert abs(imported["input_tokens"] / reference["input_tokens"] - 1) <= 0.10
    assert abs(imported["model_calls"] - reference["model_calls"]) <= 5


def _reference() -> list[dict]:
    """The built-in scenario's week 1 alone under `full` (the recorded session)."""
    import asyncio
    from dataclasses import replace

    from evals.run.replay import replay
    from evals.scoring.results import from_replay

    scenario = get_scenario("competitive-analysis", 0, "small")
    week_1 = replace(
        scenario,
        sessions=scenario.sessions[:1],
        probes=tuple(p for p in scenario.probes if p.session == 0 and p.check is None),
    )
    outcome = asyncio.run(replay(week_1, "full", seed=0))
    result = from_replay(
        outcome, scenario=scenario.name, strategy="full", params={}, seed=0, scale="small",
        model="simulated", reader="fallible", wall_s=0.0,
    )  # fmt: skip
    return [json.loads(result.to_json())]


def test_import_eval_and_sweep_from_the_command_line(
    prefect_server: ServerInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    cli_env: None,
) -> None:  # fmt: skip
    db = tmp_path / "weekly.duckdb"
    capsys.readouterr()
    assert main(["run", "competitive-analysis", "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    # One session is one thread of runs: `ctxlab run` names it, its runs and how to import it.
    (thread,) = re.findall(r"ctxlab scenarios import (\S+) --db", printed)
    runs = re.search(rf"Thread {thread}: 5 runs, one per input \((.*)\)", printed)
    assert runs is not None and "3 subagent runs linked to them" in printed
    run_id = runs.group(1).split(", ")[0]
    # The documented query for what to import finds the one thread, not each of its runs.
    (query,) = re.findall(r'ctxlab sql --db runs.duckdb "([^"]+)"\n# 2. import', TRACES_DOC)
    assert main(["sql", "--db", str(db), "--json", query]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["thread_id"] == thread
    out = tmp_path / "weekly.yaml"
    assert main(["scenarios", "import", thread, "--db", str(db), "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out

    runs = _eval(str(out), capsys, "--strategy", "full", "--strategy", "mask")
    assert [r["strategy"] for r in runs] == ["full", "mask"]
    assert all(r["scenario"] == f"recorded:{run_id}" and r["probes"] >= 5 for r in runs)

    results = tmp_path / "sweep.duckdb"
    argv = ["sweep", "--scenario", str(out), "--grid", "summarize.trigger=0.5,0.9", "--seeds",
            "1", "--db", str(results), "--json"]  # fmt: skip
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    swept = [r for r in lines if not r.get("recommendation")]  # the last line: the pick
    assert sorted(r["params"]["summarize.trigger"] for r in swept) == [0.5, 0.9]
    assert {r["scenario"] for r in swept} == {f"recorded:{run_id}"}
    assert main(["sql", "--db", str(results), "--json",
                 "SELECT DISTINCT scenario FROM eval_runs"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == [{"scenario": f"recorded:{run_id}"}]
