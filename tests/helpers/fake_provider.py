"""A local fake of the OpenAI and Anthropic HTTP APIs, for adapter tests.

The SDKs sit on httpx2, which respx / pytest-httpx cannot intercept, so the adapters are tested
against a real HTTP server on 127.0.0.1. It speaks three wire formats:

- POST /v1/responses          OpenAI Responses
- POST /v1/chat/completions   OpenAI Chat Completions
- POST /v1/messages           Anthropic Messages

Replies are scripted per test in a provider-neutral way (`Turn`, `Failure`, or `Raw` bytes for
malformed payloads) and rendered in the wire format of whichever endpoint the client called.
Every request is recorded and counted on the server side, as is every connection.

Like every real provider it speaks HTTP/1.1 and keeps connections alive (each reply carries a
Content-Length), so a client that reuses a pooled connection across event loops is caught;
`FakeProvider(keep_alive=False)` answers as HTTP/1.0 and closes each connection instead.

    with FakeProvider() as fake:
        fake.script(tool_turn(FakeCall("call_1", "read", {"path": "a"})), final("done"))
        model = OpenAIResponsesModel("gpt-6.2-sol", base_url=fake.openai_base_url)
        ...
        assert fake.requests[1].body["input"][-1]["type"] == "function_call_output"
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class FakeProvider:
    """The server, started by `with FakeProvider() as fake:` (or `start()` / `close()`).

    keep_alive: HTTP/1.1 with persistent connections (default, as real providers); False for
    HTTP/1.0 with `Connection: close` after every reply.
    """

    def __init__(self, *, keep_alive: bool = True) -> None:
        self.keep_alive = keep_alive
        self.requests: list[RecordedRequest] = []
        self.connections = 0  # TCP connections accepted
        self._queue: list[Reply] = []
        # Answers a request from its body once the scripted replies are used up: a double
        # that plays a real model's part (it reads the request) rather than a fixed script.
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self._lock = threading.Lock()
        # Set on close so that a handler sleeping for a `slow` reply ends with the test.
        self._closing = threading.Event()
        self._open: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeProvider:
        handler = type(
            "_BoundHandler",
            (_Handler,),
            {"provider": self, "protocol_version": "HTTP/1.1" if self.keep_alive else "HTTP/1.0"},
        )
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll interval so close() (which waits for the loop to notice) is quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            kept_open, self._open = list(self._open), set()
        for sock in kept_open:
            # A kept-alive connection's handler waits for the next request; wake it up (the
            # client may have dropped the socket already).
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeProvider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        # The Anthropic SDK appends /v1/messages itself.
        return self.url

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def request_count(self) -> int:
        """Requests that reached a provider route, retries included."""
        with self._lock:
            return len(self.requests)

    @property
    def open_connections(self) -> int:
        """Connections the client has not closed yet."""
        with self._lock:
            return len(self._open)

    def _connected(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._open.add(sock)

    def _disconnected(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)

    def bodies(self, path: str | None = None) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if path is None or r.path == path]

    def _next(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        return self.responder(request) if self.responder is not None else None


class _Handler(BaseHTTPRequestHandler):
    provider: FakeProvider
    request_id = ""  # of the request being answered: providers send one with every reply

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        self.provider._connected(self.connection)

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client may drop a kept-alive connection
            super().handle()

    def finish(self) -> None:
        self.provider._disconnected(self.connection)
        with contextlib.suppress(OSError):  # the client already dropped the connection
            super().finish()

    def do_POST(self) -> None:
        if self.headers.get("content-length") is None:
            # Strict, as the real APIs: without a length the body's end is unknown, and on a
            # kept-alive connection the next request would be misread.
            self.close_connection = True
            self._send(411, {"error": {"message": "FakeProvider: Content-Length required"}})
            return
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw or b"{}")
        request = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        if self.path not in _RENDER:
            self._send(404, {"error": {"message": f"FakeProvider: no route {self.path}"}})
            return
        problem = _chat_problem(body) if self.path == "/v1/chat/completions" else None
        if problem is not None:
            self._send(400, {"error": {"message": f"FakeProvider: {problem}"}})
            return
        reply = self.provider._next(request)
        self.request_id = f"req_fake{self.provider.request_count}"
        if reply is None:
            # Tell the SDK not to retry so the test fails at once with this message.
            payload = {"error": {"message": "FakeProvider: no scripted reply left"}}
            self._send(500, payload, {"x-should-retry": "false"})
        elif isinstance(reply, Failure):
            self._fail(reply, request)
        elif isinstance(reply, Raw):
            self._send_bytes(reply.status, reply.encoded(), {"content-type": reply.content_type})
        else:
            if reply.delay and self.provider._closing.wait(reply.delay):
                return
            self._send(200, _RENDER[self.path](reply, body.get("model", "fake-model")))

    def _fail(self, failure: Failure, request: RecordedRequest) -> None:
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        key = key.removeprefix("Bearer ")
        payload: dict[str, Any]
        if self.path == "/v1/messages":
            kind, message = _ANTHROPIC_ERRORS[failure.kind]
            error = {"type": kind, "message": message.format(key=key)}
            payload = {"type": "error", "error": error, "request_id": self.request_id}
        else:
            kind, code, message = _OPENAI_ERRORS[failure.kind]
            if failure.kind == "overflow":
                message = _OPENAI_OVERFLOW[self.path]
            error = {"message": message.format(key=key), "type": kind, "param": None, "code": code}
            payload = {"error": error}
        headers = dict(failure.headers)
        if failure.retry_after is not None:
            headers["retry-after"] = str(failure.retry_after)
        self._send(failure.status, payload, headers)

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        headers = {"content-type": "application/json", **(headers or {})}
        if self.request_id:
            id_header = "request-id" if self.path == "/v1/messages" else "x-request-id"
            headers[id_header] = self.request_id
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            if not self.provider.keep_alive or self.close_connection:
                self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test): nothing left to answer


_ANTHROPIC_ERRORS: dict[str, tuple[str, str]] = {  # kind -> (error.type, message)
    "overflow": ("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
    "rate_limit": ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    "server_error": ("api_error", "Internal server error"),
    "too_large": ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    "unauthorized": ("authentication_error", "invalid x-api-key: {key}"),
    "echo_key": ("invalid_request_error", "request with key {key} was rejected"),
}
_OPENAI_ERRORS: dict[str, tuple[str, str | None, str]] = {  # kind -> (type, code, message)
    "overflow": ("invalid_request_error", "context_length_exceeded", ""),
    "rate_limit": ("requests", "rate_limit_exceeded", "Rate limit reached. Try again later."),
    "server_error": ("server_error", None, "The server had an error processing your request."),
    "too_large": ("invalid_request_error", None, "Request body too large."),
    "unauthorized": ("invalid_request_error", "invalid_api_key", "Incorrect API key: {key}."),
    "echo_key": ("invalid_request_error", None, "Request with key {key} was rejected."),
}
_OPENAI_OVERFLOW = {
    "/v1/responses": "Your input exceeds the context window of this model. "
    "Please adjust your input and try again.",
    "/v1/chat/completions": "This model's maximum context length is 128000 tokens. However, "
    "your messages resulted in 250000 tokens. Please reduce the length of the messages.",
}


def _chat_problem(body: dict[str, Any]) -> str | None:
    """What a Chat Completions server would refuse in `body`, as strict as the real API: a
    model and messages, and each tool message answering a call the assistant made before it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    called: set[str] = set()
    for m in messages:
        called.update(c["id"] for c in m.get("tool_calls") or ())
        if m.get("role") == "tool" and m.get("tool_call_id") not in called:
            return f"tool message answers no earlier tool call: {m.get('tool_call_id')!r}"
    return None


