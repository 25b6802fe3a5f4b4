"""Run state: what one agent run carries from step to step, and how it reaches the store."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from harness.config import RunConfig
from harness.errors import ModelError
from harness.files.filesystem import FileSystem
from harness.files.mounts import MountedFileSystem
from harness.messages import Message, ModelResponse, Usage
from harness.steps import StepRunner
from harness.store import StepBatch, Store, message_row, now, storable_message
from harness.tokens import TokenCounter

if TYPE_CHECKING:
    from harness.models.base import Model

T = TypeVar("T")
# The most tokens of any kind one model call can report: far past any context window, far
# below what a BIGINT column holds.
MAX_CALL_TOKENS = 10**12

# One line per middleware decision (what `events` records), for run logs such as Prefect's.
events_log = logging.getLogger("harness.events")


@dataclass(eq=False)
class RunState:
    """Mutable state of one run.

    `messages` is the window: what the next model call will see. Middleware may rewrite it
    with `replace_window`; the store keeps the append-only transcript either way.
    `scratch` holds per-middleware state keyed by middleware name. `config` is what the run
    was configured with (model, window, prompt, limits), frozen.
    """

    config: RunConfig
    run_id: str
    thread_id: str
    store: Store
    steps: StepRunner
    counter: TokenCounter
    messages: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    peak_context_tokens: int = 0
    parent_run_id: str | None = None
    parent_step: int | None = None
    # Subagents work in the parent's files (their offloads stay readable to the parent) while
    # keeping their own transcript and history file.
    files_thread: str | None = None
    scratch: dict[str, Any] = field(default_factory=dict)
    new_messages: list[Message] = field(default_factory=list)
    _seq: int = 0
    # Token total of `messages`, kept current on append so a step costs O(new messages).
    window_tokens: int = 0
    # Bumped whenever the window is rewritten rather than appended to, so middleware that scan
    # the window can resume from where they stopped while it only grows.
    window_version: int = 0
    # scan key -> (window_version, index scanned up to); see `unscanned`.
    _scans: dict[str, tuple[int, int]] = field(default_factory=dict)
    _stored_ids: set[str] = field(default_factory=set)
    _batch: StepBatch = field(default_factory=StepBatch)
    _window_row: tuple[Any, ...] | None = None

    def __repr__(self) -> str:
        # The generated repr would print every message: asyncio reprs the running task (and
        # so this state) when `asyncio.run` restores its SIGINT handler on Python 3.11.
        return (
            f"RunState(run_id={self.run_id!r}, thread_id={self.thread_id!r}, step={self.step}, "
            f"messages={len(self.messages)}, window_tokens={self.window_tokens})"
        )

    # -- the window and the transcript ---------------------------------------------------

    def restore(self, window: Sequence[Message], next_seq: int) -> None:
        """Continue a thread: its last window, already in the transcript."""
        self.messages = list(window)
        self.window_version += 1
        self.window_tokens = self.counter.count_messages(window)
        self._stored_ids.update(m.id for m in window)
        self._seq = next_seq - 1

    def append(self, message: Message) -> None:
        """Add a message to the window and (at the next flush) to the transcript."""
        message = self._storable(message)
        self.messages.append(message)
        self.window_tokens += self._record(message)

    def _storable(self, message: Message) -> Message:
        """The message as the store can hold it; the model then sees what a resumed run
        would read back. A repair is recorded as an event saying where it happened."""
        clean, repairs = storable_message(message)
        if repairs:
            self.event(
                "store", "append", "text_repaired",
                detail={"message_id": message.id, "role": message.role,
                        "tool_call_id": message.tool_call_id, "replaced": repairs},
            )  # fmt: skip
        return clean

    def _record(self, message: Message) -> int:
        self.new_messages.append(message)
        self._stored_ids.add(message.id)
        self._seq += 1
        tokens = self.counter.count_message(message)
        self._batch.add(
            "messages",
            message_row(
                message, thread_id=self.thread_id, seq=self._seq, run_id=self.run_id,
                step=self.step, tokens=tokens,
            ),
        )  # fmt: skip
        return tokens

    def replace_window(self, messages: Sequence[Message], reason: str) -> None:
        """Make `messages` the window. Messages not yet in the transcript (summaries,
        placeholders) are appended to it; a `windows` row records which ids the model sees,
        so a resumed thread sees the same window."""
        messages = [m if m.id in self._stored_ids else self._storable(m) for m in messages]
        for m in messages:
            if m.id not in self._stored_ids:
                self._record(m)
        self.messages = list(messages)
        self.window_version += 1
        self.window_tokens = self.counter.count_messages(self.messages)
        # Only the step's last rewrite is stored: several rewrites in one step would tie on
        # `at_seq`, and a resumed thread must find exactly the window the model last saw.
        if self._window_row is not None:
            reason = f"{self._window_row[5]}+{reason}"
        self._window_row = (
            self.thread_id, self.run_id, self.step, self._seq,
            json.dumps([m.id for m in messages]), reason, now(),
        )  # fmt: skip

    def unscanned(self, key: str) -> int:
        """Index of the first window message that the scan `key` has not seen: 0 after a
        rewrite. Call `scanned(key)` when done so the next step only looks at new messages."""
        version, upto = self._scans.get(key, (-1, 0))
        return upto if version == self.window_version else 0

    def scanned(self, key: str, upto: int | None = None) -> None:
        """Mark the window as scanned by `key` up to `upto` (default: all of it)."""
        self._scans[key] = (self.window_version, len(self.messages) if upto is None else upto)

    def flush(self) -> None:
        """Hand what the step produced to the store, durable when this returns: committed in
        one transaction, or, written behind, to the store's `write_log` (an in-memory store
        has no crash to outlive)."""
        if self._window_row is not None:
            self._batch.add("windows", self._window_row)
            self._window_row = None
        if self._batch.repairs:
            repairs, self._batch.repairs = self._batch.repairs, []
            self.event("store", "flush", "text_repaired", detail={"rows": repairs})
        if self._batch:
            self.store.write(self._batch)
            self._batch = StepBatch()

    def drop_unwritten(self) -> dict[str, int]:
        """Give up on the rows the step has not committed (the store refused them); returns
        how many rows of each table were dropped."""
        dropped = {table: len(rows) for table, rows in self._batch.rows.items() if rows}
        if self._window_row is not None:
            dropped["windows"] = dropped.get("windows", 0) + 1
        self._batch = StepBatch()
        self._window_row = None
        return dropped

    # -- observability -------------------------------------------------------------------

    def event(
        self,
        middleware: str,
        hook: str,
        action: str,
        *,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        detail: dict[str, Any] | None = None,
        ms: float | None = None,
    ) -> None:
        """Record what a middleware did (committed with the step), with the id of the step
        task that did it, or why there is none."""
        step_id = self.steps.current_step_id()
        reason = None if step_id else _no_step_reason(self.steps, hook)
        if events_log.isEnabledFor(logging.INFO):
            moved = "" if tokens_before is None else f": {tokens_before} -> {tokens_after} tokens"
            events_log.info("%s %s at step %d (%s)%s", middleware, action, self.step, hook, moved)
        self._batch.add(
            "events",
            (self.run_id, self.step, middleware, hook, action, tokens_before, tokens_after,
             json.dumps(detail or {}, default=str), ms, step_id, now(), reason),
        )  # fmt: skip

    def record_model_call(
        self,
        model: Model,
        response: ModelResponse,
        *,
        context_tokens: int,
        latency_ms: float,
        encoding: str,
        label: str = "",
    ) -> None:
        """Add a model call's usage and cost to the run's, and queue its `model_calls` row.
        `label` marks calls the loop did not make (`#summarize`) in the recorded model name."""
        usage = response.usage
        _check_usage(usage, response.model_name or model.name)
        cost = model.profile.cost(usage)
        self.usage = self.usage.with_call(usage, cost)
        self._batch.add(
            "model_calls",
            (self.run_id, self.step, (response.model_name or model.name) + label,
             usage.input_tokens, usage.output_tokens, usage.cached_tokens,
             usage.cache_write_tokens, context_tokens, latency_ms, cost, response.stop_reason,
             encoding, now()),
        )  # fmt: skip

    def add_row(self, table: str, row: tuple[Any, ...]) -> None:
        """Queue a row for a step table (`summaries`, ...) in this step's transaction."""
        self._batch.add(table, row)

    async def run_step(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        """Run an acting step through the step runner (a Prefect task under `flows`)."""
        return await self.steps.run(name, fn, *args, **kwargs)

    @cached_property
    def files(self) -> FileSystem:
        """The run's virtual filesystem (its thread's files, or `files_thread`'s), with the
        agent's folders on disk mounted."""
        thread = self.files_thread or self.thread_id
        if self.config.file_mounts:
            return MountedFileSystem(
                self.store, thread, self.run_id, mounts=self.config.file_mounts
            )
        return FileSystem(self.store, thread, self.run_id)

    def elapsed_ms(self, start: float) -> float:
        return (time.perf_counter() - start) * 1000


def _no_step_reason(steps: object, hook: str) -> str:
    """Why an event has no step id: the runner's own words when it has them."""
    explain = getattr(steps, "no_step_reason", None)
    return str(explain(hook)) if callable(explain) else f"{hook} ran outside any step"


def _check_usage(usage: Usage, model: str) -> None:
    """`ModelError` naming a token figure no call can have: the run fails on it, instead of
    DuckDB refusing the step's rows later (2^63 overflows BIGINT) while the run goes on."""
    for name in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"):
        value = getattr(usage, name)
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= MAX_CALL_TOKENS
        ):
            raise ModelError(
                f"{model} reported {name}={value!r} for one call; a usage figure must be a "
                f"whole number from 0 to {MAX_CALL_TOKENS:,}"
            )
