"""`runs`, `messages`, `model_calls`, `events` and `summaries` of a lazy store answered from its
rows (`harness.store.lazy_rows`) while it is live: the reads a replay makes during its runs and
at its end. SQL (which materializes the store) answers the rest, and any read whose SQL leaves
an order open (rows tied on its ORDER BY).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

from harness.messages import Usage
from harness.store.events import Events
from harness.store.lazy_rows import locked
from harness.store.messages import Messages
from harness.store.rows import RunStart, config_json, storable_text
from harness.store.runs import Runs
from harness.store.schema import COLUMN_NAMES, now
from harness.store.summaries import Summaries
from harness.store.usage import ModelCalls

if TYPE_CHECKING:
    from harness.store.lazy_rows import LazyRows
    from harness.store.sql import Sql

_M = {name: i for i, name in enumerate(COLUMN_NAMES["messages"])}
_C = {name: i for i, name in enumerate(COLUMN_NAMES["model_calls"])}
_EVENT = COLUMN_NAMES["events"]
_SUMMARY = COLUMN_NAMES["summaries"]
_TOKENS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")


class LazyRuns(Runs):
    """`Runs` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def start(self, **run: Unpack[RunStart]) -> None:
        if not self._rows.live:
            return super().start(**run)
        config = config_json(run.get("config"))
        self._rows.start_run([
            run["run_id"], run["thread_id"], run.get("parent_run_id"), run.get("parent_step"),
            run["agent"], run["model"], run["strategy"], "running", now(), None, 0, 0, 0, 0, 0,
            0.0, None, config,
        ])  # fmt: skip
        return None

    @locked
    def mark_ended(
        self, run_id: str, *, status: str, steps: int, usage: Usage, error: str | None
    ) -> None:
        if not self._rows.live:
            return super().mark_ended(run_id, status=status, steps=steps, usage=usage, error=error)
        row = self._rows.runs.get(run_id)
        if row is not None:
            row[7] = status
            row[9:17] = [
                now(), steps, usage.input_tokens, usage.output_tokens, usage.cached_tokens,
                usage.cache_write_tokens, usage.cost_usd,
                storable_text(error)[0] if error is not None else None,
            ]  # fmt: skip
        return None

    @locked
    def thread_in_use(self, thread_id: str) -> bool:
        if not self._rows.live:
            return super().thread_in_use(thread_id)
        return any(r[1] == thread_id for r in self._rows.runs.values())

    @locked
    def subagent_overflows(self) -> int:
        if not self._rows.live:
            return super().subagent_overflows()
        return sum(
            r[2] is not None and r[16] is not None and r[16].startswith("ContextOverflowError")
            for r in self._rows.runs.values()
        )


