"""A key the provider echoes in an error body shows nowhere: not in the raised `ModelError`,
not in any exception of its `__cause__` / `__context__` chain (the SDK's message, decoded body,
HTTP response and request included), not in the printed traceback, not in any log line."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator

import pytest
from helpers.fake_provider import Failure, FakeProvider, echo_key, unauthorized
from helpers.models import ask
from helpers.sdk_adapters import Adapter

from harness.agent import Agent
from harness.errors import ModelError

SECRET = "sk-explicit-SECRET-9876543210"


pytestmark = pytest.mark.usefixtures("sdk_keys")


def chain(exc: BaseException) -> Iterator[BaseException]:
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [current.__cause__, current.__context__]


def http_texts(value: object) -> list[str]:
    """What an httpx request or response held by an exception would show when inspected."""
    texts: list[str] = []
    for attr in ("request", "response"):
        message = getattr(value, attr, None)
        if message is None:
            continue
        texts += [str(message.url) if attr == "request" else message.text, repr(message)]
        texts += [f"{k}: {v}" for k, v in message.headers.items()]
        if attr == "response":
            texts += http_texts(message)
    return texts


@pytest.mark.parametrize("failure", [unauthorized(), echo_key(400), echo_key(500)])
def test_echoed_key_is_nowhere_in_the_chain_or_the_logs(
    adapter: Adapter,
    fake_provider: FakeProvider,
    caplog: pytest.LogCaptureFixture,
    failure: Failure,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: the harness's, the SDK's, httpx's
    model = adapter.factory(fake_provider.url)(api_key=SECRET, max_retries=1)
    # A 500 is retried once (a logged retry) before the error is raised.
    fake_provider.script(failure, failure)

    with pytest.raises(ModelError) as caught:
        ask(model)

    assert fake_provider.requests[0].api_key == SECRET
    exceptions = list(chain(caught.value))
    # The SDK's error stays in the chain (a step runner classifies retries by it), redacted.
    assert len(exceptions) >= 2
    assert any(getattr(e, "status_code", None) == failure.status for e in exceptions[1:])
    for exc in exceptions:
        shown = [str(exc), repr(exc), *map(repr, exc.args), *map(repr, vars(exc).values())]
        shown += http_texts(exc)
        leaks = [text for text in shown if SECRET in text]
        assert leaks == [], f"{type(exc).__name__} shows the key"
    printed = "".join(traceback.format_exception(caught.value))
    assert SECRET not in printed
    assert "***" in printed  # the server echoed the key and it was masked, not dropped
    logged = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    assert not [line for line in logged if SECRET in line]


def test_retry_log_line_names_the_status(
    adapter: Adapter, fake_provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="harness")
    model = adapter.factory(fake_provider.url)(api_key=SECRET, max_retries=1)
    fake_provider.script(echo_key(503), echo_key(503))
    with pytest.raises(ModelError, match="HTTP 503"):
        ask(model)
    retries = [r.getMessage() for r in caplog.records if r.name.startswith("harness")]
    assert len(retries) == 1 and "HTTP 503" in retries[0] and "retry 1 of 1" in retries[0]
    assert SECRET not in retries[0]


def test_a_failed_agent_run_stores_and_logs_no_key(
    adapter: Adapter,
    fake_provider: FakeProvider,
    bare_agent: Callable[..., Agent],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = bare_agent(adapter.factory(fake_provider.url)(api_key=SECRET, max_retries=0))
    fake_provider.script(echo_key(400))
    with pytest.raises(ModelError) as caught:
        agent.run_sync("hi")
    stored = agent.store.runs.all()
    assert [row["status"] for row in stored] == ["failed"]
    assert "***" in stored[0]["error"] and SECRET not in stored[0]["error"]
    assert SECRET not in "".join(traceback.format_exception(caught.value))
    assert SECRET not in caplog.text
