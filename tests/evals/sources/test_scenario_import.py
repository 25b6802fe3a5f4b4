"""`ctxlab scenarios import`: a recorded run as a scenario file, loaded and replayed like a
built-in scenario (the run here is recorded in-process; tests/flows records one with
`ctxlab run`)."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
import yaml
from helpers.recorded import record_flagship

from evals.errors import ScenarioFileError
from evals.scenarios.base import PROBE_KINDS
from evals.scenarios.from_file import load_scenario_file
from flows.cli import main
from harness import Store, create_agent
from harness.models.scripted import ScriptedModel


@pytest.fixture(scope="module")
def flagship(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """(store, first run id, imported file)."""
    root = tmp_path_factory.mktemp("flagship")
    db = root / "run.duckdb"
    run_id = record_flagship(db)
    out = root / "run.yaml"
    assert main(["scenarios", "import", run_id, "--db", str(db), "--out", str(out)]) == 0
    return db, run_id, out


def test_import_writes_a_versioned_file_with_intentions_not_values(
    flagship: tuple[Path, str, Path],
) -> None:
    db, run_id, out = flagship
    doc = yaml.safe_load(out.read_text())
    assert doc["format"] == "ctxlab-scenario/1"
    assert doc["name"] == f"recorded:{run_id}"
    assert doc["source"]["run_id"] == run_id and doc["source"]["db"] == db.name
    assert str(db.parent) not in out.read_text()  # the store's name only, not where it lives
    assert len(doc["turns"]) == 5  # the week's user turns
    assert doc["model"]["window"] == 16_000  # the run's own window, recorded with the run
    assert {t["name"] for t in doc["tools"]} == {
        "query_market_export", "search_news", "read_article", "publish_report",
    }  # fmt: skip
    assert [s["name"] for s in doc["subagents"]] == ["market-researcher"]
    assert [s["path"] for s in doc["skills"]] == ["/skills/qbr-report/SKILL.md"]
    assert len(doc["tasks"]) == 3
    # The figures the agent noted come from the export: its notes name them as slots.
    revenue = re.search(r"revenue_musd = ([0-9.]+)", json.dumps(doc["replies"]))
    notes = json.dumps(doc["turns"])
    assert "Export check" in notes and "{{fact_" in notes
    first_export = next(r for r in doc["replies"] if r["arguments"].get("metric") == "revenue_musd")
    figure = first_export["content"].splitlines()[2].rsplit(",", 1)[1]
    assert revenue is None and figure not in notes
    assert figure in json.dumps(doc["replies"])


def test_probes_are_asked_by_role_as_a_traces_are(flagship: tuple[Path, str, Path]) -> None:
    """A ctxlab thread takes the one path of every trace (to_scenario.py): its questions
    name roles, and its counts say how many candidates each hygiene rule rejected."""
    doc = yaml.safe_load(flagship[2].read_text())
    counts = doc["probe_counts"]
    assert {*PROBE_KINDS, "dropped_leaks", "candidates", "carried"} <= set(counts)
    assert sum(counts[k] for k in PROBE_KINDS) == len(doc["probes"]) >= 5
    assert counts["candidates"] > counts["recall"]
    assert {k for k in counts if k.startswith("rejected_")} >= {"rejected_word", "rejected_no_role"}
    questions = [p for p in doc["probes"] if p.get("check") is None]
    assert questions and all(p["kind"] == "recall" and p["role"] for p in questions)
    assert all(p["question"] == f"What is {p['role']['phrase']}?" for p in questions)
    assert all(p["provenance"]["from"] == "trace" for p in questions)
    # the export's figures, asked by the row of the table that printed them
    assert any(p["role"]["kind"] == "table_cell" and p["answer"] == "849.7" for p in questions)
    # each note the agent wrote is checked for the probed figures it wrote there
    checks = {p["check"]["path"]: p["check"]["contains"] for p in doc["probes"] if p.get("check")}
    assert "/notes/fjordline-shipping.md" in checks
    assert all(set(v) <= {p["answer"] for p in questions} for v in checks.values())


def test_eval_replays_the_file_under_any_arm(
    flagship: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    _, run_id, out = flagship
    argv = ["eval", "--scenario", str(out), "--strategy", "full", "--strategy", "mask",
            "--seed", "0", "--no-save", "--json"]  # fmt: skip
    assert main(argv) == 0
    runs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["strategy"] for r in runs] == ["full", "mask"]
    assert all(r["scenario"] == f"recorded:{run_id}" for r in runs)
    assert all(r["probes"] >= 5 and r["input_tokens"] > 0 for r in runs)
    assert runs[0]["accuracy"] >= 0.6


def test_report_covers_recorded_scenarios_stored_or_run_from_the_file(
    flagship: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    cli_env: None,
) -> None:  # fmt: skip
    _, run_id, out = flagship
    results = str(tmp_path / "results.duckdb")
    argv = ["eval", "--scenario", str(out), "--strategy", "full", "--seed", "0", "--db", results]
    assert main(argv) == 0
    assert main(["report", "--db", results, "--out", str(tmp_path / "stored")]) == 0
    stored = tmp_path / "stored" / f"recorded-{run_id}.md"
    assert f"# recorded:{run_id}" in stored.read_text()
    capsys.readouterr()
    assert main(["report", "--db", results, "--scenario", "recorded:elsewhere"]) == 2
    assert f"recorded:{run_id}" in capsys.readouterr().err  # the stored one is offered

    argv = ["report", "--run", "--scenario", str(out), "--scale", "small", "--seeds", "1",
            "--db", str(tmp_path / "run.duckdb"), "--out", str(tmp_path / "ran")]  # fmt: skip
    assert main(argv) == 0
    ran = (tmp_path / "ran" / f"recorded-{run_id}.md").read_text()
    assert f"# recorded:{run_id}" in ran
    assert all(f"| {arm} |" in ran for arm in ("full", "mask", "none-unbounded"))


def test_replay_makes_no_live_tool_call_and_unknown_calls_get_an_error_text(
    flagship: tuple[Path, str, Path],
) -> None:
    scenario = load_scenario_file(flagship[2])
    export = next(t for t in scenario.tools if t.name == "query_market_export")
    store = Store(":memory:")

    class Ctx:
        class state:  # noqa: N801 - stands in for RunState
            pass

    Ctx.state.store = store  # type: ignore[attr-defined]
    import asyncio

    reply = asyncio.run(export.fn(Ctx, company="Nobody Inc"))
    assert reply.startswith("Error: the recording has no reply of query_market_export")


def test_a_thread_id_imports_the_whole_thread_as_its_first_run_does(
    flagship: tuple[Path, str, Path], tmp_path: Path, cli_env: None
) -> None:
    db, run_id, by_run = flagship
    store = Store(str(db), hold=False)
    thread = store.runs.get(run_id)["thread_id"]
    subagent_thread = next(r["thread_id"] for r in store.runs.all() if r["parent_run_id"])
    for name in (thread, subagent_thread):  # a subagent's thread names its parent's
        out = tmp_path / f"{name}.yaml"
        assert main(["scenarios", "import", name, "--db", str(db), "--out", str(out)]) == 0
        doc, same = yaml.safe_load(out.read_text()), yaml.safe_load(by_run.read_text())
        source, same_source = doc.pop("source"), same.pop("source")
        assert doc == same and source["runs"] == same_source["runs"]  # only the date differs
        assert len(doc["turns"]) == 5 and len(doc["tasks"]) == 3  # every run of the thread


def test_unknown_run_or_thread_is_one_line_and_exit_2(
    flagship: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    db = str(flagship[0])
    assert main(["scenarios", "import", "run_nope", "--db", db]) == 2
    err = capsys.readouterr().err.strip()
    assert "no run, session or thread 'run_nope'" in err and len(err.splitlines()) == 1
    assert main(["scenarios", "import", "--thread", "nope", "--db", db]) == 2
    assert "no thread 'nope'" in capsys.readouterr().err


def test_import_never_overwrites_without_force_and_writes_only_yaml_names(
    flagship: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    cli_env: None,
) -> None:  # fmt: skip
    db, run_id, _ = flagship
    folder = tmp_path / "out"
    folder.mkdir()
    mine, notes = folder / "monday.yaml", folder / "exist.txt"
    mine.write_text("my own file\n")
    notes.write_text("my notes\n")
    argv = ["scenarios", "import", run_id, "--db", str(db), "--out"]
    assert main([*argv, str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{mine} exists: pass --force to overwrite it" in err and len(err.splitlines()) == 1
    assert main([*argv, str(notes), "--force"]) == 2
    assert "exist.txt: a scenario file must end in .yaml or .yml" in capsys.readouterr().err
    assert mine.read_text() == "my own file\n" and notes.read_text() == "my notes\n"

    assert main([*argv, str(mine), "--force"]) == 0
    assert load_scenario_file(mine).name == f"recorded:{run_id}"
    assert sorted(p.name for p in folder.iterdir()) == ["exist.txt", "monday.yaml"]


def test_import_into_a_full_disk_keeps_the_previous_file_whole(
    flagship: tuple[Path, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    cli_env: None, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    db, run_id, imported = flagship
    folder = tmp_path / "out"
    folder.mkdir()
    previous = folder / "run.yaml"
    previous.write_bytes(imported.read_bytes())
    real_write = os.write

    def disk_fills_up(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", disk_fills_up)
    argv = ["scenarios", "import", run_id, "--db", str(db), "--force", "--out"]
    assert main([*argv, str(previous)]) == 1
    assert main([*argv, str(folder / "new.yaml")]) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "No space left on device (nothing was changed there)" in err[0]
    assert previous.read_bytes() == imported.read_bytes()
    assert [p.name for p in folder.iterdir()] == ["run.yaml"]  # no temporary nor truncated file


def test_loader_names_the_line_field_and_probe(
    flagship: tuple[Path, str, Path], tmp_path: Path
) -> None:
    doc = yaml.safe_load(flagship[2].read_text())
    probe = doc["probes"][2]
    probe["kind"] = "hunch"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioFileError) as info:
        load_scenario_file(bad)
    message = str(info.value)
    line = next(
        i + 1 for i, text in enumerate(bad.read_text().splitlines()) if "kind: hunch" in text
    )
    assert f"bad.yaml:{line}:" in message and "probes[2].kind" in message
    assert f"probe {probe['id']!r}" in message

    probe["kind"] = "recall"
    probe["after"] = "u999"
    bad.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioFileError, match=r"after: 'u999' is not a turn id"):
        load_scenario_file(bad)


def test_a_probe_added_by_hand_is_asked(flagship: tuple[Path, str, Path], tmp_path: Path) -> None:
    doc = yaml.safe_load(flagship[2].read_text())
    doc["probes"] = [{
        "id": "mine", "kind": "recall", "question": "Which companies did I name this week?",
        "answer": "Fjordline Shipping, Juniper Retail and Borealis Grid", "after": "end",
        "cue": {"patterns": [r"study ([^:\n]+?) this week"]}, "source": "user",
    }]  # fmt: skip
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    scenario = load_scenario_file(path)
    assert [t.probe for t in scenario.sessions[0].turns if t.probe] == ["mine"]


def test_the_memory_a_run_started_with_is_in_the_replays_store(
    flagship: tuple[Path, str, Path], tmp_path: Path
) -> None:
    import asyncio

    from evals.run.replay import replay

    doc = yaml.safe_load(flagship[2].read_text())
    doc["memory"] = [
        {"path": "/memories/AGENTS.md", "content": "# Agent memory\n\n- Cite sources.\n"}
    ]
    path = tmp_path / "remembered.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    outcome = asyncio.run(replay(load_scenario_file(path), "full", seed=0))
    assert outcome.store is not None
    # The recorded run read memory before writing it: the replay's read finds the seeded file.
    reads = [
        m
        for m in outcome.store.messages.rows()
        if m["role"] == "tool" and m["name"] == "read_file" and "Agent memory" in m["content"]
    ]
    assert reads and "Cite sources." in reads[0]["content"]


def test_every_derived_probe_is_answerable_with_everything_in_view(
    flagship: tuple[Path, str, Path], capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    """The cues are right: an ideal reader with an unbounded window gets every probe (and
    the files it wrote carry what it read), so a miss under an arm is the arm's doing."""
    argv = ["eval", "--scenario", str(flagship[2]), "--strategy", "none-unbounded",
            "--reader", "ideal", "--seed", "0", "--no-save", "--json", "--probes"]  # fmt: skip
    assert main(argv) == 0
    (run,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    wrong = [(p["id"], p["answer"]) for p in run["probe_results"] if not p["correct"]]
    assert wrong == [] and run["probes"] >= 5


def test_a_missing_scenario_file_is_named(
    capsys: pytest.CaptureFixture[str], cli_env: None, tmp_path: Path
) -> None:
    missing = str(tmp_path / "gone.yaml")
    assert main(["eval", "--scenario", missing, "--seed", "0", "--no-save"]) == 2
    assert f"no scenario file {missing}" in capsys.readouterr().err


def test_files_stored_in_chunks_are_imported_whole(tmp_path: Path) -> None:
    # Files over 256 KiB live in `file_chunks` (a skill here); the import read them as empty.
    from datetime import UTC, datetime

    from evals.sources.thread_trace import text_files
    from harness import Store
    from harness.files.storage import INLINE_LIMIT, store_content
    from harness.store import read_store

    big = "\n".join(f"line {i}: revenue 849.7" for i in range(INLINE_LIMIT // 10))
    assert len(big) > INLINE_LIMIT
    store = Store(str(tmp_path / "big.duckdb"))
    with store.unit() as uow:
        now = datetime.now(UTC)
        store_content(uow.files, "shared", "/skills/big/SKILL.md", big, None, now)
    store.close()
    con = read_store(str(tmp_path / "big.duckdb"))
    try:
        assert text_files(con, "/skills/") == [{"path": "/skills/big/SKILL.md", "content": big}]
    finally:
        con.close()


def test_the_writer_and_the_loader_share_one_model_of_the_format(
    flagship: tuple[Path, str, Path],
) -> None:
    from evals.scenarios import format as scenario_format
    from evals.scenarios import from_file

    out = flagship[2]
    assert from_file.ScenarioFile is scenario_format.ScenarioFile
    # what the importer wrote is exactly what the loader reads back into the model
    spec = from_file.read_spec(out)
    assert spec.model_dump(exclude_unset=True) == yaml.safe_load(out.read_text())


def test_an_import_the_loader_would_refuse_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    import dataclasses

    from harness.errors import ContextOverflowError
    from harness.profiles import get_profile

    db = tmp_path / "tiny.duckdb"
    store = Store(str(db))
    tiny = dataclasses.replace(
        get_profile("test"), context_window=900
    )  # the format's floor is 1000
    agent = create_agent(ScriptedModel(["Hello."], profile=tiny), [], store=store)
    with pytest.raises(ContextOverflowError):  # recorded all the same, as a failed run
        agent.run_sync("Hi there, please say hello.", thread_id="tiny")
    store.close()
    out = tmp_path / "tiny.yaml"
    assert (
        main(["scenarios", "import", "--thread", "tiny", "--db", str(db), "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "no valid ctxlab-scenario/1 file: window:" in err and "greater than 1000" in err
    assert len(err.splitlines()) == 1 and not out.exists()
