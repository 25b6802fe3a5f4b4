"""The agent_run flow: every acting step is a Prefect task, all of them recorded on the
server, each event pointing at its task; one artifact per run; memory across weekly runs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Any

import pytest
from helpers.flows import artifacts, flow_run_name, run_logs, task_runs_of
from prefect.logging.handlers import PrefectConsoleHandler

from flows.agent_run import agent_run, artifact_key, session_name
from flows.agents import AgentOptions, competitive_session
from flows.server import ServerInfo
from harness.files.filesystem import FileSystem
from harness.steps import InlineRunner
from harness.store import Store

RECORDER = "flow_test_agents:recorder"


def test_every_step_is_a_task_and_the_server_records_them_all(
    prefect_server: ServerInfo, db: str
) -> None:
    result = asyncio.run(agent_run(agent=RECORDER, db=db))
    (run,) = result["runs"]
    assert run["status"] == "completed"
    assert run["tasks"] == 16  # 4 model calls, 6 tool calls, 6 offloads

    recorded = task_runs_of(result["flow_run_id"], expected=run["tasks"])
    assert len(recorded) == run["tasks"]
    # Task runs are named after the step and numbered: "model #1", "tool:record #3".
    steps = {str(t.id): t.name.rsplit(" #", 1)[0] for t in recorded}
    assert Counter(steps.values()) == {"model": 4, "tool:record": 6, "offload": 6}
    assert sorted(t.name for t in recorded if t.name.startswith("model")) == [
        f"model #{i}" for i in range(1, 5)
    ]
    assert {t.state_name for t in recorded} == {"Completed"}

    store = Store(db, hold=False)
    events = store.events.rows(run["run_id"])
    acting = [e for e in events if e["task_run_id"] is not None]
    assert len(acting) == 6
    assert all(steps[e["task_run_id"]] == e["middleware"] == "offload" for e in acting)
    # Hooks that only read (memory and skills loading) record an event but run no task.
    assert {e["middleware"] for e in events if e["task_run_id"] is None} <= {"memory", "skills"}
    for e in events:  # never NULL without a reason
        assert (e["task_run_id"] is None) == (e["task_reason"] is not None)
        if e["task_reason"]:
            assert e["task_reason"].startswith(f"{e['hook']} hook between steps")


def test_each_middleware_decision_reaches_the_runs_logs(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = asyncio.run(agent_run(agent=RECORDER, db=db))
    logs = run_logs(result["flow_run_id"], expected=6)
    offloads = [log for log in logs if log.name == "harness.events" and "offload" in log.message]
    assert len(offloads) == 6  # one per offload decision, each under its task run
    assert all(log.task_run_id is not None for log in offloads)
    assert "harness.events" not in capsys.readouterr().err  # the Logs tab, not the terminal


def test_each_run_publishes_a_markdown_artifact(prefect_server: ServerInfo, db: str) -> None:
    result = asyncio.run(agent_run(agent=RECORDER, db=db))
    (run,) = result["runs"]
    key = artifact_key(RECORDER, run["run_id"])
    assert key == f"agent-flow-test-agents-recorder-{run['run_id'].replace('_', '-')}"
    (latest,) = artifacts(key)  # its own key: the Artifacts page lists every run
    text = latest.data
    assert run["run_id"] in text
    assert "| input tokens |" in text and "| output tokens |" in text
    assert "| cost (USD) |" in text
    assert "| offload | offload_tool_result | 6 |" in text
    assert "`/large_tool_results/call-0`" in text and "`/notes/finding-5.md`" in text
    assert run["moved_out_tokens"] > 0
    assert "kept out of the window" in text


def _two_input_session(db: str, thread: str) -> dict[str, Any]:
    """The recorder's session of two inputs on `thread`."""
    inputs = ["Record the findings.", "Anything else?"]
    return asyncio.run(agent_run(agent=RECORDER, inputs=inputs, db=db, thread_id=thread))


def test_a_session_runs_its_inputs_in_turn_on_one_thread(
    prefect_server: ServerInfo, db: str
) -> None:
    result = _two_input_session(db, "findings")
    assert [r["status"] for r in result["runs"]] == ["completed", "completed"]
    assert {r["thread_id"] for r in result["runs"]} == {"findings"}
    store = Store(db, hold=False)
    seqs = [r["seq"] for r in store.messages.rows("findings")]
    assert sorted(seqs) == list(range(1, len(seqs) + 1))
    # The second run continued the conversation: its model saw all six findings recorded.
    assert result["runs"][1]["steps"] == 1
    tasks = sum(r["tasks"] for r in result["runs"])
    names = [t.name for t in task_runs_of(result["flow_run_id"], expected=tasks)]
    assert len(names) == tasks and len(set(names)) == tasks  # numbering runs on across inputs
    assert flow_run_name(result["flow_run_id"]) == "flow_test_agents:recorder on findings"


def test_a_flow_run_is_named_after_agent_week_and_thread() -> None:
    assert session_name("competitive-analysis", {"week": 2}, "thread_ab") == (
        "competitive-analysis week 2 on thread_ab"
    )
    assert session_name("x", {"week": "auto"}, "t") == "x on t"


