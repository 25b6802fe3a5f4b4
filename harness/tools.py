"""Tools: plain Python functions the model may call.

`@tool` (or `as_tool`, which `create_agent` applies to a plain function) reads the JSON schema
from type hints and the description from the docstring ("Args:" lines describe parameters). A
parameter annotated `ToolContext` is injected by the harness and hidden from the model.
Arguments are validated with pydantic; a bad call from the model becomes a `ToolArgumentError`
whose text tells the model what to fix.

Every call has a time limit: the tool's own (`@tool(timeout=...)`), else the agent's
(`create_agent(tool_timeout_s=...)`, 120 s by default). An async tool past its limit is
cancelled. A sync tool runs on a worker thread (reused across calls: a new thread per call cost
~1 ms), so it neither blocks the event loop nor its sibling calls; past its limit it is
abandoned (Python cannot stop a thread): it keeps its worker, the pool starts another for the
next call, workers are daemons, so a hung tool never keeps the process alive, and whatever it
returns later is dropped. Either way the model gets a `ToolTimeoutError` naming the tool and
the limit. A sync call cancelled from outside (its run is ending) is waited for, up to its
limit, so it does not write to the store after its run. A tool that raises `SystemExit` gets
a `ToolExitError` instead of ending the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import math
import queue
import re
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, get_type_hints, overload

import pydantic

from harness.errors import HarnessError, ToolDefinitionError
from harness.memo import Memo
from harness.messages import ToolCall

if TYPE_CHECKING:
    from harness.state import RunState

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

DEFAULT_TOOL_TIMEOUT_S = 120.0


class ToolError(HarnessError):
    """A failed tool call whose text is written for the model to read."""


class ToolArgumentError(ToolError):
    """The model called a tool with arguments that do not match its schema."""


class ToolTimeoutError(ToolError):
    """A tool call ran past its time limit."""


class ToolExitError(ToolError):
    """A tool raised `SystemExit`; the run goes on."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may use besides its arguments: the run it belongs to, the call itself, and
    the tools the run offers (a tool that starts a subagent hands them on)."""

    state: RunState
    call: ToolCall
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True)
class Tool:
    """A function the model may call, with the JSON schema it is shown and the pydantic model
    its arguments are checked against. Build one with `@tool`."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    args_model: type[pydantic.BaseModel]
    context_param: str | None = None
    # Seconds; None takes the agent's limit, `math.inf` means none.
    timeout: float | None = None

    def schema(self) -> dict[str, Any]:
        """Provider-neutral tool definition; adapters reshape it per API. The same dict is
        returned every time (treat it as read-only), so its token count is cached."""
        return self._schema

    @cached_property
    def _schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for `fn`, defaults filled in; `ToolArgumentError` otherwise."""
        try:
            parsed = self.args_model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolArgumentError(
                f"invalid arguments for tool '{self.name}': {problems}. "
                f"Expected parameters: {json.dumps(self.parameters.get('properties', {}))}"
            ) from None
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    async def run(
        self,
        arguments: dict[str, Any],
        ctx: ToolContext,
        *,
        default_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S,
    ) -> str:
        """Validate, call `fn`, and return its result as text (non-strings as JSON).
        `default_timeout` (seconds, None for no limit) applies when the tool sets none."""
        kwargs = self.validate(arguments)
        if self.context_param:
            kwargs[self.context_param] = ctx
        limit = self.timeout if self.timeout is not None else default_timeout
        is_async = inspect.iscoroutinefunction(self.fn)
        delay = _delay(limit)
        deadline = None if delay is None else asyncio.get_running_loop().time() + delay
        try:
            async with asyncio.timeout_at(deadline) as scope:
                if is_async:
                    result = await self.fn(**kwargs)
                else:
                    result = await _in_thread(self.fn, kwargs, self.name, deadline)
        except TimeoutError:
            if not scope.expired():
                raise  # the tool's own timeout, not ours
            fate = "was cancelled" if is_async else "was abandoned (it may still finish unseen)"
            raise ToolTimeoutError(
                f"tool '{self.name}' did not finish within its time limit of {limit:g} s and "
                f"{fate}; its result is lost. Ask for less at once, or try another way."
            ) from None
        except SystemExit as exc:
            raise ToolExitError(
                f"tool '{self.name}' tried to exit the process (SystemExit({exc.code!r})); "
                "the call failed, the run goes on."
            ) from None
        return result if isinstance(result, str) else json.dumps(result, default=str)


def _delay(limit: float | None) -> float | None:
    return None if limit is None or math.isinf(limit) else limit


class _Workers:
    """Daemon threads that run sync tool calls, reused from call to call. A call never waits
    for a free worker: when none is idle (all busy, or hung past their limit) another starts.
    Not the loop's default executor (`asyncio.to_thread`): its threads are few and joined at
    exit, so tools abandoned at their limit would starve later calls and hold the process."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.started = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # this worker is now spoken for
            else:
                self.started += 1
                threading.Thread(
                    target=self._work, name=f"tool-worker-{self.started}", daemon=True
                ).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


