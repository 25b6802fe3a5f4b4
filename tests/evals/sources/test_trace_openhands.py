"""OpenHands v0 trajectories (a JSON list of events), on a hand-made fixture."""

from __future__ import annotations

from pathlib import Path

from helpers.traces import read_one

from evals.sources.to_scenario import trace_to_scenario

FIXTURES = Path(__file__).parent / "fixtures"


def test_actions_are_calls_observations_their_results_and_condensation_a_compaction() -> None:
    path = FIXTURES / "openhands_trajectory.json"
    trace = read_one(path, "openhands")
    assert trace.system.startswith("You are OpenHands agent")
    assert [m.role for m in trace.messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant"
    ]  # fmt: skip
    # two actions of one model response: one message, the model's own arguments
    first = trace.messages[1]
    assert [(c.id, c.name) for c in first.tool_calls] == [
        ("toolu_a", "execute_bash"), ("toolu_b", "str_replace_editor")
    ]  # fmt: skip
    assert first.tool_calls[1].arguments == {"command": "view", "path": "/workspace/src/client.py"}
    assert first.usage is not None and first.usage.cache_read_tokens == 5800
    assert trace.messages[5].is_error  # an error observation
    assert trace.messages[6].text.startswith("The edit did not apply")  # finish
    (compaction,) = trace.compactions
    assert compaction.index == 4 and "line 14" in compaction.summary
    assert (compaction.tokens_before, compaction.tokens_after) == (6190, 2300)
    assert not trace.skipped
    assert trace_to_scenario(trace)["source"]["format"] == "openhands"
