"""Redaction of a failed request's exception chain for the SDK adapters
(harness/models/_common.py): no secret survives in the args, attributes, or HTTP request and
response an exception carries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Headers that carry credentials: masked whole, whatever secret they hold.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


def scrub_exception_chain(exc: BaseException, redact: Callable[[str], str]) -> None:
    """Redact, in place, every exception reachable through `__cause__` / `__context__`: its
    args, notes and attributes, including the SDK's message, decoded body, and the HTTP request
    and response it carries (headers, URL and body). A traceback or a log line that prints the
    chain then shows no secret."""
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(_scrub(arg, redact) for arg in current.args)
        attributes = getattr(current, "__dict__", {})
        for name, value in list(attributes.items()):
            attributes[name] = _scrub(value, redact)
        pending += [current.__cause__, current.__context__]


def _scrub(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(value.decode("utf-8", "replace")).encode()
    if isinstance(value, dict):
        return {key: _scrub(item, redact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(item, redact) for item in value)
    if _is_http_message(value, "Request"):
        return _scrub_request(value, redact)
    if _is_http_message(value, "Response"):
        return _scrub_response(value, redact)
    return value


def _is_http_message(value: object, kind: str) -> bool:
    # httpx2, or httpx for an injected client built on the older library.
    cls = type(value)
    return cls.__name__ == kind and cls.__module__.split(".")[0] in ("httpx", "httpx2")


def _scrub_headers(headers: Any, redact: Callable[[str], str]) -> list[tuple[str, str]]:
    return [
        (name, "***" if name.lower() in _CREDENTIAL_HEADERS else redact(value))
        for name, value in headers.items()
    ]


def _scrub_request(request: Any, redact: Callable[[str], str]) -> Any:
    # Only the metadata: the body was the caller's own request.
    return type(request)(
        request.method, redact(str(request.url)), headers=_scrub_headers(request.headers, redact)
    )


def _scrub_response(response: Any, redact: Callable[[str], str]) -> Any:
    try:
        content = response.content
    except RuntimeError:  # ResponseNotRead: a streamed body nobody read has nothing to leak
        content = b""
    try:
        request = _scrub_request(response.request, redact)
    except RuntimeError:  # a response built without a request
        request = None
    headers = [
        (name, value)
        for name, value in _scrub_headers(response.headers, redact)
        # The scrubbed body has its own length and is no longer compressed.
        if name.lower() not in ("content-length", "content-encoding", "transfer-encoding")
    ]
    return type(response)(
        response.status_code,
        headers=headers,
        content=_scrub(content, redact),
        request=request,
    )
