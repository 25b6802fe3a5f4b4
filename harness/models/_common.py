"""What the SDK adapters share: naming, HTTP clients per event loop, retries, and errors that
never show the key.

The OpenAI and Anthropic SDKs are generated from one template, so their clients and error
classes have the same shape. Each adapter builds its own client (`_connect`), sends its request
through `_send` and reads its own provider's HTTP errors; clients, retries, timeouts, connection
failures, malformed payloads and redaction are handled here (the exception chain's in
harness/models/_redaction.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import random
import ssl
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import httpx2  # the HTTP library both SDKs are built on

from harness.errors import ContextOverflowError, ModelError
from harness.models._redaction import scrub_exception_chain
from harness.profiles import ModelProfile, get_profile

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_RETRY_WAIT = 60.0
# Backoff when the provider names no wait: 0.5 s doubling up to 8 s, less up to 25% jitter.
_FIRST_BACKOFF = 0.5
_MAX_BACKOFF = 8.0
# 408 request timeout, 409 lock conflict, 429 rate limit; and every 5xx.
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# What reading a provider payload raises when it lacks a field or has the wrong type
# (JSON and pydantic errors are ValueErrors).
_MALFORMED = (KeyError, IndexError, TypeError, AttributeError, ValueError)


class _URL(Protocol):
    @property
    def host(self) -> str: ...


class SDKClient(Protocol):
    """The parts of an SDK client the shared code uses."""

    @property
    def api_key(self) -> str | None: ...

    @property
    def base_url(self) -> _URL: ...

    def is_closed(self) -> bool: ...

    async def close(self) -> None: ...

    def copy(
        self, *, http_client: httpx2.AsyncClient | None = ..., max_retries: int = ...
    ) -> Self: ...


ClientT = TypeVar("ClientT", bound=SDKClient)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The TLS settings every per-loop HTTP client uses. Loading the CA bundle costs ~110 ms
    (as much as a whole client); a context is not tied to an event loop, so one is shared."""
    return httpx2.create_ssl_context()


async def _sleep(seconds: float) -> None:
    """The pause between attempts; a seam so tests can record it instead of waiting."""
    await asyncio.sleep(seconds)


