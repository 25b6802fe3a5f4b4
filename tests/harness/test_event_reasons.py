"""Every `events` row says which step task wrote it, or why no task did."""

from __future__ import annotations

from harness.agent import create_agent
from harness.models import ScriptedModel
from harness.store import Store


def test_an_inline_run_says_its_events_have_no_task() -> None:
    store = Store(":memory:")
    agent = create_agent(ScriptedModel(["Hello."]), [], store=store, memory=("/memories/",))
    agent.run_sync("hi", thread_id="t")
    rows = store.events.rows()
    assert rows  # memory loading records an event
    assert all(r["task_run_id"] is None for r in rows)
    assert {r["task_reason"] for r in rows} == {"inline run: steps are not tasks"}


def test_a_runner_without_a_reason_still_gives_one() -> None:
    class Bare:
        async def run(self, name, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
            return await fn(*args, **kwargs)

        def current_step_id(self) -> str | None:
            return None

    store = Store(":memory:")
    agent = create_agent(ScriptedModel(["Hello."]), [], store=store, step_runner=Bare(),
                         memory=("/memories/",))  # fmt: skip
    agent.run_sync("hi", thread_id="t")
    reasons = {r["task_reason"] for r in store.events.rows()}
    assert reasons and all(r and "ran outside any step" in r for r in reasons)
