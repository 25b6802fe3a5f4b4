"""JSONL traces some of whose lines do not parse (a publisher's redaction pasted into the JSON,
a line cut short): the damaged lines are skipped and counted, the rest imports, and a file is
refused only when most of its lines are damaged, saying so. Hand-made fixtures only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.traces import claude_event, ledger_messages

from evals.errors import TraceFormatError
from evals.sources.formats import read_traces
from evals.sources.trace import Trace
from evals.sources.trace_import import import_path


def _damaged(line: str) -> str:
    """`line` as a redaction breaks it: a placeholder pasted in, the rest of the line gone."""
    return line[: line.index('"message"') + 40] + "To: [REDACTED_RECIPIENT]"


def _call(call_id: str, command: str) -> list[dict[str, object]]:
    return [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]


def _result(call_id: str, text: str) -> list[dict[str, object]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text}]


def _session(path: Path, progress: int = 0) -> Path:
    """A two-turn session whose lines 3, 6 and 11 are damaged: the result of the first call,
    the answer a turn-duration event hangs under, and a call whose result survives;
    `progress` damaged progress events after them."""
    s = "sess-1"
    lines = [
        claude_event(s, "u1", None, "user", "Find the release tag of quarry."),
        claude_event(s, "a1", "u1", "assistant", _call("t1", "git tag")),
        _damaged(claude_event(s, "r1", "a1", "user", _result("t1", "v4.2.17\nv4.2.16"))),
        claude_event(s, "a2", "r1", "assistant", _call("t2", "cat quarry/version.py")),
        claude_event(s, "r2", "a2", "user", _result("t2", "RELEASE = 'v4.2.17'")),
        _damaged(claude_event(s, "a3", "r2", "assistant", "The tag is v4.2.17.")),
        json.dumps(
            {
                "type": "system",
                "subtype": "turn_duration",
                "uuid": "d1",
                "parentUuid": "a3",
                "sessionId": s,
            }
        ),  # fmt: skip
        claude_event(s, "u2", "d1", "user", "Now count the open issues."),
        claude_event(s, "a4", "u2", "assistant", _call("t3", "gh issue list --state open")),
        claude_event(s, "r3", "a4", "user", _result("t3", "17 open issues")),
        _damaged(claude_event(s, "a5", "r3", "assistant", _call("t4", "gh issue list -L 1"))),
        claude_event(s, "r4", "a5", "user", _result("t4", "#912 flaky upload")),
        claude_event(s, "a6", "r4", "assistant", "There are 17 open issues."),
    ]
    lines += [
        _damaged(
            json.dumps(
                {
                    "type": "progress",
                    "uuid": f"p{n}",
                    "parentUuid": "a6",
                    "sessionId": s,
                    "message": {"data": "x" * 60},
                }
            )
        )  # fmt: skip
        for n in range(progress)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _reasons(trace: Trace) -> list[tuple[int | None, str]]:
    return [(s.where.line, s.reason) for s in trace.skipped]


def test_a_claude_code_session_keeps_the_conversation_around_its_damaged_lines(
    tmp_path: Path,
) -> None:
    (trace,) = read_traces(_session(tmp_path / "s.jsonl"))
    # The answer lost on line 6 does not cut the conversation there: the turn after it hangs
    # under a turn-duration event whose parent was on that line, and is linked to the line
    # before it, like any event whose parent the file lacks.
    assert [(m.role, m.text) for m in trace.messages] == [
        ("user", "Find the release tag of quarry."),
        ("assistant", ""),
        ("tool", "RELEASE = 'v4.2.17'"),
        ("user", "Now count the open issues."),
        ("assistant", ""),
        ("tool", "17 open issues"),
        ("assistant", "There are 17 open issues."),
    ]
    reasons = _reasons(trace)
    damaged = [(line, r) for line, r in reasons if r.startswith("damaged line")]
    assert [line for line, _ in damaged] == [3, 6, 11]
    assert re.fullmatch(r"damaged line, (cut off|not JSON): .+ at column \d+", damaged[0][1])
    # A damaged call's surviving result, and a call whose result was damaged, are dropped as
    # any unpaired call or result is, each said so.
    assert (2, "call 't1' (Bash) has no result") in reasons
    assert (12, "a tool result for no call ('t4')") in reasons
    assert not any("not in the file" in r or "branch" in r for _, r in reasons)


def test_damaged_lines_are_no_sign_of_another_layout(tmp_path: Path) -> None:
    # More lines skipped than messages kept, but most of the file's lines are sound.
    path = _session(tmp_path / "s.jsonl", progress=4)
    (trace,) = read_traces(path, "auto", strict=True)
    assert len(trace.messages) == 7
    assert sum(r.startswith("damaged line") for _, r in _reasons(trace)) == 7


def test_a_session_mostly_damaged_is_refused_naming_the_first_damaged_line(
    tmp_path: Path,
) -> None:
    path = _session(tmp_path / "s.jsonl", progress=12)  # 15 of 25 lines damaged
    for strict in (False, True):
        with pytest.raises(TraceFormatError) as refused:
            list(read_traces(path, "auto", strict=strict))
        said = str(refused.value)
        assert said.startswith(f"{path}: 15 of 25 lines are damaged (not JSON)")
        assert "; the first at line 3, " in said and "another harness" not in said
        assert "\n" not in said


def _read_config(call_id: str) -> dict[str, object]:
    """An assistant turn that calls `read_config` once."""
    call = {"id": call_id, "type": "function",
            "function": {"name": "read_config", "arguments": "{}"}}  # fmt: skip
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _chat_lines(path: Path, damaged: set[int]) -> Path:
    messages: list[dict[str, object]] = [
        {"role": "user", "content": "Which port does the cache listen on?"},
        _read_config("c1"),
        {"role": "tool", "tool_call_id": "c1", "content": "cache.port = 6390"},
        {"role": "assistant", "content": "It listens on 6390."},
        {"role": "user", "content": "And the timeout?"},
        _read_config("c2"),
        {"role": "tool", "tool_call_id": "c2", "content": "cache.timeout = 2s"},
        {"role": "assistant", "content": "Two seconds."},
    ]
    lines = [json.dumps(m) for m in messages]
    lines = [line[: len(line) // 2] + " [REDACTED_PHONE]" if n in damaged else line
             for n, line in enumerate(lines, 1)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_jsonl_conversation_one_message_a_line_skips_its_damaged_lines(tmp_path: Path) -> None:
    (trace,) = read_traces(_chat_lines(tmp_path / "chat.jsonl", {3}), "auto", strict=True)
    assert [m.text for m in trace.messages] == [
        "Which port does the cache listen on?", "It listens on 6390.", "And the timeout?", "",
        "cache.timeout = 2s", "Two seconds.",
    ]  # fmt: skip
    reasons = _reasons(trace)
    assert reasons[0][0] == 3 and reasons[0][1].startswith("damaged line")
    assert (2, "call 'c1' (read_config) has no result") in reasons
    mostly = _chat_lines(tmp_path / "mostly.jsonl", {2, 3, 4, 5, 6})
    said = r"5 of 8 lines are damaged \(not JSON\).*; the first at line 2, "
    with pytest.raises(TraceFormatError, match=said):
        list(read_traces(mostly, "openai-chat"))


def test_the_import_summary_counts_damaged_lines_per_file(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "ledger.jsonl"  # one message a line; three settlement results damaged
    lines = [json.dumps(m) for m in ledger_messages()]
    for n in (24, 26, 28):
        lines[n - 1] = lines[n - 1][:40] + " [REDACTED_PHONE]"
    path.write_text("\n".join(lines) + "\n")
    summary = import_path(folder, tmp_path / "out", min_probes=1)
    assert summary.traces == 1
    said = summary.lines()
    assert "(3 damaged lines)" in said[0]
    (line,) = [s for s in said if "damaged" in s and s.startswith("skipped")]
    assert line.startswith(f"skipped {path}: 3 damaged lines skipped (the first at line 24, ")
    rows = json.loads((tmp_path / "out" / "suite.json").read_text())["skipped"]
    assert [r["line"] for r in rows if r["reason"].startswith("damaged line")] == [24, 26, 28]
