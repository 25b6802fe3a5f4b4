"""Subagents: noisy work runs in a fresh context; only the final answer comes back.

`SubAgents` contributes a `task(description, subagent_type)` tool. Each call starts a new agent
run with its own window and its own compaction middleware, possibly on a cheaper model, and
returns its final text. Several task calls in one model message run concurrently (the loop
gathers tool calls). A subagent run is stored like any run, linked to its parent by
`parent_run_id` and `parent_step`; its thread id is derived from the parent run and the tool
call id, so its transcript and history file never mix with the parent's or a sibling's, while
it works in the parent's files (what it offloads stays readable to the parent).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from harness.files.paths import safe_segment
from harness.middleware.base import Middleware
from harness.middleware.offload import OffloadLargeResults
from harness.middleware.params import flag, whole_or_none
from harness.models.base import Model
from harness.run import RunResult, merge_tools, run_agent
from harness.settings import StrategySettings
from harness.tokens import TokenCounter
from harness.tools import Tool, ToolContext, as_tool, tool

if TYPE_CHECKING:
    from harness.state import RunState

GENERAL_PURPOSE = "general-purpose"

TASK_DESCRIPTION = """\
Hand a self-contained piece of work to a subagent. It works in its own fresh context and \
returns only its final answer, so the searches, documents and dead ends it goes through never \
fill this conversation. Use it for noisy or independent work; put several task calls in one \
message to run them in parallel. The subagent sees nothing of this conversation: the \
description must say everything it needs (the goal, the inputs or where to find them, and the \
form of the answer you want back). Its answer is not shown to the user; pass on what matters.

