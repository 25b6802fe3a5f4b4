"""Prefect events of a run's middleware actions: which actions are emitted, under what name,
about which resource; a run that overflowed is one an automation can alert on."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.events import emit_run_events, run_events
from harness import create_agent
from harness.errors import ContextOverflowError
from harness.models.scripted import ScriptedModel
from harness.profiles import ModelProfile
from harness.store import Store


def _overflowing_run(db: Path) -> tuple[Store, str]:
    store = Store(str(db))
    model = ScriptedModel(["never"], profile=ModelProfile(name="small", context_window=1200))
    agent = create_agent(model, store=store, strategy="none", memory=(), file_tools=False)
    with pytest.raises(ContextOverflowError):
        agent.run_sync("lorem ipsum " * 2000, thread_id="t")
    (run,) = store.runs.all()
    return store, run["run_id"]


def test_an_overflow_is_an_event_an_automation_can_match(tmp_path: Path) -> None:
    store, run_id = _overflowing_run(tmp_path / "s.duckdb")
    (event,) = run_events(store, run_id, agent="weekly", flow_run_id="f-1")
    assert event["event"] == "ctxlab.overflow"
    assert event["resource"] == {
        "prefect.resource.id": f"ctxlab.run.{run_id}",
        "prefect.resource.name": f"weekly run {run_id}",
        "ctxlab.agent": "weekly",
    }
    assert event["related"] == [
        {"prefect.resource.id": "prefect.flow-run.f-1", "prefect.resource.role": "flow-run"}
    ]
    assert event["payload"]["detail"]["limit"] == 1200
    assert event["occurred"].tzinfo is not None
    # The same row gives the same event id: a resumed session does not double an alert.
    assert run_events(store, run_id, agent="weekly")[0]["id"] == event["id"]


def test_an_unreachable_prefect_loses_the_events_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = _overflowing_run(tmp_path / "s.duckdb")

    def refuse(**_: object) -> None:
        raise ConnectionError("no server")

    monkeypatch.setattr("prefect.events.emit_event", refuse)
    assert emit_run_events(store, [run_id], agent="weekly") == 0
