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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The scripted replies are imported from here by the tests, as they always were.
from helpers.fake_replies import (
    Failure,
    FailureKind,
    FakeCall,
    Raw,
    RecordedRequest,
    Reply,
    Turn,
    echo_key,
    final,
    overflow,
    rate_limited,
    server_error,
    slow,
    too_large,
    tool_turn,
    unauthorized,
)
from helpers.fake_wire import RENDER, chat_problem, error_body

__all__ = [
    "FakeCall", "FakeProvider", "Failure", "FailureKind", "Raw", "RecordedRequest", "Reply",
    "Turn", "echo_key", "final", "overflow", "rate_limited", "server_error", "slow",
    "too_large", "tool_turn", "unauthorized",
]  # fmt: skip


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
        if self.path not in RENDER:
            self._send(404, {"error": {"message": f"FakeProvider: no route {self.path}"}})
            return
        problem = chat_problem(body) if self.path == "/v1/chat/completions" else None
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
            self._send(200, RENDER[self.path](reply, body.get("model", "fake-model")))

    def _fail(self, failure: Failure, request: RecordedRequest) -> None:
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        key = key.removeprefix("Bearer ")
        payload = error_body(self.path, failure.kind, key, self.request_id)
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
