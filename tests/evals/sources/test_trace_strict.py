"""Strict formats (evals/sources/formats/resemble.py): an import whose guessed format reads no
tool step from a file is refused in one line naming what the file looks like; `--format`
forces a format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.errors import TraceFormatError
from evals.sources.formats.resemble import resemblance, strict_steps
from evals.sources.trace import Skipped, Trace, TraceMessage, TraceToolCall, Where
from evals.sources.trace_import import import_path

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("head", "said"),
    [
        ('{"trajectory": [], "history": [{"message_type": "action"}]}',
         "a SWE-agent trajectory (--format swe-agent reads it)"),
        ('{"run_type": "llm", "inputs": {}, "outputs": {}}',
         "a LangSmith or LangChain run (--format langsmith reads it)"),
        ("# aider chat started at 2026-01-05", "an Aider chat history, which ctxlab does not read"),
        ('{"messages": []}', None),
    ],
)  # fmt: skip
def test_a_refusal_names_the_layout_and_the_format_that_reads_it(
    head: str, said: str | None
) -> None:
    # a layout ctxlab reads was once called unreadable (SWE-agent, after it got its reader)
    assert resemblance(head) == said


def test_a_file_of_conversations_without_steps_is_refused_and_a_folder_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    chat = {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    }
    (folder / "chat.jsonl").write_text(json.dumps(chat) + "\n" + json.dumps(chat) + "\n")
    (folder / "tau.json").write_bytes((FIXTURES / "chat_tau.json").read_bytes())
    summary = import_path(folder, tmp_path / "out", min_probes=1)
    assert summary.traces == 1  # chat_tau's first trace; its chat-only second one has no probes
    (refused,) = [s for s in summary.skipped if s.where.file.endswith("chat.jsonl")]
    # read fine, the guess is sound: say what it is, not that it may be another layout
    assert refused.reason == (
        "read as openai-chat: 2 conversations with no tool call, nothing a context strategy "
        "could move"
    )


def _chat(dropped: int) -> Trace:
    trace = Trace(
        "t", "x", "t.json", [TraceMessage("user", "Hi"), TraceMessage("assistant", "Hello")]
    )
    trace.skipped = [Skipped(Where("t.json", n), "not JSON") for n in range(dropped)]
    return trace


@pytest.mark.parametrize(
    ("name", "head", "dropped", "said"),
    [
        # the layout it resembles is the format's own: one sound reading, no hint
        ("inspect-ai", '{"eval": {}, "samples": [{"messages": []}]}', 0,
         "read as inspect-ai: a conversation with no tool call, nothing a context strategy "
         "could move"),
        ("openai-chat", '{"messages": []}', 1,
         "read as openai-chat: a conversation with no tool call (1 record dropped), nothing a "
         "context strategy could move"),
        # most records dropped, or another layout's signs: the guess is weak, the hint stays
        ("openai-chat", '{"messages": []}', 3,
         "read as openai-chat, its trace holds no tool step and 3 records were dropped; it may "
         "be another harness's layout (--format openai-chat imports it anyway)"),
        ("openai-chat", '{"trajectory": [], "history": [{"message_type": "action"}]}', 0,
         "read as openai-chat, its trace holds no tool step; it looks like a SWE-agent "
         "trajectory (--format swe-agent reads it); --format openai-chat imports it anyway"),
    ],
)  # fmt: skip
def test_a_refusal_says_what_was_read_and_hints_a_layout_only_when_the_guess_is_weak(
    name: str, head: str, dropped: int, said: str
) -> None:
    with pytest.raises(TraceFormatError) as refused:
        list(strict_steps([_chat(dropped)], Path("t.json"), name, head))
    assert str(refused.value) == f"t.json: {said}"


def test_a_refusal_of_a_trace_with_steps_says_it_has_them() -> None:
    # Refused for what it dropped, not for a lack of steps: the message must not say "no step".
    trace = _chat(5)
    trace.messages[1].tool_calls.append(TraceToolCall("c1", "lookup"))
    trace.messages.append(TraceMessage("tool", "found", tool_call_id="c1"))
    with pytest.raises(TraceFormatError) as refused:
        list(strict_steps([trace], Path("t.json"), "openai-chat", '{"messages": []}'))
    assert str(refused.value) == (
        "t.json: read as openai-chat, its trace holds 1 tool step, but 5 records were dropped "
        "against 3 messages kept; it may be another harness's layout (--format openai-chat "
        "imports it anyway)"
    )
