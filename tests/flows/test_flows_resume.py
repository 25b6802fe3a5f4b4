"""A run killed with SIGKILL, or stopped with Ctrl-C (once, or twice while Prefect records the
crash), mid-step continues with `ctxlab run --resume`: nothing lost, no completed step done
twice."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from helpers.crashes import kill_once
from helpers.flows import flow_run_state
from helpers.store import events
from helpers.waiting import wait_until

from flows.agent_run import agent_run
from flows.server import ServerInfo
from harness.store import Store

CLI = [sys.executable, "-m", "flows.cli"]


@pytest.mark.parametrize("stop", ["SIGKILL", "Ctrl-C", "Ctrl-C twice"])
def test_a_stopped_run_resumes_from_the_store_without_redoing_steps(
    prefect_server: ServerInfo, db: str, subprocess_env: dict[str, str], stop: str
) -> None:
    marker = Path(subprocess_env["CTXLAB_TEST_MARKER"])
    calls_log = Path(subprocess_env["CTXLAB_TEST_LOG"])
    store = Store(db, hold=False)

    # The second model call asks for findings 2 and 3 at once; finding 3 hangs (for a few
    # seconds under Ctrl-C: the run waits for a cancelled tool's thread, up to its limit).
    hang = {"CTXLAB_TEST_HANG_AT": "3"}
    if stop != "SIGKILL":
        hang["CTXLAB_TEST_HANG_S"] = "3"
    doomed = subprocess.Popen(
        [*CLI, "run", "flow_test_agents:recorder", "--db", db, "--json"],
        env={**subprocess_env, **hang},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(marker.exists, 90, "the hanging tool call")

        def finding_2_journaled() -> bool:  # it runs beside finding 3 and completes
            return bool(
                store.scalar("SELECT count(*) FROM step_journal WHERE key = 'tool:record:call-2'")
            )

        wait_until(finding_2_journaled, 30, "finding 2 to complete")
        doomed.send_signal(signal.SIGKILL if stop == "SIGKILL" else signal.SIGINT)
        if stop == "Ctrl-C twice":
            time.sleep(0.3)  # while the flow engine reports the first one
            doomed.send_signal(signal.SIGINT)
        doomed.wait(timeout=60)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    (run_id,) = [r["run_id"] for r in store.query("SELECT run_id FROM flow_runs")]
    killed_flow_run = store.scalar("SELECT flow_run_id FROM flow_runs")
    if stop == "SIGKILL":
        assert doomed.returncode == -signal.SIGKILL
        assert store.runs.get(run_id)["status"] == "running"  # what a killed process leaves behind
    else:
        assert doomed.returncode == 130
        assert store.runs.get(run_id)["status"] == "interrupted"
        assert flow_run_state(killed_flow_run) == "Crashed"  # not Running until a resume
    committed = len(store.messages.rows(run_id=run_id))
    assert committed == 4  # the input, model call 1 and its two tool results; nothing later

    resumed = subprocess.run(
        [*CLI, "run", "--resume", "last", "--db", db, "--json"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    (run,) = json.loads(resumed.stdout)["runs"]
    assert run["run_id"] == run_id and run["status"] == "completed"
    assert run["replayed"] == 2  # model call 2 and finding 2 came from the journal

    # No completed step ran twice: each model call and each tool call appears once (finding
    # 3, cut short by Ctrl-C, finished in its thread unrecorded, and ran again).
    ran = Counter(calls_log.read_text().splitlines())
    assert ran == Counter(
        [f"model {n}" for n in (0, 2, 4, 6)] + [f"tool call-{n}" for n in range(6)]
        + (["tool call-3"] if stop != "SIGKILL" else [])
    )  # fmt: skip
    # Nothing lost: the whole transcript, in order, once.
    rows = store.messages.rows(run_id=run_id)
    assert [r["seq"] for r in rows] == list(range(1, 12))
    assert Counter(r["role"] for r in rows) == {"user": 1, "assistant": 4, "tool": 6}
    assert sorted(r["tool_call_id"] for r in rows if r["role"] == "tool") == [
        f"call-{n}" for n in range(6)
    ]
    calls = sorted(store.usage.rows(run_id), key=lambda c: c["step"])
    assert [c["step"] for c in calls] == [0, 1, 2, 3]
    finished = store.runs.get(run_id)
    assert finished["status"] == "completed" and finished["steps"] == 4
    assert finished["input_tokens"] == store.usage.of_run(run_id)[0].input_tokens
    offloads = events(store, run_id, middleware="offload")
    assert sorted(o["detail"]["tool_call_id"] for o in offloads) == [f"call-{n}" for n in range(6)]
    assert len(store.files.rows("/notes/")) == 6
    assert store.scalar("SELECT count(*) FROM step_journal") == 0  # cleared once complete
    assert store.scalar("SELECT attempts FROM flow_runs WHERE run_id = ?", [run_id]) == 2
    assert flow_run_state(killed_flow_run) == "Crashed"


@pytest.mark.slow
def test_the_simulated_weekly_agent_resumes_to_the_same_transcript(
    prefect_server: ServerInfo, db: str, subprocess_env: dict[str, str], tmp_path: Path
) -> None:
    """Killed at an arbitrary point of week 1 and resumed, the competitive-analysis agent ends
    with the transcript an uninterrupted run has: the simulated model's place in its plan is
    restored from the journal, so no planned step is skipped or made twice."""
    thread = "week-1"
    reference_db = str(tmp_path / "reference.duckdb")
    asyncio.run(agent_run(agent="competitive-analysis", db=reference_db, thread_id=thread,
                          params={"week": 1}))  # fmt: skip
    store = Store(db, hold=False)
    log = tmp_path / "doomed.log"
    with open(log, "w") as err:
        doomed = subprocess.Popen(
            [*CLI, "run", "competitive-analysis", "--db", db, "--thread", thread,
             "--set", "week=1", "--json"],
            env=subprocess_env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        wait_until(lambda: _mid_second_run(store) or doomed.poll() is not None, 120, "run 2")
        assert doomed.poll() is None, log.read_text()[-3000:]
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=30)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    resumed = subprocess.run(
        [*CLI, "run", "--resume", "last", "--db", db, "--json"],
        env=subprocess_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert store.scalar("SELECT max(attempts) FROM flow_runs") == 2

    def transcript(path: str) -> list[tuple[str, str | None, str]]:
        rows = Store(path, hold=False).messages.rows(thread)
        return [(r["role"], r["tool_call_id"], r["content"]) for r in rows]

    assert transcript(db) == transcript(reference_db)
    top = [r for r in store.runs.all() if r["parent_run_id"] is None and r["status"] == "completed"]
    assert len(top) == 5


def _mid_second_run(store: Store) -> bool:
    """The first run finished (its journal cleared) and the second has done a few steps."""
    try:
        runs = store.scalar("SELECT count(*) FROM flow_runs")
        steps = store.scalar("SELECT count(*) FROM step_journal")
    except duckdb.CatalogException:  # the tables appear when the flow starts
        return False
    return runs >= 2 and steps >= 6


def test_resuming_discards_the_subagent_runs_whose_task_call_runs_again_at_any_depth(
    tmp_path: Path,
) -> None:
    """Their task call runs again and records them anew (their replies from the journal):
    kept, their messages and model calls would count twice (issue 22)."""
    from flows.journal import ensure_tables
    from flows.resume import find_resume_point, release_run

    store = Store(str(tmp_path / "ctxlab.duckdb"))
    ensure_tables(store)
    runs = [("run_sub", "run_top", "run_top.task.c-sub"),
            ("run_subsub", "run_sub", "run_sub.task.c-subsub"),
            ("run_late", "run_top", "run_top.task.c-late"),  # finished, its call was not
            ("run_done", "run_top", "run_top.task.c-done"),  # its call's result committed
            ("run_kept", "run_top", "run_top.task.c-kept.2"),  # its call journaled
            ("run_other", None, "t-other")]  # fmt: skip
    store.start_run(run_id="run_top", thread_id="t-top", agent="a", model="m", strategy=None)
    for run_id, parent, thread in runs:
        store.start_run(run_id=run_id, thread_id=thread, agent="a", model="m",
                        strategy=None, parent_run_id=parent)  # fmt: skip
        store.execute(
            "INSERT INTO model_calls (run_id, step, created_at) VALUES (?, 0, now())", [run_id]
        )
    store.execute("UPDATE runs SET status = 'completed' WHERE run_id IN "
                  "('run_late', 'run_done', 'run_kept')")  # fmt: skip
    store.execute(
        "INSERT INTO messages (thread_id, seq, run_id, step, message_id, role, kind, content, "
        "tool_call_id, created_at) VALUES ('t-top', 0, 'run_top', 1, 'm1', 'tool', 'text', "
        "'done', 'c-done', now())"
    )
    store.execute("INSERT INTO step_journal VALUES ('run_top', 'tool:task', 'tool:task:c-kept', "
                  "'{}', NULL, now())")  # fmt: skip

    discarded = release_run(store, find_resume_point(store, "run_top"))

    assert sorted(discarded) == ["run_late", "run_sub", "run_subsub"]
    status = {r["run_id"]: r["status"] for r in store.runs.all()}
    assert status == {"run_done": "completed", "run_kept": "completed", "run_other": "running"}
    assert {r["run_id"] for r in store.usage.rows()} == {
        "run_done", "run_kept", "run_other"
    }  # fmt: skip


def test_a_week_killed_under_run_weeks_resumes_and_the_next_weeks_go_on_from_its_memory(
    prefect_server: ServerInfo,
    db: str,
    subprocess_env: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ctxlab run competitive-analysis --weeks 3`, its week 2 killed with SIGKILL partway (the
    export queries done, the brief being read), `--resume last`, then `--weeks 3` again: week
    2 completes once, week 3 runs on the same store from what memory's files hold, and no
    message, model call or memory version is doubled or lost."""
    from flows.cli import main

    # The competitive-analysis agent, its `read_article` blocking on week 2's brief when told;
    # a budget that nothing passes, so each week adds exactly one memory version.
    argv = ["run", "flow_test_agents:weekly_hanging", "--db", db, "--json",
            "--set", "memory.budget_tokens=5000"]  # fmt: skip
    assert main([*argv, "--weeks", "1"]) == 0
    capsys.readouterr()
    store = Store(db, hold=False)
    marker = Path(subprocess_env["CTXLAB_TEST_MARKER"])
    log = tmp_path / "doomed.log"
    with open(log, "w") as err:
        doomed = subprocess.Popen(
            [*CLI, *argv, "--weeks", "3"], stdout=subprocess.DEVNULL, stderr=err,
            env={**subprocess_env, "CTXLAB_TEST_HANG_ON": "brief-2026-01-19"},
        )  # fmt: skip

    def exports_journaled() -> bool:  # they run beside the brief's read and complete
        if doomed.poll() is not None:
            raise AssertionError(log.read_text()[-3000:])
        return marker.exists() and bool(store.scalar(
            "SELECT count(*) >= 3 FROM step_journal "
            "WHERE key LIKE 'tool:query_market_export:%'"))  # fmt: skip

    kill_once(doomed, exports_journaled, 120, "week 2's brief and export queries")
    killed = [r for r in store.runs.all() if r["status"] == "running"]
    assert len(killed) == 1 and len(store.memory.versions()) == 1  # week 2 noted nothing yet

    assert main(["run", "--resume", "last", "--db", db, "--json"]) == 0
    (resumed,) = json.loads(capsys.readouterr().out)["runs"]
    assert resumed["run_id"] == killed[0]["run_id"] and resumed["status"] == "completed"
    assert resumed["replayed"] >= 3  # the export queries came from the journal
    assert main([*argv, "--weeks", "3"]) == 0
    (third,) = json.loads(capsys.readouterr().out)
    assert third["params"]["week"] == 3

    top = [r for r in store.runs.all() if r["parent_run_id"] is None]
    assert [r["status"] for r in top] == ["completed"] * 3
    assert len({r["thread_id"] for r in top}) == 3
    assert store.scalar("SELECT count(*) FROM step_journal") == 0
    assert sorted(store.scalar("SELECT list(attempts) FROM flow_runs")) == [1, 1, 2]

    def shape(thread: str) -> list[tuple[str, str | None]]:
        rows = store.messages.rows(thread)
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1)), thread
        answered = [r["tool_call_id"] for r in rows if r["role"] == "tool"]
        assert len(answered) == len(set(answered)), f"{thread}: a tool call answered twice"
        assert {r["run_id"] for r in rows} == {store.runs.of_thread(thread)[0]["run_id"]}
        return [(r["role"], r["name"]) for r in rows]

    week_1, week_2, week_3 = (shape(r["thread_id"]) for r in top)
    assert week_2 == week_3  # the killed week ran its whole plan once, as the next one did
    for run in top:
        steps = [c["step"] for c in store.usage.rows(run["run_id"])]
        assert sorted(steps) == list(range(len(steps)))
    # One memory version a week, each adding its week's log line to the last: memory is all
    # that carried over, and week 3 started from what week 2's resumed run wrote.
    versions = store.memory.versions("/memories/AGENTS.md")
    assert [(v["version"], v["author"]) for v in versions] == [(1, "agent"), (2, "agent"),
                                                               (3, "agent")]  # fmt: skip
    for k, date in enumerate(("2026-01-12", "2026-01-19", "2026-01-26")):
        assert versions[k]["content"].count(f"- Week of {date}:") == 1
        assert all(f"- Week of {date}:" not in v["content"] for v in versions[:k])
        assert versions[-1]["content"].count(f"- Week of {date}:") == 1
    (loaded,) = store.events.rows(top[2]["run_id"], middleware="memory", action="loaded")
    assert json.loads(loaded["detail"])["memory_tokens"] > 0
