"""What every SDK adapter promises (harness/models/_common.py), checked against the local fake
provider for each: rate limits are retried, failures become `ModelError`, a timeout says so,
and the API key never shows in an error or a repr."""

from __future__ import annotations

import time

import pytest
from helpers.fake_provider import (
    FakeProvider,
    final,
    rate_limited,
    server_error,
    slow,
    unauthorized,
)
from helpers.models import ask
from helpers.sdk_adapters import Adapter, Build

from harness.errors import ContextOverflowError, ModelError
from harness.models import RequestParams

PARAMS = RequestParams(system_prompt="You are terse.")


pytestmark = pytest.mark.usefixtures("sdk_keys")


@pytest.fixture
def build(adapter: Adapter, fake_provider: FakeProvider) -> Build:
    return adapter.factory(fake_provider.url)


def test_rate_limit_is_retried_then_succeeds(build: Build, fake_provider: FakeProvider) -> None:
    fake_provider.script(rate_limited(retry_after=0.01), final("ok"))
    assert ask(build(), params=PARAMS).text == "ok"
    assert len(fake_provider.requests) == 2


def test_server_error_gives_model_error_after_retries(
    build: Build, fake_provider: FakeProvider
) -> None:
    # A tiny retry-after keeps the SDK's backoff from slowing the test down.
    fake_provider.script(*[server_error(retry_after=0.01)] * 3)
    with pytest.raises(ModelError, match="HTTP 500") as caught:
        ask(build(max_retries=2), params=PARAMS)
    assert not isinstance(caught.value, ContextOverflowError)
    assert len(fake_provider.requests) == 3


def test_timeout_gives_model_error(build: Build, fake_provider: FakeProvider) -> None:
    fake_provider.script(slow(5))
    started = time.monotonic()
    with pytest.raises(ModelError, match="timed out"):
        ask(build(timeout=0.5, max_retries=0), params=PARAMS)
    assert time.monotonic() - started < 3


def test_api_key_never_leaks(build: Build, fake_provider: FakeProvider) -> None:
    secret = "sk-explicit-SECRET-9876543210"
    model = build(api_key=secret)
    fake_provider.script(unauthorized())
    with pytest.raises(ModelError) as caught:
        ask(model, params=PARAMS)
    assert fake_provider.requests[0].api_key == secret
    assert secret not in str(caught.value) and secret not in repr(caught.value)
    assert "***" in str(caught.value)  # the server echoed it; the adapter redacted it
    assert secret not in repr(model) and "127.0.0.1" in repr(model)


def test_missing_key_is_a_clear_error(adapter: Adapter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(adapter.key_variable)
    with pytest.raises(ModelError, match=adapter.key_variable):
        adapter.factory("http://127.0.0.1:9")()
