"""LangChain messages (three shapes) and LangSmith run exports, on hand-made fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.traces import FIXTURES, roles

from evals.sources.formats import detect_format, read_traces
from evals.sources.to_scenario import trace_to_scenario


@pytest.mark.parametrize(
    ("name", "format"),
    [
        ("langchain_deepagents.json", "langchain"),
        ("langchain_messages_to_dict.json", "langchain"),
        ("langchain_plain.jsonl", "langchain"),
        ("langsmith_runs.jsonl", "langsmith"),
        ("langsmith_envelope.json", "langsmith"),
    ],
)
def test_each_fixture_is_recognised_and_imports(name: str, format: str) -> None:
    assert detect_format(FIXTURES / name) == format
    for trace in read_traces(FIXTURES / name):
        assert trace_to_scenario(trace)["source"]["format"] == format


def test_serialized_constructors_with_blocks_usage_errors_and_deepagents_markers() -> None:
    (trace,) = read_traces(FIXTURES / "langchain_deepagents.json")
    assert trace.system == "You are a deep agent that plans trips."
    assert roles(trace) == ["user", "assistant", "tool", "assistant", "tool"] + [
        "assistant", "tool", "assistant", "tool", "assistant"
    ]  # fmt: skip
    # the Anthropic tool_use block and the tool_calls list name one call, read once
    (call,) = trace.messages[1].tool_calls
    assert (call.id, call.arguments["date"]) == ("toolu_01", "2026-05-12")
    assert trace.messages[1].text == "Searching the ferry timetable."
    usage = trace.messages[3].usage
    assert usage is not None and (usage.cache_read_tokens, usage.cache_creation_tokens) == (
        1700,
        310,
    )
    assert trace.model == "claude-sonnet-4-5"
    assert trace.messages[8].is_error  # status "error"
    (compaction,) = trace.compactions  # the summary message is no user turn
    assert compaction.index == 7 and "NOK 498" in compaction.summary
    assert trace.metadata["evicted"] == [
        {"tool_call_id": "toolu_01", "path": "/large_tool_results/toolu_01"}
    ]
    assert not trace.skipped


def test_messages_to_dict_and_plain_dicts() -> None:
    (dicts,) = read_traces(FIXTURES / "langchain_messages_to_dict.json")
    assert dicts.system == "You answer questions about invoices."
    assert roles(dicts) == ["user", "assistant", "tool", "assistant"]
    assert dicts.messages[1].tool_calls[0].arguments == {"invoice_id": "INV-3307"}
    (plain,) = read_traces(FIXTURES / "langchain_plain.jsonl")
    assert roles(plain) == ["user", "assistant", "tool", "assistant"]  # type and role mixed


def test_langsmith_runs_make_one_thread_in_dotted_order_with_the_harness_compaction() -> None:
    (trace,) = read_traces(FIXTURES / "langsmith_runs.jsonl")
    assert trace.id == "support-41"  # the second trace's llm runs named no thread: its root did
    assert trace.system == "You are a support agent for a ferry company."
    assert roles(trace) == ["user", "assistant", "tool", "assistant"] * 1 + [
        "user", "assistant", "tool", "assistant"
    ]  # fmt: skip
    # the file lists run 5 before run 4: dotted_order puts the call that made call_b2 first
    assert trace.messages[5].tool_calls[0].id == "call_b2"
    (compaction,) = trace.compactions
    assert compaction.index == 4 and "BK-88213" in compaction.summary
    assert (compaction.tokens_before, compaction.tokens_after, compaction.kept) == (489, 160, 0)
    assert trace.model == "gpt-4.1-mini"


def test_langsmith_threads_split_by_metadata_and_bad_runs_are_named(tmp_path: Path) -> None:
    def run(n: int, thread: str, text: str) -> dict:  # type: ignore[type-arg]
        return {
            "id": f"r{n}", "run_type": "llm", "trace_id": f"t{n}", "dotted_order": f"2026{n}",
            "extra": {"metadata": {"conversation_id": thread}},
            "inputs": {"messages": [[{"type": "human", "content": text}]]},
            "outputs": {"generations": [[{"text": "ok", "message": None}]]},
        }  # fmt: skip

    path = tmp_path / "export.jsonl"
    lines = [json.dumps(run(1, "a", "first")), "{not json", json.dumps({"name": "x"}),
             json.dumps(run(2, "b", "second"))]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    first, second = read_traces(path)
    assert (first.id, second.id) == ("a", "b")
    assert [m.text for m in second.messages] == ["second", "ok"]
    reasons = [(s.where.line, s.reason) for s in first.skipped]
    assert (3, "not a LangSmith run (no run_type)") in reasons
    assert any(line == 2 for line, _ in reasons)


def test_claude_code_compaction_keeps_its_trigger_and_tokens_before_and_after() -> None:
    (trace,) = read_traces(FIXTURES / "claude_code.jsonl")
    (compaction,) = trace.compactions
    assert (compaction.trigger, compaction.tokens_before) == ("auto", 150000)
    after = trace.messages[compaction.index].usage  # the first call after it
    assert after is not None and compaction.tokens_after == (
        (after.input_tokens or 0) + (after.cache_read_tokens or 0)
        + (after.cache_creation_tokens or 0)
    )  # fmt: skip


def test_a_codex_compaction_reads_its_replacement_history(tmp_path: Path) -> None:
    lines = (FIXTURES / "codex_rollout.jsonl").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"compacted"' in line)
    history = [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Why does tide_table.py fail for 9414290?"}]},
    ]  # fmt: skip
    lines[at] = json.dumps(
        {"timestamp": "t", "type": "compacted",
         "payload": {"message": "Patched line 30.", "replacement_history": history}}
    )  # fmt: skip
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (trace,) = read_traces(path)
    (compaction,) = trace.compactions
    assert compaction.summary == "Why does tide_table.py fail for 9414290?\n\nPatched line 30."
    assert compaction.tokens_after == 6010  # the next call's prompt


def test_a_langsmith_run_whose_inputs_are_a_blob_is_named(tmp_path: Path) -> None:
    lines = (FIXTURES / "langsmith_runs.jsonl").read_text().splitlines()
    run = json.loads(lines[1])
    run["inputs"] = {}
    run["inputs_s3_urls"] = {"messages": "s3://bucket/key"}
    lines[1] = json.dumps(run)
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (trace,) = read_traces(path)
    assert (2, "an llm run whose inputs are a stored blob, not in the export") in [
        (s.where.line, s.reason) for s in trace.skipped
    ]


def test_a_cleared_tool_result_keeps_the_messages_around_it_in_the_original_context(
    tmp_path: Path,
) -> None:
    def m(kind: str, text: str, **extra: object) -> dict:  # type: ignore[type-arg]
        return {"type": kind, "content": text, **extra}

    call = {"name": "ls", "args": {}, "id": "c1"}
    u, a1 = m("human", "List the bucket."), m("ai", "", tool_calls=[call])
    t1, a2 = m("tool", "a.csv b.csv c.csv", tool_call_id="c1"), m("ai", "Three files.")
    u2, a3 = m("human", "Which is newest?"), m("ai", "c.csv")

    def run(n: int, inputs: list[object], out: object) -> str:
        return json.dumps({"id": f"r{n}", "run_type": "llm", "trace_id": "t",
                           "dotted_order": str(n), "inputs": {"messages": [inputs]},
                           "outputs": {"generations": [[{"message": out}]]}})  # fmt: skip

    cleared = m("tool", "[result cleared]", tool_call_id="c1")
    path = tmp_path / "edit.jsonl"
    path.write_text("\n".join([run(1, [u], a1), run(2, [u, a1, t1], a2),
                               run(3, [u, a1, cleared, a2, u2], a3)]) + "\n")  # fmt: skip
    (trace,) = read_traces(path)
    (compaction,) = trace.compactions
    assert compaction.kept == 1  # the answer after the cleared result, as it was
    assert compaction.summary.split("\n\n") == ["List the bucket.", "[result cleared]"]
    assert [m.text for m in trace.messages][-2:] == ["Which is newest?", "c.csv"]
