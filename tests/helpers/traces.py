"""Shared by the trace-import tests: a fixture read as its one trace, a long hand-made trace,
and a replay that counts the calls the recording had no reply for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evals.scenarios.replies import RecordedReplies
from evals.sources.formats import detect_format, read_traces
from evals.sources.trace import Trace

ACCOUNTS = 10
FIXTURES = Path(__file__).parents[1] / "evals" / "sources" / "fixtures"


def read_one(path: Path | str, format: str) -> Trace:
    """The one trace in `path` (a file, or the name of one of the trace fixtures), which must
    be detected as `format`."""
    path = FIXTURES / path if isinstance(path, str) else path
    assert detect_format(path) == format
    (trace,) = read_traces(path)
    return trace


def roles(trace: Trace) -> list[str]:
    return [m.role for m in trace.messages]


def claude_event(session: str, uuid: str, parent: str | None, role: str, content: object,
                 **extra: object) -> str:  # fmt: skip
    """One line of a Claude Code session file."""
    return json.dumps({"uuid": uuid, "parentUuid": parent, "sessionId": session, "type": role,
                       "message": {"role": role, "content": content}, **extra})  # fmt: skip


def claude_task_session(
    folder: Path, session: str, question: str, call_id: str, prompt: str, result: object
) -> Path:
    """A Claude Code session file in `folder` whose one Task call (`call_id`) hands `prompt` to
    an explore subagent and gets `result`; the subagents' folder beside it, to fill."""
    task = {"type": "tool_use", "id": call_id, "name": "Task",
            "input": {"prompt": prompt, "subagent_type": "explore"}}  # fmt: skip
    answer = {"type": "tool_result", "tool_use_id": call_id, "content": result}
    (folder / f"{session}.jsonl").write_text("\n".join([
        claude_event(session, "1", None, "user", question),
        claude_event(session, "2", "1", "assistant", [task]),
        claude_event(session, "3", "2", "user", [answer]),
    ]) + "\n")  # fmt: skip
    subagents = folder / session / "subagents"
    subagents.mkdir(parents=True)
    return subagents


def claude_sidechain(path: Path, session: str, *turns: tuple[str, str | None, str, str]) -> None:
    """A subagent's run, each turn (uuid, parent uuid, role, text) on the side chain."""
    path.write_text("".join(claude_event(session, *turn, isSidechain=True) + "\n"
                            for turn in turns))  # fmt: skip


def ledger_messages(accounts: int = ACCOUNTS) -> list[dict[str, Any]]:
    """An OpenAI Chat trace: the agent lists `accounts` accounts (each result long), then settles
    each by the id the listing showed, then states the last balance. A window too small for
    the listings loses the ids before they are used."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You reconcile ledgers."},
        {"role": "user", "content": f"Settle the {accounts} open accounts of the ledger."},
    ]
    for i in range(accounts):
        filler = "\n".join(
            f"history line {k} of account {i}: entry reviewed, status {'open' if k % 2 else 'ok'}"
            for k in range(40)
        )
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"list{i}", "type": "function",
                "function": {"name": "list_account", "arguments": json.dumps({"index": i})}}]},
            {"role": "tool", "tool_call_id": f"list{i}",
             "content": f"account {i}: id ACC-{1000 + 37 * i}, balance {113 * i + 50}.25 EUR\n"
                        + filler},
        ]  # fmt: skip
    for i in range(accounts):
        messages += [
            {"role": "assistant", "content": f"Settling account {i}.", "tool_calls": [{
                "id": f"settle{i}", "type": "function",
                "function": {"name": "settle_account",
                             "arguments": json.dumps({"account_id": f"ACC-{1000 + 37 * i}"})}}]},
            {"role": "tool", "tool_call_id": f"settle{i}", "content": f"settled #{i}"},
        ]  # fmt: skip
    last = 113 * (accounts - 1) + 50
    messages.append({"role": "assistant", "content": f"All settled; the last balance was "
                     f"{last}.25 EUR."})  # fmt: skip
    return messages


def write_ledger(path: Path, accounts: int = ACCOUNTS) -> Path:
    path.write_text(json.dumps({"messages": ledger_messages(accounts)}), encoding="utf-8")
    return path


@contextmanager
def counting_misses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """The calls of a replay that found no recorded reply (tool, arguments)."""
    misses: list[tuple[str, Any]] = []
    original = RecordedReplies.reply

    def reply(self: RecordedReplies, store: Any, arguments: dict[str, Any]) -> str:
        out = original(self, store, arguments)
        if out.startswith("Error: the recording has no reply"):
            misses.append((self.name, arguments))
        return out

    monkeypatch.setattr(RecordedReplies, "reply", reply)
    yield misses