Available subagent types:
{agents}"""

GENERAL_PURPOSE_PROMPT = """\
You are a subagent working on one task handed to you by another agent. Work through it with \
your tools, then reply with a final answer that stands on its own: the findings, figures and \
file paths the other agent needs, concisely, without describing your process. The other agent \
sees only this final answer."""


@dataclass(frozen=True)
class SubAgent:
    """A kind of subagent the model can call through `task`.

    tools: None gives the parent's tools (without `task`). model: None runs on the parent's
    model; a name such as "openai:gpt-6.2-mini" or a `Model` picks another. middleware: extra
    middleware of this subagent's own, after its compaction stack and after the user
    middleware it inherits. inherit_middleware: run the user middleware that `create_agent`
    gives subagents (its `subagent_middleware`, by default its `middleware`), so a guard or a
    logger sees this subagent's calls too (default True); False runs only `middleware`.
    strategy: the compaction strategy name, None for the parent's.
    """

    name: str
    description: str
    system_prompt: str = GENERAL_PURPOSE_PROMPT
    tools: Sequence[Tool | Callable[..., Any]] | None = None
    model: str | Model | None = None
    middleware: Sequence[Middleware] | None = None
    strategy: str | None = None
    inherit_middleware: bool = True

    def __post_init__(self) -> None:
        # Frozen but given lists by callers: store tuples so a spec cannot change under a run.
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(as_tool(t) for t in self.tools))
        if self.middleware is not None:
            object.__setattr__(self, "middleware", tuple(self.middleware))


DEFAULT_GENERAL_PURPOSE = SubAgent(
    name=GENERAL_PURPOSE,
    description=(
        "An agent with the same tools as you. Use it for research or multi-step work whose "
        "intermediate results you do not need to keep, only the outcome."
    ),
)


class SubagentStack(Protocol):
    """Builds fresh middleware for one subagent run: the stack of a strategy name, with the
    inherited user middleware and a spec's own middleware in their place
    (`harness.strategies.subagent_stack`)."""

    def __call__(
        self,
        strategy: str | None,
        middleware: Sequence[Middleware],
        *,
        inherited: Sequence[Middleware] = (),
    ) -> Sequence[Middleware]: ...


class SubAgents(Middleware):
    """Contributes the `task` tool that runs subagents in their own context."""

    name = "subagents"

    def __init__(
        self,
        subagents: Iterable[SubAgent] = (),
        *,
        general_purpose: bool = True,
        strategy: str | None = None,
        stack: SubagentStack | None = None,
        max_steps: int | None = None,
        inherited: Sequence[Middleware] = (),
    ) -> None:
        """Parameters:
        subagents: the specs the model may pick by name; a spec named "general-purpose"
            replaces the default one.
        general_purpose: offer the default "general-purpose" subagent (default True).
        strategy: the compaction strategy name for specs that name none (create_agent passes
            its own strategy).
        stack: builds a subagent run's middleware from a strategy name and the spec's own
            middleware (create_agent passes the strategies' builder, which knows the stack
            order). Without it, subagents offload large tool results, then run the spec's.
        max_steps: model calls allowed per subagent run; None uses the parent's limit.
        inherited: user middleware every subagent runs unless its spec sets
            `inherit_middleware=False` (create_agent passes its `subagent_middleware`). The
            same instances serve every run, as the parent's do: keep per-run state on the
            `RunState`, not on the middleware.
        """
        specs = {s.name: s for s in subagents}
        if flag("subagents.general_purpose", general_purpose):
            specs.setdefault(GENERAL_PURPOSE, DEFAULT_GENERAL_PURPOSE)
        self.specs = specs
        self.strategy = strategy
        self.stack = stack
        self.inherited = tuple(inherited)
        self.max_steps = whole_or_none("subagents.max_steps", max_steps, minimum=1)
        self.tools = (self._task_tool(),) if specs else ()

    def _task_tool(self) -> Tool:
        agents = "\n".join(f"- {s.name}: {s.description}" for s in self.specs.values())

        async def task(description: str, subagent_type: str, ctx: ToolContext) -> str:
            """Run a subagent.

            Args:
                description: The complete task for the subagent, with everything it needs to
                    know, and the form of the answer you want back.
                subagent_type: Which subagent to use: one of the types listed above.
            """
            return await self._run(ctx, description, subagent_type)

        # A subagent's run is bounded by its steps and its own tools' limits, not by one
        # tool-call limit of the parent's.
        return tool(
            name="task", description=TASK_DESCRIPTION.format(agents=agents), timeout=math.inf
        )(task)

    async def _run(self, ctx: ToolContext, description: str, subagent_type: str) -> str:
        spec = self.specs.get(subagent_type)
        if spec is None:
            raise ValueError(
                f"unknown subagent_type {subagent_type!r}; available: {', '.join(self.specs)}"
            )
        state = ctx.state
        start = time.perf_counter()
        config = state.config
        middleware = self.middleware_for(spec)
        # Tools a subagent's own middleware contributes must not come twice from the parent.
        own = {t.name for mw in middleware for t in mw.tools}
        base = ctx.tools if spec.tools is None else tuple(map(as_tool, spec.tools))
        tools = [t for t in base if t.name != "task" and t.name not in own]
        model = _model(spec.model, config.model)
        child = replace(
            config,
            name=f"{config.name}/{spec.name}",
            model=model,
            system_prompt=spec.system_prompt,
            max_steps=self.max_steps or config.max_steps,
            counter=TokenCounter(model.profile.encoding),
            strategy=spec.strategy or self.strategy,
            strategy_settings=StrategySettings(),
        )
        result = await run_agent(
            child,
            middleware,
            merge_tools(tools, middleware),
            description,
            thread_id=_child_thread(state, ctx.call.id),
            parent_run_id=state.run_id,
            parent_step=state.step,
            files_thread=state.files_thread or state.thread_id,
        )
        answer = _answer(result)
        state.event(
            self.name, "task", "subagent_run",
            tokens_before=result.usage.input_tokens + result.usage.output_tokens,
            tokens_after=state.counter.count_text(answer),
            detail={
                "subagent_type": spec.name, "run_id": result.run_id,
                "thread_id": result.thread_id, "status": result.status, "steps": result.steps,
                "peak_context_tokens": result.peak_context_tokens,
                "cost_usd": result.usage.cost_usd,
            },
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return answer

    def middleware_for(self, spec: SubAgent) -> list[Middleware]:
        """Fresh middleware for one run of `spec`, in the order `stack` gives them."""
        strategy = spec.strategy or self.strategy
        inherited = self.inherited if spec.inherit_middleware else ()
        if self.stack is not None:
            return list(self.stack(strategy, spec.middleware or (), inherited=inherited))
        return [OffloadLargeResults(), *inherited, *(spec.middleware or ())]


def _model(choice: str | Model | None, parent: Model) -> Model:
    if choice is None:
        return parent
    if isinstance(choice, str):
        from harness.models import resolve_model  # SDK adapters load only when named

        return resolve_model(choice)
    return choice


def _child_thread(state: RunState, call_id: str) -> str:
    """A thread id from the parent run and the tool call id, path-safe and unused so far."""
    base = safe_segment(f"{state.run_id}.task.{call_id}")
    thread, n = base, 1
    while state.store.runs.thread_in_use(thread):
        n += 1
        thread = f"{base}.{n}"
    return thread


def _answer(result: RunResult) -> str:
    text = result.output.strip()
    if result.status != "completed":
        # Cut short mid-work: its last words are the best partial answer there is.
        said = [m.content.strip() for m in result.messages if m.role == "assistant"]
        text = next((t for t in reversed(said) if t), "")
        note = f"[the subagent stopped ({result.status}) after {result.steps} model calls]"
        return f"{note}\n{text}" if text else note
    return text or "[the subagent finished without a final answer]"