async def _in_thread(
    fn: Callable[..., Any], kwargs: dict[str, Any], name: str, deadline: float | None
) -> Any:
    """`fn(**kwargs)` on a worker thread (`_Workers`), awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()  # the step's context (e.g. its Prefect task run)

    def settle(outcome: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            outcome(value)

    def work() -> None:
        try:
            value = context.run(fn, **kwargs)
        except BaseException as exc:  # SystemExit included: the awaiting call decides
            outcome, value = future.set_exception, exc
        else:
            outcome = future.set_result
        with suppress(RuntimeError):  # the loop closed while an abandoned tool ran on
            loop.call_soon_threadsafe(settle, outcome, value)

    _WORKERS.submit(work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await _outlast(future, deadline)
        raise


async def _outlast(future: asyncio.Future[Any], deadline: float | None) -> None:
    """Wait for a cancelled call's thread until it ends or its deadline passes, whatever
    further cancellations arrive: cancelled because its run is ending (a sibling failed, the
    loop shuts down), it must not go on writing to the store after the run, but a hung one is
    left behind at its limit. At the deadline itself (the call timed out) this returns at once.
    """
    loop = asyncio.get_running_loop()
    while not future.done():
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            return
        with suppress(asyncio.CancelledError):
            await asyncio.wait([future], timeout=remaining)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Google-style docstring -> (summary, {param: description})."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    arg_indent = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        header = stripped.lower().rstrip(":")
        if stripped.endswith(":") and header in ("args", "arguments", "parameters"):
            section, current, arg_indent = "args", None, None
            continue
        if stripped.endswith(":") and header in ("returns", "raises", "examples", "example"):
            section = "other"
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args" and stripped:
            indent = len(line) - len(line.lstrip())
            m = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if m and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = m.group(1)
                params[current] = m.group(2)
            elif current:
                params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary).strip(), params


def _build(
    fn: Callable[..., Any], name: str | None, description: str | None, timeout: float | None
) -> Tool:
    tool_name = name or fn.__name__
    if not _NAME.match(tool_name):
        raise ToolDefinitionError(f"tool name {tool_name!r} must match {_NAME.pattern}")
    if timeout is not None and not timeout > 0:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: timeout must be a positive number of seconds (math.inf for "
            f"no limit), not {timeout!r}"
        )
    summary, param_docs = _parse_docstring(fn.__doc__ or "")
    try:
        hints = get_type_hints(fn)
    except NameError as exc:
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot resolve type hints: {exc}") from exc
    fields: dict[str, tuple[Any, Any, str | None]] = {}
    context_param = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: *args/**kwargs are not supported")
        hint = hints.get(pname)
        if hint is ToolContext:
            context_param = pname
            continue
        if hint is None:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {pname!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (hint, default, param_docs.get(pname))
    model, schema = _arguments(tool_name, fields)
    return Tool(
        name=tool_name,
        description=description or summary or tool_name,
        parameters=copy.deepcopy(schema),  # each tool's own: a caller may change it
        fn=fn,
        args_model=model,
        context_param=context_param,
        timeout=timeout,
    )


# (tool name, parameters) -> their pydantic model and JSON schema, ~1.6 ms to build: the same
# tool is defined again by every agent (each subagents middleware's `task`, a replay's tools).
_ARGUMENTS: Memo[tuple[Any, ...], tuple[type[pydantic.BaseModel], dict[str, Any]]] = Memo(
    512, lambda key: 1
)


def _arguments(
    tool_name: str, fields: dict[str, tuple[Any, Any, str | None]]
) -> tuple[type[pydantic.BaseModel], dict[str, Any]]:
    """The model that checks a tool's arguments, and the schema the model is shown, from each
    parameter's type hint, default and description (built once per distinct definition)."""
    # A default's type too: 0 and False are equal keys but different schemas.
    key = (tool_name, *((n, h, type(d), d, doc) for n, (h, d, doc) in fields.items()))
    try:
        known = _ARGUMENTS.get(key)
    except TypeError:  # an unhashable hint or default: built every time
        known = None
        key = ()
    if known is not None:
        return known
    definitions: dict[str, Any] = {
        name: (hint, pydantic.Field(default, description=doc))
        for name, (hint, default, doc) in fields.items()
    }
    model = pydantic.create_model(
        f"{tool_name}_args", __config__=pydantic.ConfigDict(extra="forbid"), **definitions
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    if key:
        _ARGUMENTS.put(key, (model, schema))
    return model, schema


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`. Use bare or with options.
    `timeout`: seconds a call may take (`math.inf`: no limit); None takes the agent's."""
    if fn is not None:
        return _build(fn, name, description, timeout)
    return lambda f: _build(f, name, description, timeout)


def as_tool(item: Tool | Callable[..., Any]) -> Tool:
    """A tool from `item`: a `Tool` as it is, a typed function (sync or async) as `@tool` would
    make it, so callers may hand plain functions wherever tools are taken."""
    if isinstance(item, Tool):
        return item
    if not inspect.isfunction(item) and not inspect.ismethod(item):
        raise ToolDefinitionError(
            f"{item!r} is not a tool: give a typed function (its docstring describes it) or "
            "one decorated with @tool"
        )
    return _build(item, None, None, None)


__all__ = [
    "DEFAULT_TOOL_TIMEOUT_S",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "ToolExitError",
    "ToolTimeoutError",
    "as_tool",
    "tool",
]