def test_the_weekly_agent_picks_week_two_once_memory_holds_the_format(db: str) -> None:
    store = Store(db, hold=False)
    options = AgentOptions(store=store, step_runner=InlineRunner(), params={"week": "auto"})
    first = competitive_session(options)
    assert first[0].startswith("Monday competitive analysis")
    FileSystem(store, "any", grants=["/memories/"]).write(
        "/memories/AGENTS.md", "- Reports: use bullets, not paragraphs."
    )
    (later,) = competitive_session(options)
    assert later.startswith("Monday again")


def test_a_tool_that_raises_fails_its_task_but_not_the_run_nor_the_terminal(
    prefect_server: ServerInfo, db: str
) -> None:
    result = asyncio.run(agent_run(agent="flow_test_agents:build_clumsy", inputs=["go"], db=db))
    (run,) = result["runs"]
    assert run["status"] == "completed"
    (tool_task,) = [
        t for t in task_runs_of(result["flow_run_id"], expected=3) if t.name.startswith("tool:")
    ]
    assert tool_task.state_name == "Failed"  # visible as such in the UI

    (console,) = [h for h in logging.getLogger().handlers if isinstance(h, PrefectConsoleHandler)]

    def shown(task_name: str) -> bool:
        record = logging.LogRecord("prefect.task_runs", logging.ERROR, "", 0, "failed", (), None)
        record.task_name = task_name
        return bool(console.filter(record))

    assert not shown("tool:publish")  # the model handles it; the terminal stays quiet
    assert shown("model")  # a failed model call still shows


def test_run_weeks_runs_each_week_as_its_own_flow_run_on_its_own_thread(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import main

    # A small budget, so the weeks consolidate memory: a step (a Prefect task) of their own.
    argv = [
        "run",
        "competitive-analysis",
        "--db",
        db,
        "--json",
        "--set",
        "memory.budget_tokens=250",
    ]
    assert main([*argv, "--weeks", "2"]) == 0
    weeks = json.loads(capsys.readouterr().out)
    assert [w["params"]["week"] for w in weeks] == [1, 2]
    assert len({w["thread_id"] for w in weeks}) == len({w["flow_run_id"] for w in weeks}) == 2
    assert all(r["status"] == "completed" for w in weeks for r in w["runs"])
    # Only memory carries a week to the next: week 2 appended its note to week 1's.
    # (Consolidation may drop week 1's log from the file; its versions keep it.)
    versions = [v["content"] for v in Store(db, hold=False).memory.versions("/memories/AGENTS.md")]
    assert any("- Week of 2026-01-12:" in v for v in versions)
    assert "- Week of 2026-01-19:" in versions[-1]
    # Run again for longer: it goes on from the week after the last one memory notes.
    assert main([*argv, "--weeks", "3"]) == 0
    (third,) = json.loads(capsys.readouterr().out)
    assert third["params"] == {"scale": "small", "weeks": 3, "week": 3,
                               "memory.budget_tokens": 250}  # fmt: skip
    store = Store(db, hold=False)
    consolidated = store.events.rows(middleware="memory", action="consolidated")
    assert consolidated and all(e["task_run_id"] for e in consolidated)
    assert any(c["model"].endswith("#consolidate") for c in store.usage.rows())
    assert "consolidate" in {v["author"] for v in store.memory.versions()}


def test_a_session_publishes_one_artifact_titled_by_what_it_ran(
    prefect_server: ServerInfo, db: str
) -> None:
    result = _two_input_session(db, "titled")
    key = f"session-flow-test-agents-recorder-{result['session_id'].replace('_', '-')}"
    (page,) = artifacts(key)
    assert page.description == "flow_test_agents:recorder session on titled: 2 runs"
    lines = page.data.splitlines()
    assert lines[0] == "# flow_test_agents:recorder on titled"
    rows = [line for line in lines if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert [r.split("|")[2].strip() for r in rows] == [f"`{r['run_id']}`" for r in result["runs"]]
    (per_run,) = artifacts(artifact_key(RECORDER, result["runs"][1]["run_id"]))
    assert per_run.description.startswith("flow_test_agents:recorder on titled: input 2 of 2")


def test_flow_runs_are_tagged_with_ctxlab_and_the_command(
    prefect_server: ServerInfo, db: str
) -> None:
    from helpers.flows import flow_run_tags

    result = asyncio.run(agent_run(agent=RECORDER, db=db))
    tags = set(flow_run_tags(result["flow_run_id"]))
    assert {"ctxlab", "run", "agent:flow-test-agents-recorder"} <= tags


def test_offloads_are_emitted_as_prefect_events_of_the_run(
    prefect_server: ServerInfo, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict] = []
    monkeypatch.setattr("prefect.events.emit_event", lambda **kw: sent.append(kw))
    result = asyncio.run(agent_run(agent=RECORDER, db=db))
    (run,) = result["runs"]
    assert [e["event"] for e in sent] == ["ctxlab.offload"] * 6
    assert {e["resource"]["prefect.resource.id"] for e in sent} == {f"ctxlab.run.{run['run_id']}"}
    flow_run = f"prefect.flow-run.{result['flow_run_id']}"
    assert all(e["related"][0]["prefect.resource.id"] == flow_run for e in sent)
    assert all(e["payload"]["tokens_before"] > e["payload"]["tokens_after"] for e in sent)
    assert len({e["id"] for e in sent}) == 6  # one id per event, derived from its row
