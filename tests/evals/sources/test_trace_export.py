"""`ctxlab export`: a stored run in another format reads back as the same conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.sources.export import EXPORT_FORMATS, export_trace, run_trace
from evals.sources.formats import read_traces
from evals.sources.trace import Trace, TraceMessage, TraceToolCall, TraceUsage
from flows.cli import main
from harness import Store, create_agent
from harness.messages import ModelResponse
from harness.messages import ToolCall as HarnessCall
from harness.models.scripted import ScriptedModel
from harness.tools import tool


@tool
def lookup(account: str) -> str:
    """Look an account up.

    Args:
        account: the account name.
    """
    return f"{account}: balance 1234.5 EUR, owner kari@example.org"


def _conversation(trace: Trace) -> list[tuple[object, ...]]:
    return [
        (m.role, m.text, [(c.id, c.name, c.arguments) for c in m.tool_calls], m.tool_call_id,
         m.is_error)
        for m in trace.messages
    ]  # fmt: skip


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("export") / "run.duckdb"
    store = Store(str(db))
    model = ScriptedModel([
        ModelResponse(text="Looking it up.",
                      tool_calls=(HarnessCall("c1", "lookup", {"account": "Acme"}),
                                  HarnessCall("c2", "lookup", {"account": "Birch"}))),
        "Acme has 1234.5 EUR.",
    ])  # fmt: skip
    agent = create_agent(model, [lookup], store=store, system_prompt="You help.")
    result = agent.run_sync("What is Acme's balance?", thread_id="t-export")
    store.close()
    return db, result.run_id


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_an_exported_run_reads_back_as_the_same_messages_calls_and_results(
    stored_run: tuple[Path, str], format: str, tmp_path: Path
) -> None:
    db, run_id = stored_run
    original = run_trace(str(db), run_id)
    assert [m.role for m in original.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    out = tmp_path / f"run.{format}.json"
    out.write_text(export_trace(original, format, redact=False))
    (back,) = read_traces(out)  # detected, not told
    assert back.format == format
    assert _conversation(back) == _conversation(original)
    assert back.system == original.system == "You help."
    assert not back.skipped


def _denied_and_undecodable(*ending: TraceMessage, usage: TraceUsage | None = None) -> Trace:
    """Two calls in one turn, one denied and one with arguments that are no JSON; `ending`
    after their results."""
    trace = Trace("t", "ctxlab", "x", system="S", model="m")
    calls = [TraceToolCall("a", "run", {"cmd": "ls"}), TraceToolCall("b", "run", {}, "{oops")]
    trace.messages = [
        TraceMessage("user", "go"),
        TraceMessage("assistant", "", calls, usage=usage),
        TraceMessage("tool", "denied", tool_call_id="a", is_error=True),
        TraceMessage("tool", "ok", tool_call_id="b"),
        *ending,
    ]
    return trace


def test_round_trip_keeps_errors_raw_arguments_and_tools() -> None:
    trace = _denied_and_undecodable(
        TraceMessage("user", "and now?"), TraceMessage("assistant", "done")
    )
    for format in ("openai-chat", "anthropic"):
        path = Path(f"/tmp/ctxlab-roundtrip-{format}.json")
        path.write_text(export_trace(trace, format))
        (back,) = read_traces(path, format)
        expected = _conversation(trace)
        if format == "openai-chat":  # Chat has no error flag on a tool message
            expected[2] = (*expected[2][:4], False)
        assert _conversation(back) == expected
        path.unlink()


def test_langchain_export_keeps_errors_raw_arguments_and_usage(tmp_path: Path) -> None:
    trace = _denied_and_undecodable(
        TraceMessage("assistant", "done"), usage=TraceUsage(input_tokens=120, output_tokens=9)
    )
    path = tmp_path / "run.json"
    path.write_text(export_trace(trace, "langchain"))
    (back,) = read_traces(path)
    assert back.format == "langchain"
    assert _conversation(back) == _conversation(trace)  # the error flag kept
    assert back.messages[1].tool_calls[1].raw_arguments == "{oops"
    usage = back.messages[1].usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (120, 9)


def test_export_cli_writes_a_file_and_never_overwrites_without_force(
    stored_run: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = stored_run
    out = tmp_path / "run.json"
    argv = ["export", run_id, "--format", "anthropic", "--db", str(db), "--out", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["system"] == "You help."
    out.write_text("mine")
    assert main(argv) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    assert out.read_text() == "mine"
    assert main([*argv, "--force"]) == 0 and out.read_text() != "mine"


def test_export_of_an_unknown_run_is_one_line_and_exit_2(
    stored_run: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = stored_run
    assert main(["export", "nope", "--format", "otel-genai", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "no run, session or thread 'nope'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_an_export_is_redacted_unless_asked_not_to(
    stored_run: tuple[Path, str], format: str, tmp_path: Path
) -> None:
    db, run_id = stored_run
    shared, kept = tmp_path / "shared.json", tmp_path / "kept.json"
    base = ["export", run_id, "--format", format, "--db", str(db)]
    assert main([*base, "--out", str(shared)]) == 0
    assert main([*base, "--out", str(kept), "--no-redact"]) == 0
    assert "kari@example.org" not in shared.read_text() and "[REDACTED]" in shared.read_text()
    assert "kari@example.org" in kept.read_text()


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_an_export_masks_the_user_of_a_home_path_and_keeps_the_file(format: str) -> None:
    trace = Trace("home", "claude-code", "h.jsonl")
    trace.messages = [
        TraceMessage("user", "Open it."),
        TraceMessage("assistant", "", tool_calls=[
            TraceToolCall("a", "Read", {"file_path": "/Users/mkowalczyk/app/cart.py"})]),
        TraceMessage("tool", "1\tTOTAL = 3  # owner mkowalczyk", tool_call_id="a"),
    ]  # fmt: skip
    text = export_trace(trace, format)
    assert "mkowalczyk" not in text and "/Users/<user>/app/cart.py" in text
