"""Strict formats (issue 33 item 8): a file whose best-matching format reads no tool step from
it, or drops most of its records, is refused in one line naming the layout it resembles,
instead of being imported as traces that replay nothing. `--format` forces a format and skips
this check.

Detection (formats/__init__.py) goes by a key or two in a file's head, and some layouts share
them: a SWE-agent `.traj` holds `"role"` keys in its `history`, so it reads as OpenAI chat with
every command and its output as plain user and assistant text, and no step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from evals.errors import TraceFormatError
from evals.sources.formats.records import is_damaged
from evals.sources.trace import Trace

# Layouts a file may resemble, by keys of its head: (what it is, the format that reads it if
# ctxlab has one, its signs, all required).
_LAYOUTS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("a SWE-agent trajectory", "swe-agent", ('"trajectory"', '"history"', '"message_type"')),
    ("an OpenHands event stream", "openhands",
     ('"source"', '"observation"', '"action"', '"timestamp"')),
    ("a LangSmith or LangChain run", "langsmith", ('"run_type"', '"inputs"', '"outputs"')),
    ("an Inspect AI eval log", "inspect-ai", ('"eval"', '"samples"', '"messages"')),
    ("an Aider chat history", None, ("# aider chat started",)),
)  # fmt: skip
# How many step-less traces are held back while waiting for one with a step: a file of many
# chat-only conversations is still refused or passed after this many, without holding it all.
HOLD = 200


def _layout(head: str) -> tuple[str, str | None] | None:
    """The layout `head` has the signs of: what it is, and the format that reads it."""
    for what, reader, signs in _LAYOUTS:
        if all(re.search(re.escape(sign) + (r"\s*:" if sign.startswith('"') else ""), head)
               for sign in signs):  # fmt: skip
            return what, reader
    return None


def resemblance(head: str) -> str | None:
    """What `head` (a file's first kilobytes) looks like, in words, and how to read it, if its
    layout is known."""
    layout = _layout(head)
    if layout is None:
        return None
    what, reader = layout
    return (
        f"{what} (--format {reader} reads it)" if reader else f"{what}, which ctxlab does not read"
    )


def _dropped(trace: Trace) -> int:
    """The records `trace` dropped, but its file's damaged lines: the reader weighs those
    against the file's lines (records.py `refuse_damaged`), and they say nothing of the layout."""
    return sum(not is_damaged(s) for s in trace.skipped)


def _sound(trace: Trace) -> bool:
    """A trace a replay can use: at least one tool step, and fewer records dropped than kept."""
    steps = sum(bool(m.tool_calls) for m in trace.messages)
    return steps > 0 and _dropped(trace) <= len(trace.messages)


def strict_steps(
    traces: Iterable[Trace], path: Path, name: str, head: str, key: str = ""
) -> Iterator[Trace]:
    """`traces` as read by format `name`, unless none of them is sound (`_sound`): then
    `TraceFormatError` in one line naming what the file resembles. `key` is the one key
    `name` was guessed from, when a lone key was all (formats/__init__.py). Traces are passed
    on as soon as one is sound; until then at most `HOLD` are held back."""
    held: list[Trace] = []
    seen = dropped = 0
    passed = False
    for trace in traces:
        if passed:
            yield trace
            continue
        seen += 1
        dropped += _dropped(trace)
        held.append(trace)
        if _sound(trace) or len(held) >= HOLD:
            passed = True
            yield from held
            held.clear()
    if passed or not seen:
        return
    raise TraceFormatError(f"{path}: {_refusal(name, head, seen, dropped, held, key)}")


def _refusal(
    name: str, head: str, seen: int, dropped: int, traces: list[Trace], key: str = ""
) -> str:
    """Why a file is refused. Read fine (fewer records dropped than kept, no other layout's
    signs): it is conversations without a tool call, said so. Otherwise the guess of `name`
    is weak: the layout the file may be, and how to force `name`; guessed from a lone `key`
    that any JSON may hold (a log of tool events timing each as `"execution_time"`), the file
    is no trace ctxlab knows, and the key is named as all it shared with `name`."""
    layout = _layout(head)
    kept = sum(len(t.messages) for t in traces)
    records = f"{dropped} record{'s' * (dropped != 1)}"
    steps = sum(bool(m.tool_calls) for t in traces for m in t.messages)
    if (layout is None or layout[1] == name) and dropped <= kept and not steps:
        what = "a conversation" if seen == 1 else f"{seen} conversations"
        lost = f" ({records} dropped)" if dropped else ""
        return (
            f"read as {name}: {what} with no tool call{lost}, nothing a context strategy could move"
        )
    why = f"read as {name}, " + ("its trace holds" if seen == 1 else f"its {seen} traces hold")
    if steps:  # refused for what it dropped, not for a lack of steps
        why += f" {steps} tool step{'s' * (steps != 1)}, but {records} were dropped against " \
            f"{kept} messages kept"  # fmt: skip
    else:
        why += " no tool step"
        if dropped:
            why += f" and {records} {'was' if dropped == 1 else 'were'} dropped"
    if layout is None and key:
        return (
            f"not a trace of any known format: it resembles {name} only by its `{key}` key, "
            f"and {why} (--format {name} imports it anyway)"
        )
    if layout is None:
        return f"{why}; it may be another harness's layout (--format {name} imports it anyway)"
    return f"{why}; it looks like {resemblance(head)}; --format {name} imports it anyway"
