"""The trace model's totals: what `source.original` of an imported scenario shows."""

from evals.sources.trace import Compaction, Trace, TraceMessage, TraceUsage, Where


def test_original_usage_sums_calls_and_subagents_and_keeps_only_known_keys() -> None:
    sub = Trace(
        id="s",
        format="claude-code",
        source="f.jsonl",
        messages=[
            TraceMessage("assistant", usage=TraceUsage(input_tokens=10, cache_read_tokens=5))
        ],
        compactions=[Compaction(0)],
    )
    trace = Trace(
        id="t",
        format="claude-code",
        source="f.jsonl",
        model="claude-x",
        messages=[
            TraceMessage("user", "hi"),
            TraceMessage("assistant", usage=TraceUsage(input_tokens=100, output_tokens=7)),
        ],
        compactions=[Compaction(1, "summary")],
        subagents=[sub],
    )
    assert trace.original_usage() == {
        "input_tokens": 110,
        "output_tokens": 7,
        "cache_read_tokens": 5,
        "compactions": 2,
        "model": "claude-x",
    }


def test_where_names_file_and_line() -> None:
    assert str(Where("a.jsonl", 3)) == "a.jsonl:3"
    assert str(Where("a.json")) == "a.json"