def _arguments(call: FakeCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _render_responses(turn: Turn, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": "rs_fake1",
                "summary": [{"type": "summary_text", "text": "thinking it over"}],
                "encrypted_content": "opaque-reasoning-state",
            }
        )
    if turn.text:
        output.append(
            {
                "type": "message",
                "id": "msg_fake1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{c.id}",
            "call_id": c.id,
            "name": c.name,
            "arguments": _arguments(c),
            "status": "completed",
        }
        for c in turn.calls
    )
    incomplete = turn.stop is not None
    return {
        "id": "resp_fake1",
        "object": "response",
        "created_at": 1_800_000_000,
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "output": output,
        "usage": {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {
                "cached_tokens": turn.cached_tokens,
                "cache_write_tokens": turn.cache_write_tokens,
            },
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        },
    }


def _render_chat(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments(c)},
            }
            for c in turn.calls
        ]
    finish = "tool_calls" if turn.calls else "stop"
    if turn.stop is not None:
        finish = "length" if turn.stop == "max_tokens" else turn.stop
    return {
        "id": "chatcmpl-fake1",
        "object": "chat.completion",
        "created": 1_800_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": turn.input_tokens,
            "completion_tokens": turn.output_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.cached_tokens},
        },
    }


def _render_anthropic(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.reasoning:
        content.append({"type": "thinking", "thinking": "thinking it over", "signature": "sig"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.calls
    )
    stop = turn.stop or ("tool_use" if turn.calls else "end_turn")
    return {
        "id": "msg_fake1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            # Anthropic reports cache reads and writes apart from input_tokens.
            "input_tokens": turn.input_tokens - turn.cached_tokens - turn.cache_write_tokens,
            "output_tokens": turn.output_tokens,
            "cache_read_input_tokens": turn.cached_tokens,
            "cache_creation_input_tokens": turn.cache_write_tokens,
        },
    }


_RENDER = {
    "/v1/responses": _render_responses,
    "/v1/chat/completions": _render_chat,
    "/v1/messages": _render_anthropic,
}