class SDKModel(ABC, Generic[ClientT]):
    """Base of the SDK adapters. Keys and base URLs come from the arguments or the SDK's own
    environment variables; `client` injects a ready client instead (the caller then owns it,
    its connections and its event loop).

    max_retries: retries after a 408, 409, 429 or 5xx (unless the provider says not to with
        `x-should-retry: false`), a timeout or a failed connection.
    max_retry_wait: the longest wait before a retry, in seconds. A provider's `Retry-After`
        (or `retry-after-ms`) is honoured up to this; a longer one is cut to it.
    """

    prefix: ClassVar[str]
    # The SDK's base error, its HTTP status error and its timeout and connection errors.
    _sdk_error: ClassVar[type[Exception]]
    _status_error: ClassVar[type[Exception]]
    _timeout_error: ClassVar[type[Exception]]
    _connection_error: ClassVar[type[Exception]]

    def __init__(
        self,
        model_name: str,
        *,
        profile: ModelProfile | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        client: ClientT | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if not max_retry_wait >= 0:
            raise ValueError(f"max_retry_wait must be >= 0 seconds, got {max_retry_wait}")
        self.model = model_name
        # The spec resolve_model accepts, so a run's recorded model name can be resolved again.
        self.name = f"{self.prefix}:{model_name}"
        self.profile = profile or get_profile(self.name)
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._owns_client = client is None
        if client is None:
            # Built now so missing credentials fail here; requests go through per-loop copies.
            # The SDK does not retry: `_send` does, so that waits are capped and logged.
            client = self._connect(api_key=api_key, base_url=base_url, timeout=timeout)
        self._client: ClientT = client
        self._loop_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[ClientT, AsyncIterator[None]]
        ] = weakref.WeakKeyDictionary()

    @abstractmethod
    def _connect(self, *, api_key: str | None, base_url: str | None, timeout: float) -> ClientT:
        """The SDK client, without SDK retries; raises `ModelError` saying which variable to
        set when there are no credentials, rather than letting the first request fail
        obscurely."""

    @abstractmethod
    def _new_http_client(self) -> httpx2.AsyncClient:
        """A fresh async HTTP client with the SDK's defaults and `shared_ssl_context()`."""

    @abstractmethod
    def _error(self, exc: Exception) -> ModelError:
        """The harness error for an SDK failure retries did not fix."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, host={self._client.base_url.host!r})"

    # ---- clients -------------------------------------------------------------------------

    async def _loop_client(self) -> ClientT:
        """The client for the running event loop, closed when that loop shuts down.

        An HTTP client's pooled connections belong to the loop that opened them; `run_sync`
        makes a new loop per run, and a connection carried into the next one fails there
        ("Event loop is closed") or is silently retried."""
        if not self._owns_client:
            return self._client
        loop = asyncio.get_running_loop()
        entry = self._loop_clients.get(loop)
        # A loop that already shut its generators down and runs again gets a new client.
        if entry is None or entry[0].is_closed():
            client = self._client.copy(http_client=self._new_http_client(), max_retries=0)
            closer = _close_at_loop_shutdown(client)
            entry = self._loop_clients[loop] = (client, closer)
            # Started, the generator is known to the loop, which closes it (and so the client)
            # in `shutdown_asyncgens`, as `asyncio.run` does before closing.
            await anext(closer)
        return entry[0]

    # ---- sending -------------------------------------------------------------------------

    async def _send(self, call: Callable[[ClientT], Awaitable[T]]) -> T:
        """`call` with the loop's client, retried on transient failures; any SDK failure left
        becomes a `ModelError` whose whole exception chain is redacted."""
        client = await self._loop_client()
        for attempt in range(self.max_retries + 1):
            try:
                return await call(client)
            except ValueError as exc:
                # The SDK decodes the body inside the call: invalid JSON surfaces here.
                raise self._malformed(exc) from exc
            except self._sdk_error as exc:
                if attempt < self.max_retries and self._retryable(exc):
                    delay = self._retry_delay(exc, attempt)
                    log.info(
                        "%s: %s; retry %d of %d in %.2f s",
                        self.name,
                        self._failure_summary(exc),
                        attempt + 1,
                        self.max_retries,
                        delay,
                    )
                    await _sleep(delay)
                    continue
                error = self._error(exc)
                scrub_exception_chain(exc, self._redact)
                raise error from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _retryable(self, exc: Exception) -> bool:
        if isinstance(exc, self._status_error):
            response = getattr(exc, "response", None)
            verdict = response.headers.get("x-should-retry") if response is not None else None
            if verdict in ("true", "false"):
                return verdict == "true"
            status = int(getattr(exc, "status_code", 0))
            return status in _RETRYABLE_STATUS or status >= 500
        return isinstance(exc, self._timeout_error | self._connection_error)

    def _retry_delay(self, exc: Exception, attempt: int) -> float:
        response = getattr(exc, "response", None)
        asked = retry_after(response.headers) if response is not None else None
        if asked is not None and asked > 0:
            return min(asked, self.max_retry_wait)
        backoff = min(_FIRST_BACKOFF * 2.0**attempt, _MAX_BACKOFF) * (1 - 0.25 * random.random())
        return min(backoff, self.max_retry_wait)

    def _failure_summary(self, exc: Exception) -> str:
        # Only the status or the kind of failure: the provider's message may echo a secret.
        status = getattr(exc, "status_code", None)
        return f"HTTP {status}" if isinstance(status, int) else type(exc).__name__

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Turns a payload that lacks a field or has the wrong type into a `ModelError` naming
        the provider, never a raw KeyError / TypeError / validation error."""
        try:
            yield
        except _MALFORMED as exc:
            raise self._malformed(exc) from exc

    def _malformed(self, exc: Exception) -> ModelError:
        scrub_exception_chain(exc, self._redact)
        return ModelError(
            self._redact(f"{self.name}: malformed response: {type(exc).__name__}: {exc}")
        )

    # ---- errors --------------------------------------------------------------------------

    def _secrets(self) -> Iterable[object]:
        return (self._client.api_key,)

    def _redact(self, text: str) -> str:
        # Provider messages sometimes echo request details; never let a key through.
        for secret in self._secrets():
            if isinstance(secret, str) and len(secret) >= 8:
                text = text.replace(secret, "***")
        return text

    def _overflow(
        self, detail: str, tokens: int | None, limit: int | None, status: int | None = None
    ) -> ContextOverflowError:
        return ContextOverflowError(
            self._redact(f"{self.name}: context overflow: {detail}"),
            tokens=tokens,
            limit=limit,
            status_code=status,
        )

    def _http_error(self, status: int, detail: str) -> ModelError:
        return ModelError(self._redact(f"{self.name}: HTTP {status}: {detail}"), status_code=status)

    def _transport_error(self, exc: Exception) -> ModelError:
        """The error for an SDK failure without an HTTP status that retries did not fix: a
        timeout, a connection that never got through, or a payload the SDK could not read."""
        if isinstance(exc, self._timeout_error):
            return ModelError(f"{self.name}: request timed out after {self.max_retries} retries")
        if isinstance(exc, self._connection_error):
            # The SDK's own text is a bare "Connection error."; the root cause says why.
            return ModelError(self._redact(f"{self.name}: connection failed: {root_cause(exc)}"))
        return ModelError(self._redact(f"{self.name}: {type(exc).__name__}: {exc}"))


async def _close_at_loop_shutdown(client: SDKClient) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.close()


def text(value: object, field: str, *, required: bool = False) -> str:
    """A string field of a payload; None reads as "" unless the field is `required`."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{field} is {type(value).__name__}, not a string")
    return value


def count(value: object, field: str) -> int:
    """A token count of a payload; None reads as 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{field} is {value!r}, not a token count")
    return value


def retry_after(headers: Any) -> float | None:
    """Seconds a provider asks to wait: `retry-after-ms`, else `retry-after` as seconds or as
    an HTTP date; None when absent or unreadable."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        return seconds if seconds == seconds else None  # NaN asks for nothing
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - time.time()


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a `__cause__` / `__context__` chain."""
    seen = {id(exc)}
    while (inner := exc.__cause__ or exc.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    return exc
