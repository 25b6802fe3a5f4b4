"""OpenAI Chat Completions traces: run records with ground truth, legacy function calls."""

from pathlib import Path

from evals.sources.formats import detect_format, read_traces
from evals.sources.trace import ExpectedAction

FIXTURES = Path(__file__).parent / "fixtures"


def test_run_records_become_one_trace_each_with_their_ground_truth() -> None:
    path = FIXTURES / "chat_tau.json"
    assert detect_format(path) == "openai-chat"
    first, second = read_traces(path)
    assert (first.id, second.id) == ("chat_tau-1", "chat_tau-2")
    assert first.system == "You are a retail support agent."
    assert [m.role for m in first.messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    call = first.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == (
        "call_a1", "get_order_details", {"order_id": "#W2611340"}
    )  # fmt: skip
    assert first.messages[2].tool_call_id == "call_a1"
    assert first.messages[4].tool_name == "cancel_pending_order"  # named from its call
    assert first.ground_truth.actions[0] == ExpectedAction(
        "get_order_details", {"order_id": "#W2611340"}
    )
    assert first.ground_truth.outcome == {"reward": 1.0}
    assert first.metadata["task_id"] == 7 and "traj" not in first.metadata
    assert not first.skipped


def test_legacy_function_call_is_answered_by_the_function_message() -> None:
    second = list(read_traces(FIXTURES / "chat_tau.json"))[1]
    call = second.messages[1].tool_calls[0]
    assert call.name == "get_weather" and call.arguments == {"city": "Oslo"}
    assert second.messages[2].role == "tool"
    assert second.messages[2].tool_call_id == call.id
    assert second.messages[2].text == "-3 C, snow"
