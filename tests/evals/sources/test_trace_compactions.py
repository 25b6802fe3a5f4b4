"""What an imported trace's compactions record for the `original` arm and the audit."""

from __future__ import annotations

from evals.sources.compactions import compaction_specs
from evals.sources.trace import Compaction, Trace, TraceMessage, TraceToolCall


def _trace() -> Trace:
    call = TraceToolCall("c1", "get_booking", {"booking_id": "BK-88213"})
    return Trace("t", "langsmith", "f.jsonl", messages=[
        TraceMessage("user", "Check booking BK-88213."),
        TraceMessage("assistant", "", [call]),
        TraceMessage("tool", "sailing FJ-452, seat 14C, passenger A. Lind", tool_call_id="c1"),
        TraceMessage("assistant", "It is on FJ-452."),
        TraceMessage("user", "Move it to 12 May."),
        TraceMessage("assistant", "Moving."),
    ], compactions=[Compaction(4, "Booking BK-88213 is on FJ-452.", tokens_before=900,
                               tokens_after=120, kept=1)])  # fmt: skip


def test_a_compaction_is_anchored_on_the_next_user_turn_and_names_the_probes_it_lost() -> None:
    turns = [{"id": "u000"}, {"id": "u001"}]
    probes = [
        {"id": "seat", "answer": "14C", "after": "u001"},  # only in the result it dropped
        {"id": "sailing", "answer": "FJ-452", "after": "u001"},  # in its summary
        {"id": "early", "answer": "A. Lind", "after": "nowhere"},  # asked at the end: lost too
        {"id": "new", "answer": "12 May", "after": "u001"},  # came after it
    ]
    (spec,) = compaction_specs(_trace(), turns, probes)
    assert spec["anchor"] == "Move it to 12 May." and spec.get("offset", 0) == 0
    assert spec["kept"] == 1 and (spec["tokens_before"], spec["tokens_after"]) == (900, 120)
    assert spec["lost"] == ["seat", "early"]
    assert spec["turn"] == "u000"


def test_a_compaction_after_the_last_turn_changes_nothing_a_replay_sees() -> None:
    trace = _trace()
    trace.compactions = [Compaction(6, "late")]
    assert compaction_specs(trace, [{"id": "u000"}], []) == []


def test_a_compaction_summary_is_redacted_before_it_is_written() -> None:
    from evals.sources.redact import Redactor
    from evals.sources.to_scenario import redact_trace

    trace = _trace()
    trace.compactions[
        0
    ].summary = "Booking BK-88213; key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"
    (compaction,) = redact_trace(trace, Redactor()).compactions
    assert "sk-ant-api03" not in compaction.summary and "BK-88213" in compaction.summary


def test_a_probe_asked_in_the_same_turn_before_the_compaction_is_not_lost() -> None:
    trace = _trace()
    trace.compactions = [Compaction(3, "nothing")]  # turn u000, after its one step
    turns = [{"id": "u000"}, {"id": "u001"}]
    probes = [
        {"id": "before", "answer": "14C", "after": "u000", "at_step": 0},
        {"id": "after", "answer": "14C", "after": "u000", "at_step": 1},
    ]
    (spec,) = compaction_specs(trace, turns, probes)
    assert spec["lost"] == ["after"]
