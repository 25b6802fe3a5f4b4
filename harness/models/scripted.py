"""Test doubles shipped with the harness: a queue of responses and a function-backed model."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from harness.errors import HarnessError
from harness.messages import Message, ModelResponse, ToolCall, Usage, new_id
from harness.models.base import ModelSettings, RequestParams
from harness.profiles import ModelProfile, get_profile
from harness.tokens import TokenCounter


@dataclass(frozen=True, slots=True, eq=False)
class ModelCall:
    """One recorded request to a test double. A call whose messages begin with the previous
    call's keeps only the new ones and a link to that call: recording a long run costs memory
    per new message, not a copy of the whole window per call."""

    _base: ModelCall | None
    _shared: int  # how many of `_base`'s messages come first
    _tail: tuple[Message, ...]
    settings: ModelSettings
    params: RequestParams

    @property
    def messages(self) -> tuple[Message, ...]:
        chain: list[ModelCall] = []
        call: ModelCall | None = self
        while call is not None:
            chain.append(call)
            call = call._base
        out: tuple[Message, ...] = ()
        for c in reversed(chain):
            out = out[: c._shared] + c._tail
        return out

    def __repr__(self) -> str:
        return f"ModelCall(messages={self._shared + len(self._tail)}, params={self.params!r})"


class _CountingModel:
    """Shared bookkeeping: records calls and reports usage counted as the harness counts (the
    counts are shared per encoding, so nothing the harness counted is encoded again), so token
    accounting in tests behaves like a real provider's."""

    def __init__(self, name: str, profile: ModelProfile | None) -> None:
        self.name = name
        self.profile = profile or get_profile("test").with_name(name)
        self.calls: list[ModelCall] = []
        self._counter = TokenCounter(self.profile.encoding)
        # The last request's messages and their token total: the next request usually extends
        # them, so only its new messages are looked up.
        self._last: tuple[Message, ...] = ()
        self._last_tokens = 0

    def _record(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> None:
        messages = tuple(messages)
        shared = self._shared_prefix(messages)
        base = self.calls[-1] if self.calls and shared else None
        if base is not None and params.system_prompt == base.params.system_prompt:
            # The prompt is rebuilt every step; keep one copy of it while it does not change.
            params = replace(params, system_prompt=base.params.system_prompt)
        self.calls.append(ModelCall(base, shared, messages[shared:], settings, params))
        if not shared:
            self._last_tokens = 0
        self._last_tokens += self._counter.count_messages(messages[shared:])
        self._last = messages

    def _shared_prefix(self, messages: tuple[Message, ...]) -> int:
        """How many of the last request's messages this one starts with (all or none: a
        rewritten window is recorded whole). Tuple equality checks identity first."""
        n = len(self._last)
        return n if n and messages[:n] == self._last else 0

    def _usage(
        self, messages: Sequence[Message], params: RequestParams, out: ModelResponse
    ) -> Usage:
        if out.usage.requests:
            return out.usage
        n_in = self._counter.count_request(
            params.system_prompt, messages, params.tools, messages_tokens=self._last_tokens
        )
        n_out = self._counter.count_text(out.text) + sum(
            self._counter.count_text(str(c.arguments)) for c in out.tool_calls
        )
        return Usage(input_tokens=n_in, output_tokens=n_out, requests=1)

    def _finish(
        self, messages: Sequence[Message], params: RequestParams, out: ModelResponse
    ) -> ModelResponse:
        usage = self._usage(messages, params, out)
        stop = out.stop_reason
        if out.tool_calls and stop == "end_turn":
            stop = "tool_calls"
        return ModelResponse(
            text=out.text,
            tool_calls=out.tool_calls,
            usage=usage,
            stop_reason=stop,
            model_name=out.model_name or self.name,
        )


Scripted = ModelResponse | str | BaseException


class ScriptedModel(_CountingModel):
    """Replies from a queue. A `str` is a final text reply; a `ModelResponse` is used as is; an
    exception instance is raised (to script provider failures). `.calls` records every request;
    `.assert_complete()` checks the whole script was consumed.

    `reply(text, *calls)` scripts a response that calls tools, `call(name, **arguments)` one
    tool call; the run feeds each tool's result into the next request::

        model = ScriptedModel([
            reply("Looking it up.", call("read_file", file_path="/memories/AGENTS.md")),
            "Done: the notes say to use bullets.",
        ])
        agent = create_agent(model=model, store=Store(":memory:"))
        agent.run_sync("What format do I want?")
        model.calls[1].messages[-1].content  # the tool result as the model saw it
        model.assert_complete()
    """

    def __init__(
        self,
        responses: Iterable[Scripted],
        *,
        name: str = "scripted",
        profile: ModelProfile | None = None,
    ) -> None:
        super().__init__(name, profile)
        self._queue: list[Scripted] = list(responses)
        self._next = 0

    def add(self, *responses: Scripted) -> None:
        self._queue.extend(responses)

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        self._record(messages, settings, params)
        if self._next >= len(self._queue):
            raise HarnessError(
                f"ScriptedModel ran out of responses: {len(self._queue)} scripted, "
                f"call {len(self.calls)} asked for another"
            )
        item = self._queue[self._next]
        self._next += 1
        if isinstance(item, BaseException):
            raise item
        out = ModelResponse(text=item) if isinstance(item, str) else item
        return self._finish(messages, params, out)

    @property
    def remaining(self) -> int:
        return len(self._queue) - self._next

    def assert_complete(self) -> None:
        if self.remaining:
            raise AssertionError(f"ScriptedModel has {self.remaining} unused responses")


ModelFunction = Callable[
    [Sequence[Message], RequestParams], ModelResponse | str | Awaitable[ModelResponse | str]
]


class FunctionModel(_CountingModel):
    """Replies by calling `fn(messages, params)` (sync or async), returning a `ModelResponse`
    or a plain text. Unlike a script it can look at the request: call a tool until its result
    is in the window, then answer::

        def fn(messages, params):
            if messages[-1].role == "tool":
                return f"The export has {len(messages[-1].content)} characters."
            return reply("", call("pull_market_report", company="Acme"))

        agent = create_agent(
            model=FunctionModel(fn), tools=[pull_market_report], store=Store(":memory:")
        )
    """

    def __init__(
        self, fn: ModelFunction, *, name: str = "function", profile: ModelProfile | None = None
    ) -> None:
        super().__init__(name, profile)
        self.fn = fn

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        self._record(messages, settings, params)
        out = self.fn(messages, params)
        if inspect.isawaitable(out):
            out = await out
        out = ModelResponse(text=out) if isinstance(out, str) else out
        return self._finish(messages, params, out)


def call(name: str, call_id: str | None = None, **arguments: object) -> ToolCall:
    """Shorthand for scripts: `call("read_file", file_path="/a")`."""
    return ToolCall(id=call_id or new_id("call"), name=name, arguments=dict(arguments))


def reply(text: str = "", *calls: ToolCall) -> ModelResponse:
    """Shorthand for scripts: a response with text and tool calls."""
    return ModelResponse(text=text, tool_calls=tuple(calls))