class LazyMessages(Messages):
    """`Messages` over a lazy store's rows while they are live (windows and the next
    position: `own_writes`)."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def committed_steps(self, run_id: str) -> tuple[int, int]:
        if not self._rows.live:
            return super().committed_steps(run_id)
        steps = [
            r[_M["step"]] for r in self._rows.appended["messages"] if r[_M["run_id"]] == run_id
        ]
        return int(max(steps, default=0)), len(steps)

    @locked
    def all_tool_calls(self) -> list[dict[str, Any]]:
        if not self._rows.live:
            return super().all_tool_calls()
        calls = (r[_M["tool_calls"]] for r in self._rows.appended["messages"])
        return [c for text in calls if text is not None for c in json.loads(text or "[]")]

    @locked
    def seq_range(
        self, thread_id: str, message_ids: Sequence[str]
    ) -> tuple[int | None, int | None]:
        if not self._rows.live:
            return super().seq_range(thread_id, message_ids)
        wanted = set(message_ids)
        seqs = [
            r[_M["seq"]]
            for r in self._rows.appended["messages"]
            if r[_M["thread_id"]] == thread_id and r[_M["message_id"]] in wanted
        ]
        return (min(seqs), max(seqs)) if seqs else (None, None)


class LazyModelCalls(ModelCalls):
    """`ModelCalls` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def by_role(self) -> dict[str, dict[str, int | float]]:
        if not self._rows.live:
            return super().by_role()
        grouped: dict[str, list[tuple[Any, ...]]] = {}
        for call in self._rows.appended["model_calls"]:
            run = self._rows.runs.get(call[_C["run_id"]])
            if run is None:
                continue  # the SQL joins runs
            model = call[_C["model"]]
            summarizer = model is not None and model.endswith(("#summarize", "#consolidate"))
            role = "summarizer" if summarizer else "subagent" if run[2] is not None else "main"
            grouped.setdefault(role, []).append(call)
        usage: dict[str, dict[str, int | float]] = {}
        for role in sorted(grouped):
            calls = grouped[role]
            row: dict[str, Any] = {"calls": len(calls)}
            for name in _TOKENS:
                row[name] = _sum(c[_C[name]] for c in calls)
            peaks = [
                int(c[_C["context_tokens"]]) for c in calls if c[_C["context_tokens"]] is not None
            ]
            row["peak_context_tokens"] = max(peaks) if peaks else None
            row["cost_usd"] = math.fsum(c[_C["cost_usd"]] or 0.0 for c in calls)
            usage[role] = row
        return usage

    @locked
    def of_thread(self, thread_id: str) -> dict[str, int | float]:
        if not self._rows.live:
            return super().of_thread(thread_id)
        tree = {r[0] for r in self._rows.runs.values() if r[1] == thread_id}
        grown = True
        while grown:
            below = {r[0] for r in self._rows.runs.values() if r[2] in tree} - tree
            tree |= below
            grown = bool(below)
        calls = [c for c in self._rows.appended["model_calls"] if c[_C["run_id"]] in tree]
        return {
            "calls": len(calls),
            "input_tokens": sum(int(c[_C["input_tokens"]] or 0) for c in calls),
            "output_tokens": sum(int(c[_C["output_tokens"]] or 0) for c in calls),
            "cost_usd": math.fsum(float(c[_C["cost_usd"]] or 0.0) for c in calls),
        }


def _sum(values: Any) -> int | None:
    """SQL's sum: NULLs left out, NULL when nothing is left."""
    kept = [int(v) for v in values if v is not None]
    return sum(kept) if kept else None


class LazyEvents(Events):
    """`Events` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def rows(
        self,
        run_id: str | None = None,
        *,
        middleware: str | None = None,
        action: str | None = None,
    ) -> list[dict[str, Any]]:
        wanted = {0: run_id, 2: middleware, 4: action}
        found = [
            r for r in (self._rows.appended["events"] if self._rows.live else ())
            if all(v is None or r[i] == v for i, v in wanted.items())
        ]  # fmt: skip
        if not self._rows.live or len({r[10] for r in found}) < len(found):
            return super().rows(run_id, middleware=middleware, action=action)  # ties: SQL's
        return [dict(zip(_EVENT, r, strict=True)) for r in sorted(found, key=lambda r: r[10])]

    @locked
    def count(self, action_like: str) -> int:
        if not self._rows.live or "\\" in action_like:
            return super().count(action_like)
        pattern = re.compile(
            "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in action_like),
            re.DOTALL,
        )
        return sum(bool(pattern.fullmatch(r[4])) for r in self._rows.appended["events"])


class LazySummaries(Summaries):
    """`Summaries` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def all(self) -> list[dict[str, Any]]:
        found = self._rows.appended["summaries"] if self._rows.live else []
        if not self._rows.live or len({(r[13], r[2]) for r in found}) < len(found):
            return super().all()
        ordered = sorted(found, key=lambda r: (r[13], r[2]))
        return [dict(zip(_SUMMARY, r, strict=True)) for r in ordered]

    @locked
    def last_cycle(self, thread_id: str) -> int:
        if not self._rows.live:
            return super().last_cycle(thread_id)
        return int(max((r[2] for r in self._rows.appended["summaries"] if r[1] == thread_id),
                       default=0))  # fmt: skip
