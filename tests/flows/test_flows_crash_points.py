"""Resume is exact at every crash point, in the manner of SQLite's crash tests.

A two-input session (file writes, memory writes, a subagent that writes a file) runs once
uninterrupted. Then, for every commit it makes to the store, and before and after every step
it runs, a fresh session is killed right there and resumed the way `ctxlab run --resume`
resumes it (`flows.resume.run_session`, the path the `agent_run` flow takes, here with the
inline step runner instead of Prefect's). Each must end with the transcript, files, memory
versions and number of model calls of the uninterrupted run.

A kill is simulated in process: `Killed` (a BaseException, so no `except Exception` handler
turns it into a tool error) is raised at the crash point, and from then on the store refuses
every read and write, so nothing the dying process would still do reaches the database.

Ctrl-C is simulated as `asyncio.run` delivers SIGINT: the session's main task is cancelled at
the same points, the `CancelledError` reaches the code at its next await, and every handler on
its way runs with the store alive (what a kill never lets happen). The interrupted runs must be
marked `interrupted`, none left `running`, and the resumed session must end exactly as above.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.crashes import CrashingRunner, CrashingStore, Killed

from flows.agents import AgentOptions, AgentSpec
from flows.resume import Session, load_session, recorded_sessions, run_session, unfinished_run
from harness import Agent, create_agent
from harness.messages import Message
from harness.models import FunctionModel, RequestParams, call, reply
from harness.steps import InlineRunner
from harness.store import Store

THREAD = "crash-thread"
INPUTS = ("Research the market and remember my preferences.", "Update my memory.")


SUBAGENT_TASK = "Research competitor Acme: write what you find to /research/acme.md."


def _respond(calls: list[str]) -> Callable[[Sequence[Message], RequestParams], object]:
    """A model that decides only from its request, as a real one would after a restart."""

    def respond(messages: Sequence[Message], params: RequestParams) -> object:
        if messages[0].content == SUBAGENT_TASK:
            calls.append("subagent")
            if messages[-1].role == "user":
                return reply(
                    "Researching.",
                    call("write_file", call_id="sub-1", file_path="/research/acme.md",
                         content="Acme grew 12% last quarter.\n"),
                )  # fmt: skip
            return "Acme grew 12% (details in /research/acme.md)."
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        turn = INPUTS.index(messages[last_user].content)
        done = sum(1 for m in messages[last_user:] if m.role == "assistant")
        calls.append(f"main {turn}.{done}")
        plan: list[object] = [
            [
                reply(
                    "Planning and delegating.",
                    call("write_file", call_id="a-plan", file_path="/notes/plan.md",
                         content="1. research\n2. report\n"),
                    call("task", call_id="a-task", description=SUBAGENT_TASK,
                         subagent_type="general-purpose"),
                ),
                reply(
                    "Saving your preference.",
                    call("write_file", call_id="a-mem", file_path="/memories/AGENTS.md",
                         content="- The user wants bullet points.\n"),
                ),
                f"Done. Subagent said: {messages[-2].content if done == 2 else ''}",
            ],
            [
                reply(
                    "Updating memory and notes.",
                    call("edit_file", call_id="b-mem", file_path="/memories/AGENTS.md",
                         old_string="bullet points", new_string="short bullet points"),
                    call("write_file", call_id="b-note", file_path="/notes/followup.md",
                         content="memory updated\n"),
                ),
                "Memory updated.",
            ],
        ]  # fmt: skip
        return plan[turn][min(done, len(plan[turn]) - 1)]

    return respond


def _spec(calls: list[str]) -> AgentSpec:
    def build(options: AgentOptions) -> Agent:
        return create_agent(
            FunctionModel(_respond(calls), name="crash-model"),
            system_prompt="You research markets.",
            store=options.store,
            step_runner=options.step_runner,
            name="crash-agent",
        )

    return AgentSpec(name="crash-agent", description="crash points", build=build)


SESSION = Session(
    session_id="session-crash", agent="crash-agent", model="crash-model", thread_id=THREAD,
    inputs=INPUTS,
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    transcript: list[tuple[Any, ...]]
    files: list[tuple[Any, ...]]
    memory: list[tuple[Any, ...]]
    model_calls: list[str]
    statuses: dict[str, int]
    # Over every run, subagents included: a resumed session stores each message and model
    # call once, and leaves no run of its own behind (`interrupted` or otherwise).
    counts: dict[str, int]


def _outcome(store: Store, calls: list[str]) -> Outcome:
    transcript = [
        (r["role"], r["content"], r["tool_call_id"], r["name"], r["kind"], r["tool_calls"])
        for r in store.messages.rows(THREAD)
    ]
    files = [
        (r["namespace"], r["path"], bytes(r["content"]))
        for r in store.files.rows()
        if not r["path"].startswith("/skills/")
    ]
    memory = [
        (r["path"], r["version"], r["content"], r["author"])
        for r in sorted(store.memory.versions(), key=lambda r: (r["path"], r["version"]))
    ]
    statuses: dict[str, int] = {}
    for r in (r for r in store.runs.all() if r["parent_run_id"] is None):
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    runs = store.runs.all()
    counts = {
        "messages": len(store.messages.rows()),
        "model_calls": len(store.usage.rows()),
        "runs": len(runs),
        "completed runs": sum(r["status"] == "completed" for r in runs),
        "summed requests": sum(r["steps"] or 0 for r in runs),
    }
    return Outcome(transcript, files, memory, sorted(calls), statuses, counts)


def _run(
    store: CrashingStore, calls: list[str], runner: Callable[[], Any], first_run: str | None
) -> None:
    """Start the session, or resume it as `ctxlab run --resume last` does."""

    async def go() -> None:
        store.main = asyncio.current_task()
        if first_run is None:
            await run_session(store, _spec(calls), SESSION, 0, runner=runner)
            return
        session, turn = load_session(store, first_run)
        await run_session(store, _spec(calls), session, turn, runner=runner)

    asyncio.run(go())


def _session_with_a_crash(
    *,
    kill_after_commit: int | None = None,
    interrupt_after_commit: int | None = None,
    raise_after_commit: int | None = None,
    step: int | None = None,
    when: str = "before",
    how: str = "kill",
) -> tuple[Outcome, str]:
    store = CrashingStore()
    calls: list[str] = []
    counter = [0]
    store.kill_after = None if kill_after_commit is None else store.commits + kill_after_commit
    if interrupt_after_commit is not None:
        store.interrupt_after = store.commits + interrupt_after_commit
    if raise_after_commit is not None:
        store.raise_after = store.commits + raise_after_commit
    try:
        _run(store, calls, lambda: CrashingRunner(store, counter, step, when, how), None)
    except (Killed, asyncio.CancelledError, KeyboardInterrupt) as exc:
        crashed = store.crash or str(exc)
    else:
        return _outcome(store, calls), "no crash"
    if how == "interrupt" or interrupt_after_commit is not None or raise_after_commit:
        # Every handler ran: a run that did not finish says it was interrupted (not
        # `running`, not `failed`).
        statuses = {r["status"] for r in store.runs.all()}
        assert statuses <= {"completed", "interrupted"}, f"{crashed}: runs left {statuses}"
    store.revive()
    # The session is stored before anything else it does, so `--resume last` finds it unless
    # it had finished (killed as it dropped its journal); the outcome says which.
    assert recorded_sessions(store) == 1, f"{crashed}: the session was not recorded"
    resume_from = unfinished_run(store)
    if resume_from is not None:
        _run(store, calls, InlineRunner, resume_from)
    left_running = len(store.runs.with_status(["running"]))
    assert left_running == 0, f"{crashed}: {left_running} runs left running"
    replayable = store.scalar(
        "SELECT count(*) FROM step_journal WHERE NOT list_contains(?, scope)",
        [store.runs.with_status(["completed"])],
    )
    assert replayable == 0, f"{crashed}: {replayable} journal rows of unfinished runs left"
    return _outcome(store, calls), crashed


@pytest.fixture(scope="module")
def reference() -> tuple[Outcome, int, int]:
    """The uninterrupted session, how many commits it makes and how many steps it runs."""
    store = CrashingStore()
    start = store.commits
    calls: list[str] = []
    counter = [0]
    _run(store, calls, lambda: CrashingRunner(store, counter), None)
    outcome = _outcome(store, calls)
    assert outcome.statuses == {"completed": 2}
    assert len(outcome.memory) == 2 and {m[3] for m in outcome.memory} == {"agent"}
    assert ("thread:" + THREAD, "/research/acme.md") in {f[:2] for f in outcome.files}
    return outcome, store.commits - start, counter[0]


def _compare(reference: Outcome, got: Outcome, where: str) -> None:
    assert got.transcript == reference.transcript, f"{where}: transcript differs"
    assert got.files == reference.files, f"{where}: files differ"
    assert got.memory == reference.memory, f"{where}: memory versions differ"
    assert got.model_calls == reference.model_calls, f"{where}: model calls differ"
    assert got.statuses == reference.statuses, f"{where}: run statuses differ"
    assert got.counts == reference.counts, f"{where}: stored counts differ"


def test_a_session_killed_after_any_commit_resumes_to_the_uninterrupted_result(
    reference: tuple[Outcome, int, int],
) -> None:
    expected, commits, _steps = reference
    assert commits > 30  # the session is big enough to cross every kind of write
    for k in range(1, commits + 1):
        got, crashed = _session_with_a_crash(kill_after_commit=k)
        assert crashed != "no crash", f"commit {k} of {commits} was never reached"
        _compare(expected, got, f"{crashed} of {commits}")


@pytest.mark.parametrize("how", ["kill", "interrupt"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_session_stopped_at_any_step_boundary_resumes_to_the_uninterrupted_result(
    reference: tuple[Outcome, int, int], when: str, how: str
) -> None:
    expected, _commits, steps = reference
    assert steps > 10
    for n in range(1, steps + 1):
        got, crashed = _session_with_a_crash(step=n, when=when, how=how)
        assert crashed != "no crash", f"step {n} of {steps} was never reached"
        _compare(expected, got, crashed)


@pytest.mark.parametrize("stop", ["interrupt_after_commit", "raise_after_commit"])
def test_a_session_interrupted_after_any_commit_resumes_to_the_uninterrupted_result(
    reference: tuple[Outcome, int, int], stop: str
) -> None:
    # Ctrl-C delivered to the process, or a KeyboardInterrupt raised inside the commit
    expected, commits, _steps = reference
    for k in range(1, commits + 1):
        got, crashed = _session_with_a_crash(**{stop: k})
        _compare(expected, got, f"{crashed} of {commits}")
