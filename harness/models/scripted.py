"""Test doubles shipped with the harness: a queue of responses and a function-backed model."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.messages import Message, ModelResponse, ToolCall, Usage, new_id
from harness.models.base import ModelSettings, RequestParams
from harness.profiles import ModelProfile, get_profile
from harness.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One recorded request to a test double."""

    messages: tuple[Message, ...]
    settings: ModelSettings
    params: RequestParams


class _CountingModel:
    """Shared bookkeeping: records calls and reports usage counted with tiktoken, so token
    accounting in tests behaves like a real provider's."""

    def __init__(self, name: str, profile: ModelProfile | None) -> None:
        self.name = name
        self.profile = profile or get_profile("test").with_name(name)
        self.calls: list[ModelCall] = []
        self._counter = TokenCounter(self.profile.encoding)

    def _record(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> None:
        self.calls.append(ModelCall(tuple(messages), settings, params))

    def _usage(
        self, messages: Sequence[Message], params: RequestParams, out: ModelResponse
    ) -> Usage:
        if out.usage.requests:
            return out.usage
        n_in = self._counter.count_request(params.system_prompt, messages, params.tools)
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
    `.assert_complete()` checks the whole script was consumed."""

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
    or a plain text."""

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
