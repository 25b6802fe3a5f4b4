"""One agent, several runs, on a provider that keeps HTTP/1.1 connections alive (as every real
one does). `run_sync` makes a new event loop per run, so an adapter must not carry a pooled
connection from one loop into the next; the fake provider counts what reached it."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_provider import FakeCall, FakeProvider, final, tool_turn
from helpers.sdk_adapters import ADAPTERS, KEYS, Adapter
from helpers.waiting import poll

from harness.agent import Agent
from harness.messages import user
from harness.models import ModelSettings, RequestParams
from harness.tools import tool

RUNS = 3


pytestmark = pytest.mark.usefixtures("sdk_keys")


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What Python would print as "Exception ignored in ..." (e.g. a client closed on a dead
    event loop when it is garbage collected)."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(repr(info.exc_value)))
    yield seen


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def agent_on(
    adapter: Adapter, fake: FakeProvider, bare_agent: Callable[..., Agent], **kw: Any
) -> Agent:
    return bare_agent(adapter.factory(fake.url)(), tools=[lookup], **kw)


def wait_until_closed(fake: FakeProvider) -> int:
    """Open connections once the server has seen every client hang up (or after 5 s)."""
    return poll(lambda: fake.open_connections, lambda n: n == 0, 5, 0.01)


def test_run_sync_three_times_on_one_agent(
    adapter: Adapter,
    fake_provider: FakeProvider,
    bare_agent: Callable[..., Agent],
    unraisable: list[str],
) -> None:
    fake_provider.script(*(final(f"answer {i}") for i in range(RUNS)))
    agent = agent_on(adapter, fake_provider, bare_agent)

    outputs = [agent.run_sync(f"question {i}").output for i in range(RUNS)]

    assert outputs == [f"answer {i}" for i in range(RUNS)]
    assert fake_provider.request_count == RUNS
    # Each run's loop closed its client, so the server saw every connection hang up.
    assert wait_until_closed(fake_provider) == 0
    del agent
    gc.collect()
    assert unraisable == []


def test_three_runs_in_one_event_loop(
    adapter: Adapter, fake_provider: FakeProvider, bare_agent: Callable[..., Agent]
) -> None:
    fake_provider.script(*(final(f"answer {i}") for i in range(RUNS)))
    agent = agent_on(adapter, fake_provider, bare_agent)

    async def three_runs() -> list[str]:
        return [(await agent.run(f"question {i}")).output for i in range(RUNS)]

    assert asyncio.run(three_runs()) == [f"answer {i}" for i in range(RUNS)]
    assert fake_provider.request_count == RUNS
    assert fake_provider.connections == 1  # one loop, one client, one kept-alive connection
    assert wait_until_closed(fake_provider) == 0


def test_a_run_reuses_its_connection(
    adapter: Adapter, fake_provider: FakeProvider, bare_agent: Callable[..., Agent]
) -> None:
    # The same tool-call id in every run, as some providers do.
    call = FakeCall("call_1", "lookup", {"key": "a"})
    fake_provider.script(*[tool_turn(call), final("done")] * RUNS)
    agent = agent_on(adapter, fake_provider, bare_agent)

    outputs = [agent.run_sync("look a up").output for _ in range(RUNS)]

    assert outputs == ["done"] * RUNS
    assert fake_provider.request_count == 2 * RUNS
    assert fake_provider.connections == RUNS


def test_http10_provider_still_works(
    adapter: Adapter, bare_agent: Callable[..., Agent], unraisable: list[str]
) -> None:
    with FakeProvider(keep_alive=False) as fake:
        fake.script(*(final(f"answer {i}") for i in range(RUNS)))
        agent = agent_on(adapter, fake, bare_agent)
        outputs = [agent.run_sync(f"question {i}").output for i in range(RUNS)]
        assert outputs == [f"answer {i}" for i in range(RUNS)]
        assert fake.request_count == RUNS
        assert fake.connections == RUNS
    del agent
    gc.collect()
    assert unraisable == []


def test_a_loop_that_runs_again_after_shutdown_gets_a_new_client(
    adapter: Adapter, fake_provider: FakeProvider
) -> None:
    fake_provider.script(final("first"), final("second"))
    model = adapter.factory(fake_provider.url)()

    def ask() -> str:
        return loop.run_until_complete(
            model.request([user("hi")], ModelSettings(), RequestParams())
        ).text

    loop = asyncio.new_event_loop()
    try:
        assert ask() == "first"
        loop.run_until_complete(loop.shutdown_asyncgens())  # closes the loop's client
        assert wait_until_closed(fake_provider) == 0
        # The loop no longer tracks new generators, so the second client is closed by hand.
        with pytest.warns(ResourceWarning, match="shutdown_asyncgens"):
            assert ask() == "second"
    finally:

        async def close_the_client() -> None:
            await (await model._loop_client()).close()  # type: ignore[attr-defined]

        loop.run_until_complete(close_the_client())
        loop.close()
    assert fake_provider.request_count == 2


EXIT_SCRIPT = """
import asyncio
from helpers.fake_provider import FakeProvider, final
from helpers.sdk_adapters import ADAPTERS
from harness.messages import user
from harness.models import ModelSettings, RequestParams

fake = FakeProvider().start()
for adapter in ADAPTERS.values():
    fake.script(final("one"), final("two"))
    model = adapter.factory(fake.url)()
    for _ in range(2):
        asyncio.run(model.request([user("hi")], ModelSettings(), RequestParams()))
print(fake.request_count)
"""


def test_no_event_loop_noise_at_exit() -> None:
    """Two `asyncio.run`s on each adapter, then the interpreter exits: nothing is printed.
    One interpreter for all three adapters: importing both SDKs is most of its cost."""
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", EXIT_SCRIPT],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,
        # tests/ on the path, for the helpers package
        env={**os.environ, **KEYS, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(2 * len(ADAPTERS))
    assert "Event loop is closed" not in done.stderr
    assert "Exception ignored" not in done.stderr
    assert "ResourceWarning" not in done.stderr
