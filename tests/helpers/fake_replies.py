"""What the fake provider (fake_provider.py) is scripted to answer, in no provider's wire
format: a `Turn` (text and tool calls, with usage), a `Failure` (an HTTP error by kind) or `Raw`
bytes; and the `RecordedRequest` it keeps of each request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

FailureKind = Literal[
    "overflow", "rate_limit", "server_error", "too_large", "unauthorized", "echo_key"
]


@dataclass(frozen=True)
class FakeCall:
    """A tool call the fake model makes. A `str` argument is sent as is (e.g. invalid JSON)."""

    id: str
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """One successful reply. Token counts follow the harness convention: `input_tokens`
    includes cached reads and cache writes (rendered per provider, so Anthropic's wire
    `input_tokens` excludes them).

    stop: provider-native override of the stop reason: "max_tokens" (rendered as the
    provider's own spelling) or any literal the endpoint should send, e.g.
    "model_context_window_exceeded".
    reasoning: add a reasoning item (OpenAI Responses) / thinking block (Anthropic) that the
    client must echo back.
    delay: seconds to wait before answering (client timeout tests).
    """

    text: str = ""
    calls: tuple[FakeCall, ...] = ()
    input_tokens: int = 100
    output_tokens: int = 10
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    stop: str | None = None
    reasoning: bool = False
    delay: float = 0.0


@dataclass(frozen=True)
class Failure:
    """An HTTP error in the provider's real error JSON shape. `retry_after` (seconds) is sent
    as a `retry-after` header when set; `headers` are sent as given (e.g. `retry-after-ms`,
    `x-should-retry`)."""

    status: int
    kind: FailureKind
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Raw:
    """A reply sent byte for byte, for payloads no provider should send (invalid JSON, missing
    fields, wrong types)."""

    body: bytes | str | dict[str, Any] | list[Any]
    status: int = 200
    content_type: str = "application/json"

    def encoded(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


def final(text: str = "done", **turn: Any) -> Turn:
    return Turn(text=text, **turn)


def tool_turn(*calls: FakeCall, text: str = "", **turn: Any) -> Turn:
    return Turn(text=text, calls=calls, **turn)


def slow(seconds: float, text: str = "too late") -> Turn:
    return Turn(text=text, delay=seconds)


def overflow() -> Failure:
    return Failure(400, "overflow")


def rate_limited(retry_after: float = 0.01) -> Failure:
    return Failure(429, "rate_limit", retry_after)


def server_error(retry_after: float | None = None) -> Failure:
    return Failure(500, "server_error", retry_after)


def too_large() -> Failure:
    return Failure(413, "too_large")


def unauthorized() -> Failure:
    """A 401 whose message echoes the received key verbatim (worse than real providers, which
    mask it), to prove the adapters redact it."""
    return Failure(401, "unauthorized")


def echo_key(status: int = 400, retry_after: float | None = 0.01) -> Failure:
    """Any error status whose message echoes the received key, e.g. a 500 that the client
    retries before giving up."""
    return Failure(status, "echo_key", retry_after)


Reply = Turn | Failure | Raw


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]

    @property
    def api_key(self) -> str:
        """The key the client sent: as x-api-key (older Anthropic SDKs) or a bearer token."""
        return self.headers.get("x-api-key") or self.headers["authorization"].removeprefix(
            "Bearer "
        )
