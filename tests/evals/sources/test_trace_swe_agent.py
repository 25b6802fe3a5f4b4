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


def test_a_last_action_answered_only_in_the_trajectory_gets_that_observation() -> None:
    # SWE-agent before 1.0 left the last step's observation (the submission) out of `history`.
    trace = read_one("swe_agent_last_step.traj", "swe-agent")
    assert [s.reason for s in trace.skipped] == []
    assert [m.role for m in trace.messages] == ["user", *["assistant", "tool"] * 3]
    assert "demonstration" not in trace.messages[0].text
    calls = [c for m in trace.messages for c in m.tool_calls]
    results = {m.tool_call_id: m.text for m in trace.messages if m.role == "tool"}
    assert [c.arguments["command"] for c in calls][-1] == "submit"
    assert results[calls[-1].id].startswith("\ndiff --git a/src/tally/ledger.py")
    assert results[calls[1].id].startswith("Your command ran successfully")  # history's own


def test_a_function_call_whose_tool_message_is_missing_takes_the_trajectory_step(
    tmp_path: Path,
) -> None:
    doc = json.loads((FIXTURES / "swe_agent_function_calling.traj").read_text())
    doc["history"] = doc["history"][:-1]  # the submit call's tool message is not in history
    # A demonstration put in history step by step: its action matches no step of the run.
    call = {"id": "call_d", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
    demo = {"role": "assistant", "content": "demo", "action": "submit", "agent": "main",
            "is_demo": True, "tool_calls": [call]}  # fmt: skip
    doc["history"].insert(1, demo)
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc, indent=1))
    (trace,) = read_traces(path, "swe-agent")
    assert [s.reason for s in trace.skipped] == []
    assert trace.messages[-1].role == "tool" and trace.messages[-1].tool_call_id == "call_s1"
    assert trace.messages[-1].text == doc["trajectory"][1]["observation"]


def test_an_action_the_trajectory_does_not_hold_stays_unanswered_and_is_named(
    tmp_path: Path,
) -> None:
    doc = json.loads((FIXTURES / "swe_agent_last_step.traj").read_text())
    doc["trajectory"][-1]["action"] = "exit_cost"  # the steps disagree: no observation to take
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc, indent=1))
    (trace,) = read_traces(path, "swe-agent")
    assert [s.reason for s in trace.skipped] == ["call 'action_3' (bash) has no result"]


def test_a_line_number_search_file_found_is_probed_by_its_file_and_line(tmp_path: Path) -> None:
    state = "\n(Open file: n/a)\n(Current directory: /tally)\nbash-$"
    steps = [
        ('search_file "def settle_account" src/tally/ledger.py',
         'Found 1 matches for "def settle_account" in /tally/src/tally/ledger.py:\n'
         "Line 118:def settle_account(account_id, fee_cents):\n"
         'End of matches for "def settle_account" in /tally/src/tally/ledger.py'),
        ("python -m pytest tests -q", "\n".join(f"tests/test_fees.py::test_case_{n} PASSED"
                                                for n in range(60))),
        ("goto 118", "[File: /tally/src/tally/ledger.py (212 lines total)]\n(117 more lines "
                     "above)\n118:def settle_account(account_id, fee_cents):"),
        ("submit", "diff --git a/src/tally/ledger.py b/src/tally/ledger.py"),
    ]  # fmt: skip
    history: list[dict[str, object]] = [
        {"role": "system", "content": "SETTING: a shell with a file viewer.", "agent": "primary"},
        {"role": "user", "content": "ISSUE: settle_account rounds the fee twice." + state,
         "agent": "primary"},
    ]  # fmt: skip
    for action, observation in steps:
        history.append({"role": "assistant", "content": f"DISCUSSION\n```\n{action}\n```",
                        "thought": "DISCUSSION", "action": action, "agent": "primary"})  # fmt: skip
        history.append({"role": "user", "content": observation + state, "agent": "primary"})
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"history": history, "info": {}}, indent=1))
    (trace,) = read_traces(path, "swe-agent")
    probes = trace_to_scenario(trace)["probes"]
    asked = {p["answer"]: p["question"] for p in probes}
    assert asked["118"] == (
        "What is the line number of `def settle_account` in `src/tally/ledger.py`?"
    )
