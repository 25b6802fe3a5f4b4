"""Retries of the SDK adapters: a provider's `Retry-After` is honoured up to `max_retry_wait`
(default 60 s), never longer; other transient failures back off; waits are recorded here, not
slept."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable

import pytest
from helpers.fake_provider import (
    Failure,
    FakeProvider,
    Raw,
    Reply,
    final,
    rate_limited,
    server_error,
    slow,
)
from helpers.models import ask
from helpers.sdk_adapters import ADAPTERS, Adapter

from harness.errors import ModelError
from harness.models import Model, _common
from harness.models._common import DEFAULT_MAX_RETRY_WAIT, retry_after

Build = Callable[..., Model]


pytestmark = pytest.mark.usefixtures("sdk_keys")


@pytest.fixture(params=sorted(ADAPTERS))
def build(request: pytest.FixtureRequest, fake_provider: FakeProvider) -> Build:
    adapter: Adapter = ADAPTERS[request.param]
    return adapter.factory(fake_provider.url)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every pause the adapters ask for before a retry, without waiting."""
    asked: list[float] = []

    async def record(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(_common, "_sleep", record)
    return asked


def test_long_retry_after_is_capped_at_the_default(
    build: Build, fake_provider: FakeProvider, waits: list[float]
) -> None:
    fake_provider.script(rate_limited(retry_after=120), final("ok"))
    started = time.monotonic()
    assert ask(build()).text == "ok"
    assert waits == [DEFAULT_MAX_RETRY_WAIT] == [60.0]
    assert fake_provider.request_count == 2
    assert time.monotonic() - started < 5  # nothing slept the 120 s either


def test_max_retry_wait_is_configurable(
    build: Build, fake_provider: FakeProvider, waits: list[float]
) -> None:
    fake_provider.script(rate_limited(retry_after=120), server_error(retry_after=3), final("ok"))
    assert ask(build(max_retry_wait=5)).text == "ok"
    assert waits == [5, 3]  # a shorter Retry-After is honoured as asked


def test_without_retry_after_the_backoff_grows(
    build: Build, fake_provider: FakeProvider, waits: list[float]
) -> None:
    fake_provider.script(*[server_error()] * 3, final("ok"))
    assert ask(build(max_retries=3)).text == "ok"
    assert len(waits) == 3
    for attempt, wait in enumerate(waits):
        assert 0.75 * 0.5 * 2**attempt <= wait <= 0.5 * 2**attempt


def test_retry_after_ms_and_http_dates(
    build: Build, fake_provider: FakeProvider, waits: list[float]
) -> None:
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    fake_provider.script(
        Failure(429, "rate_limit", headers={"retry-after-ms": "1500", "retry-after": "9"}),
        Failure(429, "rate_limit", headers={"retry-after": later}),
        final("ok"),
    )
    assert ask(build(max_retries=2)).text == "ok"
    assert waits == [1.5, 60.0]


def test_client_errors_and_should_retry_false_are_not_retried(
    build: Build, fake_provider: FakeProvider, waits: list[float]
) -> None:
    fake_provider.script(Failure(500, "server_error", headers={"x-should-retry": "false"}))
    with pytest.raises(ModelError, match="HTTP 500") as caught:
        ask(build())
    assert caught.value.status_code == 500
    fake_provider.script(Failure(400, "too_large"))
    with pytest.raises(ModelError, match="HTTP 400"):
        ask(build())
    assert fake_provider.request_count == 2 and waits == []


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_parsing(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers) == seconds


def test_bad_settings_are_refused() -> None:
    adapter = ADAPTERS["openai"]
    with pytest.raises(ValueError, match="max_retry_wait"):
        adapter.factory("http://127.0.0.1:9")(api_key="sk-x-0123456789", max_retry_wait=-1)
    with pytest.raises(ValueError, match="max_retries"):
        adapter.factory("http://127.0.0.1:9")(api_key="sk-x-0123456789", max_retries=-1)


@pytest.mark.parametrize(
    ("reply", "transient"),
    [
        (rate_limited(), True),
        (server_error(), True),
        (Failure(400, "too_large"), False),
        (Failure(400, "overflow"), False),
        (Raw(b"{not json"), False),
    ],
)
def test_the_flow_runner_still_tells_transient_errors_apart(
    build: Build, fake_provider: FakeProvider, waits: list[float], reply: Reply, transient: bool
) -> None:
    """The Prefect step runner retries a model step again later when the adapter's own retries
    ran out on a rate limit or a server error; it reads that from the error and its chain."""
    from flows.runner import is_transient

    fake_provider.script(reply)
    with pytest.raises(ModelError) as caught:
        ask(build(max_retries=0))
    assert is_transient(caught.value) is transient


def test_the_flow_runner_retries_a_timeout(build: Build, fake_provider: FakeProvider) -> None:
    from flows.runner import is_transient

    fake_provider.script(slow(5))
    with pytest.raises(ModelError, match="timed out") as caught:
        ask(build(timeout=0.3, max_retries=0))
    assert is_transient(caught.value)
