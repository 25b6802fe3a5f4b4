"""`create_agent` and `Agent`: the public entry point of the harness."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.file_tools import file_tools as builtin_file_tools
from harness.loop import run_loop
from harness.messages import Message, Usage, new_id, user
from harness.middleware.base import Middleware
from harness.middleware.memory import DEFAULT_PATHS as DEFAULT_MEMORY
from harness.middleware.subagents import SubAgent
from harness.models.base import Model, ModelSettings
from harness.profiles import ModelProfile
from harness.state import RunState
from harness.steps import InlineRunner, StepRunner
from harness.store import Store
from harness.strategies import DEFAULT_STRATEGY, build_stack
from harness.tokens import TokenCounter
from harness.tools import DEFAULT_TOOL_TIMEOUT_S, Tool


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


class Agent:
    """A configured agent. Build it with `create_agent`; run it with `run` / `run_sync`."""

    def __init__(
        self,
        *,
        model: Model,
        tools: Sequence[Tool],
        system_prompt: str,
        middleware: Sequence[Middleware],
        store: Store,
        name: str,
        max_steps: int,
        settings: ModelSettings,
        step_runner: StepRunner,
        strategy: str | None = None,
        strategy_params: Mapping[str, Any] | None = None,
        tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        if tool_timeout_s is not None and not tool_timeout_s > 0:
            raise HarnessError(
                f"tool_timeout_s must be a positive number of seconds or None (no limit), "
                f"not {tool_timeout_s!r}"
            )
        self.model = model
        self.system_prompt = system_prompt
        self.middleware = tuple(middleware)
        self.store = store
        self.name = name
        self.max_steps = max_steps
        self.settings = settings
        self.step_runner = step_runner
        self.strategy = strategy
        self.strategy_params = dict(strategy_params or {})
        self.tool_timeout_s = tool_timeout_s
        self.tools = _merge_tools(tools, self.middleware)
        self.counter = TokenCounter(model.profile.encoding)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model.name!r}, strategy={self.strategy!r})"

    async def run(
        self,
        input: str | Message | None,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        parent_step: int | None = None,
        files_thread: str | None = None,
    ) -> RunResult:
        """Run until the model answers without tool calls (or `max_steps`). A known
        `thread_id` continues that conversation from its last window. `files_thread` makes
        the run work in another thread's files (a subagent in its parent's)."""
        thread_id = thread_id or f"thread_{uuid.uuid4().hex[:16]}"
        run_id = run_id or new_id("run")
        state = RunState(
            agent=self,
            run_id=run_id,
            thread_id=thread_id,
            store=self.store,
            steps=self.step_runner,
            counter=self.counter,
            parent_run_id=parent_run_id,
            parent_step=parent_step,
            files_thread=files_thread,
        )
        state.restore(self.store.load_window(thread_id), self.store.next_seq(thread_id))
        self.store.start_run(
            run_id=run_id,
            thread_id=thread_id,
            agent=self.name,
            model=self.model.name,
            strategy=self.strategy,
            parent_run_id=parent_run_id,
            parent_step=parent_step,
            config={
                "max_steps": self.max_steps,
                "middleware": [m.name for m in self.middleware],
                "strategy_params": self.strategy_params,
                # What a replay of this run needs and the transcript does not hold
                # (`ctxlab scenarios import`): the prompt, the window and what was offered.
                "system_prompt": self.system_prompt,
                "context_window": self.model.profile.context_window,
                "tools": [t.schema() for t in self.tools],
                "subagents": _subagent_specs(self.middleware),
            },
        )
        if input is not None:
            state.append(user(input) if isinstance(input, str) else input)
        try:
            status = await run_loop(state, self.max_steps)
        except BaseException as exc:
            _finish_failed(state, exc)
            raise
        self.store.finish_run(run_id, status=status, steps=state.step, usage=state.usage)
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
            encoding=self.counter.encoding_name,
        )

    def run_sync(self, input: str | Message | None, **kwargs: Any) -> RunResult:
        """`run` for synchronous callers (not from inside a running event loop)."""
        return asyncio.run(self.run(input, **kwargs))


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


def _merge_tools(tools: Sequence[Tool], middleware: Sequence[Middleware]) -> tuple[Tool, ...]:
    merged: dict[str, Tool] = {}
    for t in [*tools, *(t for mw in middleware for t in mw.tools)]:
        if not isinstance(t, Tool):
            raise HarnessError(f"{t!r} is not a Tool: decorate the function with @tool")
        if t.name in merged and merged[t.name] is not t:
            raise HarnessError(f"two tools are named {t.name!r}")
        merged[t.name] = t
    return tuple(merged.values())


def create_agent(
    model: str | Model,
    tools: Sequence[Tool] = (),
    *,
    system_prompt: str = "",
    middleware: Sequence[Middleware] = (),
    store: Store | None = None,
    name: str = "agent",
    max_steps: int = 100,
    settings: ModelSettings | None = None,
    step_runner: StepRunner | None = None,
    strategy: str = DEFAULT_STRATEGY,
    strategy_params: Mapping[str, Any] | None = None,
    skills: Sequence[str | os.PathLike[str]] = (),
    subagents: Sequence[SubAgent] = (),
    memory: Sequence[str] = DEFAULT_MEMORY,
    file_tools: bool = True,
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S,
    profile: ModelProfile | None = None,
) -> Agent:
    """Build an agent.

    model: `"openai:<name>"`, `"openai-chat:<name>"`, `"anthropic:<name>"`, `"simulated"`,
        or any object implementing the `Model` protocol.
    profile: the window, output cap and prices of a model named by string that ctxlab has no
        built-in profile for (`ModelProfile(name=..., context_window=..., ...)`).
    store: where everything is recorded; default `Store()` (`$CTXLAB_DB` or ./ctxlab.duckdb).
    step_runner: runs each model call, tool call and acting hook; default inline.
    strategy: the compaction arm: "full" (offload + summarize), "summarize", "offload",
        "mask", "context-edit", "truncate" or "none" (see `harness.strategies`).
    strategy_params: dotted constructor parameters of the stack's middleware, e.g.
        {"summarize.trigger": 0.7, "offload.tool_token_limit": 5_000}.
    skills: skill folders on disk, synced to `/skills/` at every run start.
    subagents: `SubAgent` specs for the `task` tool (a general-purpose one is always there).
    memory: long-term memory files injected into every call; () for none.
    file_tools: give the model ls, read_file, write_file, edit_file, glob, grep and delete
        (a tool of yours with the same name replaces the built-in one).
    middleware: yours, placed after the compaction middleware, outside memory.
    tool_timeout_s: seconds a tool call may take unless the tool sets its own limit
        (`@tool(timeout=...)`); None for no limit. Past it the model gets an error.
    """
    if isinstance(model, str):
        from harness.models import resolve_model  # SDK adapters load only when named

        model = resolve_model(model, **({"profile": profile} if profile is not None else {}))
    elif profile is not None:
        raise ValueError("profile= is for a model given by name; a Model object has its own")
    stack = build_stack(
        strategy, strategy_params, skills=skills, subagents=subagents, memory=memory,
        middleware=middleware,
    )  # fmt: skip
    all_tools = list(tools)
    if file_tools:
        taken = {t.name for t in all_tools}
        all_tools += [t for t in builtin_file_tools() if t.name not in taken]
    return Agent(
        model=model,
        tools=all_tools,
        system_prompt=system_prompt,
        middleware=stack,
        store=store if store is not None else Store(),
        name=name,
        max_steps=max_steps,
        settings=settings or ModelSettings(),
        step_runner=step_runner or InlineRunner(),
        strategy=strategy,
        strategy_params=strategy_params,
        tool_timeout_s=tool_timeout_s,
    )


def _subagent_specs(middleware: Sequence[Middleware]) -> list[dict[str, str]]:
    """The subagent kinds the run's `task` tool offered (name and description)."""
    for m in middleware:
        specs = getattr(m, "specs", None) if m.name == "subagents" else None
        if isinstance(specs, dict):
            return [{"name": s.name, "description": s.description} for s in specs.values()]
    return []
