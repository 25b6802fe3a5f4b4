"""Every `ctxlab` command reports a mistake the same way: one line on stderr naming the bad value
and the valid ones, exit 2, before any work; a failure at run time is one line saying where the
details went, exit 1; never a traceback unless --debug."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import no_work, one_line_error

from flows.cli import main

ROOT = Path(__file__).resolve().parents[3]


pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


CA, GPT = "competitive-analysis", "openai:gpt-3.5-turbo"
MISTAKES = [
    (["run", CA, "--strategy", "fulll"], ["'fulll'", "summarize, context-edit, full"]),
    (["run", CA, "--set", "summarize.trigerr=0.5"], ["'summarize.trigerr'", "summarize.trigger"]),
    (["run", CA, "--model", GPT], [f"'{GPT}'", "openai:gpt-6.2-sol", "--window"]),
    (["run", "no-such-agent"], ["'no-such-agent'", CA]),
    (["run", CA, "--set", "novalue"], ["'novalue'", "key=value"]),
    (["sweep", "--scenario", "competitve-analysis"], ["'competitve-analysis'", "long-horizon"]),
    (["sweep", "--scenario", CA, "--model", GPT], [f"'{GPT}'", "simulated", "--window"]),
    (["sweep", "--scenario", CA, "--grid", "mask.kep=3"], ["mask.kep", "mask.keep"]),
    (["sweep", "--scenario", CA, "--scale", "huge"], ["'huge'", "'full'"]),
    (["sweep", "--scenario", CA, "--seeds", "0"], ["0"]),
    (["eval", "--scenario", "nope"], ["'nope'", "support-transcript"]),
    (["eval", "--scenario", CA, "--strategy", "bad"], ["'bad'", "truncate"]),
    (["eval", "--scenario", CA, "--model", GPT], [f"'{GPT}'"]),
    (["report", "--db", "missing.duckdb"], ["missing.duckdb"]),
    (["report", "--scenario", "competitve-analysis"], ["'competitve-analysis'", CA]),
    (["scenarios", "describe", "nope"], ["'nope'", "long-horizon"]),
    (["check", "--suite", "nightly"], ["'nightly'", "ci"]),
    (["server", "bogus"], ["'bogus'", "'stop'"]),
    # issue 22: values range-checked up front, not spun on or failed at run time
    (
        ["eval", "--scenario", CA, "--strategy", "full", "--set", "offload.tool_token_limit=-5"],
        ["offload.tool_token_limit", ">= 0", "-5"],
    ),
    (
        ["eval", "--scenario", CA, "--set", "summarize.trigger=high"],
        ["summarize.trigger", "'high'", "fraction in (0, 1]"],
    ),
    (
        ["eval", "--scenario", CA, "--set", "summarize.trigger=1.5"],
        ["summarize.trigger", "(0, 1]", "1.5"],
    ),
    (
        ["eval", "--scenario", CA, "--strategy", "mask", "--set", "summarize.trigger=0.7"],
        ["'summarize.trigger'", "(mask)", "summarize, full"],
    ),
    (
        ["eval", "--scenario", CA, "--set", "summarize.trigerr=0.7"],
        ["'summarize.trigerr'", "summarize.trigger"],
    ),
    (["eval", "--scenario", CA, "--seeds", "-1"], ["--seeds", "1 or more", "-1"]),
    (["eval", "--scenario", CA, "--seeds", "0"], ["--seeds", "1 or more", "0"]),
    (["eval", "--scenario", CA, "--seed", "-2"], ["--seed", "0 or more", "-2"]),
    (
        ["eval", "--scenario", CA, "--seed", "3", "--seeds", "2"],
        ["--seeds 2", "--seed 3", "not both"],
    ),
    (["eval", "--scenario", CA, "--tuned", "--seed", "9", "--seeds", "2"], ["not both"]),
    (["eval", "--scenaro", CA], ["unknown option --scenaro", "did you mean --scenario?"]),
    (["sweep", "--scenario", CA, "--grdi", "mask.keep=3"], ["--grdi", "--grid"]),
    (["eval", "--scenario", "."], ["suite .", "holds no scenario file"]),
    (
        ["eval", "--scenario", CA, "--model", "gpt-6.2-sol"],
        ["no provider prefix", "openai:gpt-6.2-sol"],
    ),
    (["report", "--run", "--seeds", "0"], ["--seeds", "1 or more"]),
    (["run", CA, "--set", "week=9"], ["week", "1 to 2", "9"]),
    (["run", CA, "--set", "wek=2"], ["'wek'", "week"]),
    (["run", CA, "--weeks", "3", "--set", "week=4"], ["week", "1 to 3", "4"]),
    (["run", CA, "--weeks", "0"], ["--weeks", "1 or more"]),
    (["run", CA, "--weeks", "3", "--thread", "t"], ["--weeks", "own thread"]),
    (["run", CA, "--weeks", "3", "--set", "weeks=5"], ["--weeks 3", "weeks=5"]),
    (["run", "flow_test_agents:build_clumsy", "--weeks", "2"], ["--weeks", "competitive"]),
    (["run", "--resume", "last", "--weeks", "2"], ["--weeks", "--resume"]),
    (["eval", "--scenario", CA, "--set", "weeks=0"], ["weeks", "1 to 260", "0"]),
    (["eval", "--scenario", CA, "--set", "memory.policy=forget"], ["memory.policy", "append"]),
    (["run", CA, "--model", "gpt-6.2-sol"], ["openai:gpt-6.2-sol"]),
    (["serve", "--timezone", "Mars/Olympus"], ["--timezone", "'Mars/Olympus'", "Europe/Paris"]),
    (["sweep", "--scenario", CA, "--workers", "0"], ["--workers", "1 or more"]),
    # issue 20: seed lists and ranges, refused when malformed
    (["eval", "--scenario", CA, "--seeds", "1,,2"], ["--seeds", "'1,,2'", "10-14"]),
    (["sweep", "--scenario", CA, "--seeds", "14-10"], ["--seeds", "'14-10' runs backwards"]),
    (["sweep", "--scenario", CA, "--seeds", "-3"], ["--seeds", "1 or more", "-3"]),
    (
        ["eval", "--scenario", CA, "--tuned", "--train-seeds", "0-2,2"],
        ["--train-seeds", "seed(s) 2 given twice"],
    ),
    (["eval", "--scenario", CA, "--seed", "3", "--seeds", "4,5"], ["--seeds 4,5", "not both"]),
]


@pytest.mark.parametrize(("argv", "named"), MISTAKES)
def test_a_mistake_is_one_line_and_exit_2_before_any_work(
    argv: list[str], named: list[str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setattr("flows.cli.common.run_flow", no_work)
    monkeypatch.setattr("flows.cli.running.run_with_progress", no_work)
    assert main(argv) == 2
    line = one_line_error(capsys)
    assert line.startswith(f"ctxlab {argv[0]}: ")
    for text in named:
        assert text in line
    assert not list(tmp_path.glob("*.duckdb"))  # nothing recorded, nothing to resume


def test_a_run_that_fails_validation_leaves_nothing_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "runs.duckdb")
    assert main(["run", "competitive-analysis", "--strategy", "fulll", "--db", db]) == 2
    capsys.readouterr()
    assert main(["run", "--resume", "last", "--db", db]) == 1
    assert "nothing to resume" in one_line_error(capsys)


def test_a_failure_at_run_time_is_one_line_with_where_the_details_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain-file").write_text("not a folder")
    db = str(tmp_path / "plain-file" / "x.duckdb")
    assert main(["eval", "--scenario", "competitive-analysis", "--seed", "0", "--db", db]) == 1
    line = one_line_error(capsys)
    assert line.startswith(f"ctxlab eval: cannot write store {db}")
    log = Path(line.split("details: ")[1].split(";")[0])
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text()
    assert "--debug" in line


def test_debug_shows_the_traceback() -> None:
    from harness.errors import StoreError

    with pytest.raises(StoreError):
        main(["eval", "--scenario", "competitive-analysis", "--db", "/dev/null/x.duckdb",
              "--debug"])  # fmt: skip


def ctxlab(*argv: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], capture_output=True,
                          text=True, cwd=kwargs.pop("cwd", ROOT), **kwargs)  # fmt: skip


def test_the_real_command_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    out = ctxlab("run", "competitive-analysis", "--strategy", "fulll", "--db",
                 str(tmp_path / "x.duckdb"))  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "'fulll'" in out.stderr
    assert out.stdout == ""


def test_a_closed_pipe_ends_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "scenarios", "--json"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ},
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the command writes (`| head -0`)
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert err == ""


def test_version() -> None:
    out = ctxlab("--version")
    assert out.returncode == 0 and out.stdout.startswith("ctxlab 0.")


def test_the_competitive_week_and_scale_are_made_explicit(tmp_path: Path) -> None:
    from flows.agents import resolve_params
    from flows.cli.run import describe_params
    from harness.files.filesystem import FileSystem
    from harness.store import Store

    store = Store(str(tmp_path / "weeks.duckdb"), hold=False)
    first = resolve_params("competitive-analysis", {}, store)
    assert first == {"scale": "small", "week": 1}
    FileSystem(store, "t", grants=["/memories/"]).write(
        "/memories/AGENTS.md", "Reports use bullets."
    )
    second = resolve_params("competitive-analysis", {"scale": "full"}, store)
    assert describe_params(second) == "scale full, week 2"
    assert resolve_params("competitive-analysis", {"week": 1}, store)["week"] == 1


def test_the_recurring_week_follows_what_memory_notes(tmp_path: Path) -> None:
    from flows.agents import resolve_params
    from harness.files.filesystem import FileSystem
    from harness.store import Store

    store = Store(str(tmp_path / "year.duckdb"), hold=False)
    assert resolve_params("competitive-analysis", {"weeks": 3}, store)["week"] == 1
    memory = FileSystem(store, "t", grants=["/memories/"])
    memory.write("/memories/AGENTS.md", "# Agent memory\n- Week of 2026-01-19: notes\n")
    assert resolve_params("competitive-analysis", {"weeks": 3}, store)["week"] == 3
    memory.write("/memories/AGENTS.md", "- Week of 2026-01-26: notes\n")
    with pytest.raises(ValueError, match="all 3 weeks are done"):
        resolve_params("competitive-analysis", {"weeks": 3}, store)


def test_every_option_has_help() -> None:
    from flows.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.choices and a.dest == "command"]
    assert isinstance(commands.choices, dict)
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in commands.choices.items()
        for action in sub._actions
        if not action.help
    ]
    assert missing == []


def test_an_unknown_model_runs_with_a_profile_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.profiles import PROFILES_ENV, get_profile

    monkeypatch.setenv(PROFILES_ENV, "")
    seen = []

    def stop(cells: list[Any], **_kwargs: Any) -> Any:
        seen.append(get_profile(cells[0].model))
        raise RuntimeError("stop before calling the provider")

    monkeypatch.setattr("flows.cli.running.run_with_progress", stop)
    argv = ["eval", "--scenario", CA, "--strategy", "full", "--model", GPT, "--no-save"]
    assert main([*argv, "--window", "128000", "--price", "2.5,1.25,10"]) == 1
    assert "stop before calling the provider" in one_line_error(capsys)
    (profile,) = seen
    assert (profile.context_window, profile.max_output_tokens) == (128_000, 8_000)
    assert (profile.input, profile.cached_input, profile.output) == (2.5, 1.25, 10.0)
    monkeypatch.setenv(PROFILES_ENV, "")  # the model is unknown again
    assert main([*argv, "--price", "2.5,10"]) == 2
    assert "--window" in one_line_error(capsys)
    assert main([*argv, "--window", "1000", "--price", "2.5,x,1"]) == 2
    assert "IN,CACHED,OUT" in one_line_error(capsys)


def test_window_alone_caps_a_known_model_and_keeps_its_prices(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.profiles import PROFILES_ENV, get_profile

    monkeypatch.setenv(PROFILES_ENV, "")
    known = get_profile("openai:gpt-6.2-sol")
    seen = []

    def stop(cells: list[Any], **_kwargs: Any) -> Any:
        seen.append((get_profile(cells[0].model), cells[0].window))
        raise RuntimeError("stop before calling the provider")

    monkeypatch.setattr("flows.cli.running.run_with_progress", stop)
    argv = ["eval", "--scenario", CA, "--strategy", "full", "--model", "openai:gpt-6.2-sol"]
    assert main([*argv, "--no-save", "--window", "16000"]) == 1
    ((profile, window),) = seen
    assert (profile.context_window, window) == (16_000, 16_000)
    assert (profile.input, profile.cached_input, profile.output, profile.source) == (
        known.input,
        known.cached_input,
        known.output,
        known.source,
    )


class _Stop(Exception):
    """Raised by a stand-in for the runs, once the cells are seen."""


def test_a_parameter_goes_only_to_the_arms_that_take_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Any] = []

    def capture(cells: list[Any], **_kwargs: Any) -> Any:
        seen.extend(cells)
        raise _Stop

    monkeypatch.setattr("flows.cli.running.run_with_progress", capture)
    with pytest.raises(_Stop):
        main(["eval", "--scenario", CA, "--set", "summarize.trigger=0.7", "--seeds", "1",
              "--no-save", "--debug"])  # fmt: skip
    params = {c.strategy: c.params for c in seen}
    assert params["full"] == params["summarize"] == {"summarize.trigger": 0.7}
    assert params["none"] == params["mask"] == params["none-unbounded"] == {}


def test_the_first_ctrl_c_stops_a_busy_step_at_once() -> None:
    """asyncio.run would only cancel its task on the first SIGINT, which a step that never
    yields does not see."""
    import asyncio
    import signal

    from flows.cli.running import interrupt_at_once

    count = 0

    async def busy() -> None:
        nonlocal count
        signal.raise_signal(signal.SIGINT)
        for count in range(1, 20_000_000):  # noqa: B007  # a step that never yields
            pass

    with pytest.raises(KeyboardInterrupt), interrupt_at_once():
        asyncio.run(busy())
    assert count < 19_999_999
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupted_eval_stores_the_finished_runs_and_names_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import evals.run.cell
    from evals.scoring.storage import load_runs

    real = evals.run.cell.arun_cell
    calls = 0

    async def first_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise KeyboardInterrupt
        return await real(*args, **kwargs)

    monkeypatch.setattr(evals.run.cell, "arun_cell", first_then_ctrl_c)
    db = tmp_path / "store.duckdb"
    argv = ["eval", "--scenario", "support-transcript", "--strategy", "full", "--strategy",
            "mask", "--seeds", "2", "--db", str(db)]  # fmt: skip
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "stored the 1 finished run (batch batch_" in err and f"in {db}: full seed 0" in err
    assert "not stored (not run or cut short): full seed 1; mask seeds 0-1" in err
    assert load_runs(db).select("strategy", "seed").rows() == [("full", 0)]


def test_help_shows_defaults_suites_and_the_store_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def help_of(*argv: str) -> str:
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        return " ".join(capsys.readouterr().out.split())

    assert "data size (default small)" in help_of("eval")
    report = help_of("report")
    assert "(default full, unlike eval and sweep" in report and "(default 5)" in report
    assert "{ci}" in help_of("check")
    assert "$CTXLAB_DB" in help_of("sweep") and "$CTXLAB_DB" in help_of("serve")
    scenarios = help_of("scenarios")
    assert "export: the DIRECTORY" in scenarios and "import: the scenario FILE" in scenarios


def test_the_suites_named_in_help_are_the_gate_s() -> None:
    from evals.gate.check import SUITES
    from flows.cli.options import SUITE_NAMES

    assert tuple(SUITES) == SUITE_NAMES


@pytest.mark.parametrize("query", ["", ";", "-- only a comment"])
def test_sql_without_a_statement_is_a_usage_error(
    query: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.store import Store

    db = tmp_path / "s.duckdb"
    Store(str(db), hold=False)
    assert main(["sql", "--db", str(db), query]) == 2
    assert "no SQL statement in" in one_line_error(capsys)
