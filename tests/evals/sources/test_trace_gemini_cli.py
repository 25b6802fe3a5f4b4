"""Gemini CLI sessions, one JSON document or JSONL, on hand-made fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.traces import read_one

from evals.sources.formats import read_traces
from evals.sources.to_scenario import trace_to_scenario

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["gemini_cli_session.json", "gemini_cli_session.jsonl"])
def test_a_session_reads_calls_with_their_results_usage_and_no_notices(name: str) -> None:
    trace = read_one(name, "gemini-cli")
    assert trace.id == "5b7c2e90-1f4d-4a8e-9c3b-6d2a0e8f7a11" and trace.model == "gemini-2.5-pro"
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    call = trace.messages[1].tool_calls[0]
    assert call.arguments == {"absolute_path": "/home/kai/app/.github/workflows/ci.yml"}
    assert "node-version: 20.11.1" in trace.messages[2].text  # the functionResponse output
    usage = trace.messages[1].usage
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens) == (5120, 4096)
    assert "fallback" not in " ".join(m.text for m in trace.messages)  # an info line
    assert trace_to_scenario(trace)["source"]["format"] == "gemini-cli"


def test_a_rewind_drops_the_message_it_names_and_says_so() -> None:
    (trace,) = read_traces(FIXTURES / "gemini_cli_session.jsonl")
    assert "node --version" not in str([c.arguments for m in trace.messages for c in m.tool_calls])
    assert [(s.where.line, s.reason) for s in trace.skipped] == [
        (4, "rewound: dropped from the session")
    ]
