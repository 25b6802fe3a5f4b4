"""`create_agent` and `Agent`: the public entry point of the harness."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, Unpack

from harness.config import RunConfig
from harness.errors import HarnessError
from harness.files.mounts import FileBackend, mount_table
from harness.files.tools import file_tools as builtin_file_tools
from harness.mcp.servers import MCPServer
from harness.messages import Message
from harness.middleware.base import Middleware
from harness.middleware.memory import DEFAULT_PATHS as DEFAULT_MEMORY
from harness.middleware.subagents import SubAgent
from harness.models.base import Model, ModelSettings
from harness.profiles import ModelProfile
from harness.run import RunPlace, RunResult, merge_tools, run_agent
from harness.settings import StrategySettings
from harness.steps import InlineRunner, StepRunner
from harness.store import Store
from harness.strategies import DEFAULT_STRATEGY, build_stack
from harness.tokens import TokenCounter
from harness.tools import DEFAULT_TOOL_TIMEOUT_S, Tool, as_tool


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
        strategy_settings: StrategySettings | None = None,
        tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S,
        connections: Sequence[Closable] = (),
        file_mounts: Mapping[str, FileBackend] | None = None,
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
        self.strategy_settings = strategy_settings or StrategySettings()
        self.tool_timeout_s = tool_timeout_s
        # What the agent holds open (its MCP servers), closed by `close`.
        self.connections = tuple(connections)
        self.file_mounts = dict(file_mounts or {})
        self.tools = merge_tools(tools, self.middleware)
        self.counter = TokenCounter(model.profile.encoding)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model.name!r}, strategy={self.strategy!r})"

    def config(self) -> RunConfig:
        """The agent as a run sees it, frozen for the run."""
        return RunConfig(
            name=self.name,
            model=self.model,
            system_prompt=self.system_prompt,
            settings=self.settings,
            max_steps=self.max_steps,
            store=self.store,
            step_runner=self.step_runner,
            counter=self.counter,
            tool_timeout_s=self.tool_timeout_s,
            strategy=self.strategy,
            strategy_settings=self.strategy_settings,
            file_mounts=self.file_mounts,
        )

    async def run(self, input: str | Message | None, **place: Unpack[RunPlace]) -> RunResult:
        """Run until the model answers without tool calls (or `max_steps`). A known
        `thread_id` continues that conversation from its last window. `files_thread` makes
        the run work in another thread's files (a subagent in its parent's)."""
        return await run_agent(self.config(), self.middleware, self.tools, input, **place)

    def run_sync(self, input: str | Message | None, **kwargs: Any) -> RunResult:
        """`run` for synchronous callers (not from inside a running event loop)."""
        return asyncio.run(self.run(input, **kwargs))

    def close(self) -> None:
        """Stop the agent's MCP servers (they start again if it runs again). The store is
        the caller's to close."""
        for connection in self.connections:
            connection.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Closable(Protocol):
    def close(self) -> None: ...


