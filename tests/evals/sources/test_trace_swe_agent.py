"""SWE-agent `.traj` files, function-calling and thought-action, on hand-made fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.traces import read_one

from evals.sources.formats import read_traces
from evals.sources.to_scenario import trace_to_scenario

FIXTURES = Path(__file__).parent / "fixtures"


def test_function_calling_history_leaves_demonstrations_out_and_keeps_the_outcome() -> None:
    trace = read_one("swe_agent_function_calling.traj", "swe-agent")
    assert trace.system.startswith("You are an autonomous programmer")
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert "Example" not in trace.messages[0].text  # the demonstration is no turn
    assert trace.messages[1].tool_calls[0].arguments == {"file_name": "quantity.py"}
    assert trace.messages[2].tool_call_id == "call_u7Q"
    assert trace.ground_truth.patch_files == ["astropy/units/quantity.py"]
    usage = trace.messages[3].usage
    assert usage is not None and (usage.input_tokens, usage.cost_usd) == (21304, 0.0842)
    assert trace_to_scenario(trace)["source"]["format"] == "swe-agent"


def test_thought_action_commands_are_bash_calls_answered_by_the_next_observation() -> None:
    trace = read_one("swe_agent_thought_action.traj", "swe-agent")
    call = trace.messages[1].tool_calls[0]
    assert (call.name, call.arguments) == ("bash", {"command": 'search_dir "timeout" src/requests'})
    assert trace.messages[2].role == "tool" and "line 488" in trace.messages[2].text
    assert trace.ground_truth.outcome == {"exit_status": "submitted"}


def test_a_trajectory_without_history_reads_its_steps(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "swe_agent_function_calling.traj").read_text())
    doc["history"] = []
    doc["trajectory"][0]["action"] = 7  # a step of the wrong shape: named, not fatal
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc, indent=1))
    (trace,) = read_traces(path, "swe-agent")
    assert [m.role for m in trace.messages] == ["assistant", "tool"]
    assert [s.reason for s in trace.skipped] == ["a trajectory step with no action"]
