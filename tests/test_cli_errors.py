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

from flows.cli import main

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def no_work(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("the command started work before checking its options")


CA, GPT = "competitive-analysis", "openai:gpt-4o"
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
]


@pytest.mark.parametrize(("argv", "named"), MISTAKES)
def test_a_mistake_is_one_line_and_exit_2_before_any_work(
    argv: list[str], named: list[str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setattr("flows.cli._run_flow", no_work)
    monkeypatch.setattr("evals.cli._run_with_progress", no_work)
    assert main(argv) == 2
    line = one_line(capsys)
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
    assert "nothing to resume" in one_line(capsys)


def test_a_failure_at_run_time_is_one_line_with_where_the_details_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain-file").write_text("not a folder")
    db = str(tmp_path / "plain-file" / "x.duckdb")
    assert main(["eval", "--scenario", "competitive-analysis", "--seed", "0", "--db", db]) == 1
    line = one_line(capsys)
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
    from flows.cli import describe_params, resolve_params
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

    monkeypatch.setattr("evals.cli._run_with_progress", stop)
    argv = ["eval", "--scenario", CA, "--strategy", "full", "--model", GPT, "--no-save"]
    assert main([*argv, "--window", "128000", "--price", "2.5,1.25,10"]) == 1
    assert "stop before calling the provider" in one_line(capsys)
    (profile,) = seen
    assert (profile.context_window, profile.max_output_tokens) == (128_000, 8_000)
    assert (profile.input, profile.cached_input, profile.output) == (2.5, 1.25, 10.0)
    monkeypatch.setenv(PROFILES_ENV, "")  # the model is unknown again
    assert main([*argv, "--price", "2.5,10"]) == 2
    assert "--window" in one_line(capsys)
    assert main([*argv, "--window", "1000", "--price", "2.5,x,1"]) == 2
    assert "IN,CACHED,OUT" in one_line(capsys)


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

    monkeypatch.setattr("evals.cli._run_with_progress", stop)
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
