"""One agent run from start to end, from a frozen `RunConfig`, its middleware and its tools:
what `Agent.run` does and what a subagent's run does, without either holding the `Agent`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from harness.config import RunConfig
from harness.errors import HarnessError
from harness.loop import run_loop
from harness.memo import Memo
from harness.messages import Message, Usage, new_id, user
from harness.middleware.base import Middleware
from harness.state import RunState
from harness.store import RunStore
from harness.tools import Tool

# Ctrl-C: `asyncio.run` cancels the running task; outside a loop (or at a second Ctrl-C)
# Python raises KeyboardInterrupt where the program is.
INTERRUPTS = (asyncio.CancelledError, KeyboardInterrupt)


class RunPlace(TypedDict, total=False):
    """Where a run sits: the thread it continues (a new one by default), its own id, the parent
    run and step of a subagent's run, and whose files it works in (`run_agent`)."""

    thread_id: str | None
    run_id: str | None
    parent_run_id: str | None
    parent_step: int | None
    files_thread: str | None


@dataclass(frozen=True)
class RunResult:
    """What a run returns. `messages` is everything the run appended to the transcript
    (the input included); `window` is what the model would see next."""

    run_id: str
    thread_id: str
    status: str
    output: str
    messages: list[Message]
    window: list[Message]
    usage: Usage
    steps: int
    peak_context_tokens: int
    encoding: str = ""

    def __repr__(self) -> str:
        # The generated repr would print every message in full, twice: asyncio reprs the
        # finished task, result included, when `asyncio.run` restores its SIGINT handler
        # (Python 3.11), which cost ~80 MB and ~0.7 s at the end of a 400-step run.
        return (
            f"RunResult(run_id={self.run_id!r}, status={self.status!r}, steps={self.steps}, "
            f"messages={len(self.messages)}, window={len(self.window)}, usage={self.usage!r})"
        )


async def run_agent(
    config: RunConfig,
    middleware: Sequence[Middleware],
    tools: Sequence[Tool],
    input: str | Message | None,
    *,
    thread_id: str | None = None,
    run_id: str | None = None,
    parent_run_id: str | None = None,
    parent_step: int | None = None,
    files_thread: str | None = None,
) -> RunResult:
    """Run until the model answers without tool calls (or `max_steps`). A known `thread_id`
    continues that conversation from its last window. `files_thread` makes the run work in
    another thread's files (a subagent in its parent's)."""
    store: RunStore = config.store  # all a run asks of its store
    thread_id = thread_id or f"thread_{uuid.uuid4().hex[:16]}"
    run_id = run_id or new_id("run")
    state = RunState(
        config=config,
        run_id=run_id,
        thread_id=thread_id,
        store=config.store,
        steps=config.step_runner,
        counter=config.counter,
        parent_run_id=parent_run_id,
        parent_step=parent_step,
        files_thread=files_thread,
    )
    state.restore(store.load_window(thread_id), store.next_seq(thread_id))
    started = False
    try:  # an interrupt may land anywhere, even as the run's row is written
        store.start_run(
            run_id=run_id,
            thread_id=thread_id,
            agent=config.name,
            model=config.model.name,
            strategy=config.strategy,
            parent_run_id=parent_run_id,
            parent_step=parent_step,
            config=_recorded_json(config, middleware, tools),
        )
        started = True
        if input is not None:
            state.append(user(input) if isinstance(input, str) else input)
        status = await run_loop(state, middleware, tools)
    except INTERRUPTS as exc:
        _finish_interrupted(state, exc)
        raise
    except BaseException as exc:
        if started:  # not a run of this call's (a run id already taken) otherwise
            _finish_failed(state, exc)
        raise
    finally:
        store.let_go()  # a store kept open for the step frees the file however the run ended
    store.finish_run(run_id, status=status, steps=state.step, usage=state.usage)
    last = state.messages[-1] if state.messages else None
    return RunResult(
        run_id=run_id,
        thread_id=thread_id,
        status=status,
        output=last.content if last is not None and last.role == "assistant" else "",
        messages=list(state.new_messages),
        window=list(state.messages),
        usage=state.usage,
        steps=state.step,
        peak_context_tokens=state.peak_context_tokens,
        encoding=config.counter.encoding_name,
    )


