"""Provider-neutral conversation values: messages, tool calls, usage, model responses."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


# Ids drawn per `os.urandom` call: one system call per block instead of one per message.
ID_BLOCK = 256
_ID_BYTES = 10
# Hex digits of ready ids; `popleft` is atomic, so threads never share one.
_ids: deque[str] = deque()


def new_id(prefix: str = "msg") -> str:
    """`prefix` and the first 20 hex digits of a random UUID (version 4), made without the
    `UUID` object (a third of the cost: the harness makes one per message), from a pool that
    `os.urandom` refills ID_BLOCK ids at a time."""
    while True:
        try:
            return f"{prefix}_{_ids.popleft()}"
        except IndexError:  # empty, or another thread took the last ones since the refill
            _refill()


def _refill() -> None:
    block = bytearray(os.urandom(_ID_BYTES * ID_BLOCK))
    for at in range(0, len(block), _ID_BYTES):
        block[at + 6] = block[at + 6] & 0x0F | 0x40  # the version, as `uuid.uuid4` sets it
        block[at + 8] = block[at + 8] & 0x3F | 0x80  # the variant
    hexed = block.hex()
    width = 2 * _ID_BYTES
    _ids.extend(hexed[i : i + width] for i in range(0, len(hexed), width))


# A forked child drops the ids it inherited: parent and child would hand out the same ones.
os.register_at_fork(after_in_child=_ids.clear)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool invocation requested by the model. `arguments` is the decoded JSON object;
    `raw_arguments` keeps the provider's text when it could not be decoded."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)
    raw_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation item.

    `content` is what the model sees. When a middleware replaced a large text by a preview
    (offloading), the original is kept so nothing is lost: `full_ref` names the store blob
    that holds it (the message holds no second copy; `store.messages.transcript` resolves it), or
    `full_content` holds the text itself (messages stored before blobs were referenced, or
    built by hand).
    `kind` marks synthetic messages (summaries, placeholders) so replay and analysis can tell
    them from what the user, model or tools produced.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    id: str = field(default_factory=new_id)
    kind: str = "message"
    # Left out of repr: asyncio formats a finished run task with its result at exit, and a
    # 100 MB offloaded original would be copied twice for it.
    full_content: str | None = field(default=None, repr=False)
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    full_ref: str | None = None

    def with_content(self, content: str, **changes: Any) -> Message:
        """A copy with new content and a new id: token counts are cached per id."""
        return replace(self, content=content, id=new_id(), **changes)


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant(text: str = "", tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ()) -> Message:
    return Message(role="assistant", content=text, tool_calls=tuple(tool_calls))


def tool_result(call: ToolCall, content: str, *, is_error: bool = False) -> Message:
    return Message(
        role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error
    )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage. `input_tokens` includes cached reads and cache writes (normalised across
    providers: Anthropic reports them separately, OpenAI includes them)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            requests=self.requests + other.requests,
            cost_usd=self.cost_usd + other.cost_usd,
        )

    def with_call(self, call: Usage, cost_usd: float) -> Usage:
        """This total and one more request of `call`'s tokens at `cost_usd` (whatever `call`
        says of requests and cost): `self + replace(call, requests=1, cost_usd=cost_usd)`,
        without the copy, once per model call."""
        return Usage(
            self.input_tokens + call.input_tokens,
            self.output_tokens + call.output_tokens,
            self.cached_tokens + call.cached_tokens,
            self.cache_write_tokens + call.cache_write_tokens,
            self.requests + 1,
            self.cost_usd + cost_usd,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


StopReason = Literal["end_turn", "tool_calls", "max_tokens", "context_overflow", "other"]


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    stop_reason: StopReason = "end_turn"
    model_name: str = ""
    # Provider-native output items that must be echoed back verbatim on the next turn
    # (e.g. OpenAI Responses reasoning items). Never persisted with secrets.
    provider_items: tuple[dict[str, Any], ...] = field(default=(), hash=False)

    def to_message(self) -> Message:
        meta = {"provider_items": list(self.provider_items)} if self.provider_items else {}
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls, meta=meta)