def create_agent(
    model: str | Model,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    *,
    system_prompt: str = "",
    middleware: Sequence[Middleware] = (),
    subagent_middleware: Sequence[Middleware] | None = None,
    store: Store | None = None,
    name: str = "agent",
    max_steps: int = 100,
    settings: ModelSettings | None = None,
    step_runner: StepRunner | None = None,
    strategy: str = DEFAULT_STRATEGY,
    strategy_params: StrategySettings | Mapping[str, Any] | None = None,
    skills: Sequence[str | os.PathLike[str]] = (),
    subagents: Sequence[SubAgent] = (),
    memory: Sequence[str] = DEFAULT_MEMORY,
    file_tools: bool = True,
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S,
    profile: ModelProfile | None = None,
    mcp_servers: Sequence[MCPServer] = (),
    mounts: Mapping[str, str | os.PathLike[str] | FileBackend] | None = None,
) -> Agent:
    """Build an agent.

    model: `"openai:<name>"`, `"openai-chat:<name>"`, `"anthropic:<name>"`,
        `"openai-compatible:<name>"` (any Chat Completions server at
        `$OPENAI_COMPATIBLE_BASE_URL`; or `resolve_model(spec, base_url=...)`), `"simulated"`,
        or any object implementing the `Model` protocol.
    tools: `@tool` functions, or plain typed functions (sync or async) whose docstring gives
        the description and, under "Args:", each argument's; the schema comes from the hints.
    profile: the window, output cap and prices of a model named by string that ctxlab has no
        built-in profile for (`ModelProfile(name=..., context_window=..., ...)`).
    store: where everything is recorded; default `Store()` (`$CTXLAB_DB` or ./ctxlab.duckdb).
    step_runner: runs each model call, tool call and acting hook; default inline.
    strategy: the compaction arm: "full" (offload + summarize), "summarize", "offload",
        "mask", "context-edit", "truncate" or "none" (see `harness.strategies`).
    strategy_params: the stack's middleware constructor parameters: a `StrategySettings`, or
        dotted keys such as {"summarize.trigger": 0.7, "offload.tool_token_limit": 5_000}.
    skills: skill folders on disk, synced to `/skills/` at every run start.
    subagents: `SubAgent` specs for the `task` tool (a general-purpose one is always there).
    memory: long-term memory files injected into every call; () for none.
    file_tools: give the model ls, read_file, write_file, edit_file, glob, grep and delete
        (a tool of yours with the same name replaces the built-in one).
    middleware: yours, placed after the compaction middleware, outside memory. Subagents run
        them too (after their own compaction, before their spec's middleware), so a guard or
        a logger sees every model and tool call the task tool makes.
    subagent_middleware: what subagents run of yours instead: None (default) the same
        `middleware` instances, () none (the main agent only), or other middleware. A
        `SubAgent(inherit_middleware=False)` opts out on its own.
    tool_timeout_s: seconds a tool call may take unless the tool sets its own limit
        (`@tool(timeout=...)`); None for no limit. Past it the model gets an error.
    mcp_servers: `harness.mcp.StdioServer`/`HttpServer`s whose tools the agent offers, listed
        now (a server that cannot start is an `MCPServerError` here). `Agent.close()` stops
        them.
    mounts: folders on disk for virtual prefixes, e.g. `{"/workspace/": "~/repo",
        "/memories/": "~/repo/.agent"}`: files there are read from the folder and written to
        it atomically (confined to it: no `..`, symlink out, absolute path or device file),
        and every change is also written to the store (memory versions as without them).
    """
    if isinstance(model, str):
        from harness.models import resolve_model  # SDK adapters load only when named

        model = resolve_model(model, **({"profile": profile} if profile is not None else {}))
    elif profile is not None:
        raise ValueError("profile= is for a model given by name; a Model object has its own")
    strategy_settings = StrategySettings.parse(strategy_params)
    stack = build_stack(
        strategy, strategy_settings, skills=skills, subagents=subagents, memory=memory,
        middleware=middleware, subagent_middleware=subagent_middleware,
    )  # fmt: skip
    file_mounts = mount_table(mounts or {})
    all_tools = [as_tool(t) for t in tools]
    connections: list[Closable] = []
    if mcp_servers:
        from harness.mcp import open_servers

        builtin = builtin_file_tools() if file_tools else []
        taken = {t.name for t in [*all_tools, *builtin, *(t for mw in stack for t in mw.tools)]}
        connections, served = open_servers(mcp_servers, taken)  # type: ignore[assignment]
        all_tools += served
    if file_tools:
        taken = {t.name for t in all_tools}
        all_tools += [t for t in builtin_file_tools() if t.name not in taken]
    try:
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
            strategy_settings=strategy_settings,
            tool_timeout_s=tool_timeout_s,
            connections=connections,
            file_mounts=file_mounts,
        )
    except BaseException:
        for connection in connections:  # e.g. an MCP tool named as one of yours
            connection.close()
        raise