def merge_tools(tools: Sequence[Tool], middleware: Sequence[Middleware]) -> tuple[Tool, ...]:
    """`tools` and those the middleware contribute, each once; a non-tool or two tools with
    one name is a `HarnessError`."""
    merged: dict[str, Tool] = {}
    for t in [*tools, *(t for mw in middleware for t in mw.tools)]:
        if not isinstance(t, Tool):
            raise HarnessError(f"{t!r} is not a Tool: give a typed function or a @tool one")
        if t.name in merged and merged[t.name] is not t:
            raise HarnessError(f"two tools are named {t.name!r}")
        merged[t.name] = t
    return tuple(merged.values())


# `_recorded_config`'s JSON by what it reads (the settings and tool schemas by identity: both
# are read-only, and held here so an id cannot name another object): every run of an agent
# records the same config, ~6k characters of JSON, written once (~0.2 ms a run).
_RECORDED: Memo[tuple[Any, ...], tuple[tuple[object, ...], str]] = Memo(64, lambda key: 1)


def _recorded_json(
    config: RunConfig, middleware: Sequence[Middleware], tools: Sequence[Tool]
) -> str:
    """`_recorded_config` as JSON."""
    schemas = [t.schema() for t in tools]
    specs = tuple((s["name"], s["description"]) for s in _subagent_specs(middleware))
    key = (config.max_steps, tuple(m.name for m in middleware), id(config.strategy_settings),
           config.system_prompt, config.context_window, tuple(map(id, schemas)), specs)  # fmt: skip
    known = _RECORDED.get(key)
    if known is None:
        text = json.dumps(_recorded_config(config, middleware, tools), default=str)
        known = _RECORDED.put(key, ((config.strategy_settings, *schemas), text))
    return known[1]


def _recorded_config(
    config: RunConfig, middleware: Sequence[Middleware], tools: Sequence[Tool]
) -> dict[str, Any]:
    return {
        "max_steps": config.max_steps,
        "middleware": [m.name for m in middleware],
        "strategy_params": config.strategy_settings.dotted(),
        # What a replay of this run needs and the transcript does not hold
        # (`ctxlab scenarios import`): the prompt, the window and what was offered.
        "system_prompt": config.system_prompt,
        "context_window": config.context_window,
        "tools": [t.schema() for t in tools],
        "subagents": _subagent_specs(middleware),
    }


def _finish_failed(state: RunState, exc: BaseException) -> None:
    """Mark a run that raised as `failed`, keeping what it did, even when the store is what
    failed: the step is written once more, then dropped (the error says so) so that the run's
    status at least is recorded. A store that cannot record even that leaves a note on `exc`."""
    error = f"{type(exc).__name__}: {exc}"
    try:
        state.flush()  # what the run did before failing stays in the store
    except Exception as store_exc:
        dropped = state.drop_unwritten()
        rows = ", ".join(f"{n} {table}" for table, n in sorted(dropped.items())) or "no rows"
        error += (
            f" [the step's rows could not be stored ({type(store_exc).__name__}: {store_exc});"
            f" dropped: {rows}]"
        )
    try:
        state.store.finish_run(
            state.run_id, status="failed", steps=state.step, usage=state.usage, error=error
        )
    except Exception as store_exc:
        exc.add_note(f"run {state.run_id} could not be marked failed in the store: {store_exc}")


def _finish_interrupted(state: RunState, exc: BaseException) -> None:
    """Mark a run stopped from outside `interrupted`, leaving the store as a kill would: the
    step in flight is not written (a model reply whose tool calls never returned would read as
    cancelled calls to a resumed run; under `flows` the journal hands its completed calls back),
    and the steps and usage recorded are those of the steps committed."""
    state.drop_unwritten()
    try:
        steps, _ = state.store.messages.committed_steps(state.run_id)
        usage, _ = state.store.usage.of_run(state.run_id)
        state.store.finish_run(
            state.run_id, status="interrupted", steps=steps, usage=usage,
            error=f"{type(exc).__name__}: interrupted after {state.step} model calls; what "
            "the run did since its last commit was not stored",
        )  # fmt: skip
    except Exception as store_exc:
        exc.add_note(
            f"run {state.run_id} could not be marked interrupted in the store: {store_exc}"
        )


def _subagent_specs(middleware: Sequence[Middleware]) -> list[dict[str, str]]:
    """The subagent kinds the run's `task` tool offered (name and description)."""
    for m in middleware:
        specs = getattr(m, "specs", None) if m.name == "subagents" else None
        if isinstance(specs, dict):
            return [{"name": s.name, "description": s.description} for s in specs.values()]
    return []
