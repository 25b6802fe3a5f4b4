"""A Claude Code subagent's own file, `agent-<id>.jsonl`, beside its session: its own trace
named as the session's subagent, and left out only when its session already holds its run.
Hand-made fixtures only."""

from __future__ import annotations

from pathlib import Path

from helpers.traces import claude_event

from evals.sources.copies import held_elsewhere
from evals.sources.formats import read_folder
from evals.sources.trace import Trace


def _call(call_id: str, command: str) -> list[dict[str, object]]:
    return [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]


def _result(call_id: str, text: str) -> list[dict[str, object]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text}]


def _parent_and_agent(folder: Path, in_file: bool = False) -> None:
    """A session whose Task call ran agent `b7c1`, and that agent's own file beside it (as
    Claude Code 2.0 writes them into the project folder); `in_file`: the session file holds
    the agent's run too, as sidechain events (as older versions wrote it)."""
    task = [{"type": "tool_use", "id": "toolu_9", "name": "Task",
             "input": {"prompt": "Count the TODOs.", "subagent_type": "Explore"}}]  # fmt: skip
    done = _result("toolu_9", "12 TODOs\nagentId: b7c1")
    agent = {"isSidechain": True, "agentId": "b7c1"}
    run = [
        claude_event("p1", "x1", None, "user", "Count the TODOs.", **agent),
        claude_event("p1", "x2", "x1", "assistant", _call("g1", "grep -rc TODO src"), **agent),
        claude_event("p1", "x3", "x2", "user", _result("g1", "src/a.py:7\nsrc/b.py:5"), **agent),
        claude_event("p1", "x4", "x3", "assistant", "12 TODOs", **agent),
    ]
    (folder / "p1.jsonl").write_text("\n".join([
        claude_event("p1", "1", None, "user", "How many TODOs?"),
        claude_event("p1", "2", "1", "assistant", task),
        *(run if in_file else []),
        claude_event("p1", "3", "2", "user", done),
        claude_event("p1", "4", "3", "assistant", "12."),
    ]) + "\n")  # fmt: skip
    (folder / "agent-b7c1.jsonl").write_text("\n".join(run) + "\n")


def test_an_agent_file_beside_its_session_is_its_own_trace_named_as_its_subagent(
    tmp_path: Path,
) -> None:
    _parent_and_agent(tmp_path)
    traces = [t for t in read_folder(tmp_path) if isinstance(t, Trace)]
    assert [t.id for t in traces] == ["p1/agent-b7c1", "p1"]
    agent, parent = traces
    assert agent.metadata["subagent_of"] == "p1" and agent.metadata["agent_id"] == "b7c1"
    assert [m.text for m in agent.messages][-1] == "12 TODOs"
    # The session holds only the Task call and the agent's answer, not its run: nothing of
    # it is counted twice, and the session reads as it did.
    assert [m.text for m in parent.messages] == ["How many TODOs?", "", "12 TODOs\nagentId: b7c1",
                                                 "12."]  # fmt: skip
    assert not parent.subagents
    assert held_elsewhere(traces) == {}


def test_an_agent_file_whose_run_its_session_holds_is_left_out_naming_the_session(
    tmp_path: Path,
) -> None:
    _parent_and_agent(tmp_path, in_file=True)
    traces = [t for t in read_folder(tmp_path) if isinstance(t, Trace)]
    (sub,) = traces[1].subagents  # the session replays the run as its Task call's subagent
    assert sub.parent_call_id == "toolu_9"
    assert held_elsewhere(traces) == {0: (
        "trace p1/agent-b7c1 (agent-b7c1.jsonl): all 4 of its records are a subagent's run "
        "in trace p1 (p1.jsonl), which replays it as the subagent of its Task call"
    )}  # fmt: skip
