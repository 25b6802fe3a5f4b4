"""Probe hygiene rules found on held-out public traces (evals/sources/hygiene.py, roles.py): a
dictionary word in any case is no answer, and a value named as a path must look like one."""

from __future__ import annotations

import json

import pytest

from evals.sources.hygiene import is_word, rejection
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Trace, TraceMessage, TraceToolCall


def _call(id_: str, tool: str, **args: object) -> TraceMessage:
    return TraceMessage("assistant", "", [TraceToolCall(id_, tool, dict(args))])


def _step(id_: str, tool: str, result: str, **args: object) -> list[TraceMessage]:
    return [_call(id_, tool, **args), TraceMessage("tool", result, tool_call_id=id_)]


@pytest.mark.parametrize("value", ["DEN", "SEA", "LAX", "Harbor", "quantifier", "Quantifier"])
def test_a_dictionary_word_in_any_case_is_a_word(value: str) -> None:
    # `quantifier` is two tokens of the tokenizer, `DEN` an acronym: both are English words.
    assert is_word(value)
    assert rejection(value) == "word"


@pytest.mark.parametrize("value", ["JFK", "SFO", "ORD", "QuerySet", "sympify", "M-Claude"])
def test_names_and_codes_that_are_no_english_word_stay_distinctive(value: str) -> None:
    assert not is_word(value)
    assert rejection(value) is None


def test_an_airport_code_that_is_a_word_is_not_probed() -> None:
    trace = Trace("air", "openai-chat", "air.json")
    flight = {"reservation_id": "K1P9WD", "origin": "DEN", "destination": "JFK"}
    trace.messages = [
        TraceMessage("user", "Move my trip, reservation K1P9WD."),
        *_step("a", "get_reservation_details", json.dumps(flight), reservation_id="K1P9WD"),
        *_step("b", "policy", "changes allowed within 24 hours", topic="changes"),
        *_step("c", "search_direct_flight", "[]", origin="DEN", destination="JFK"),
    ]
    doc = trace_to_scenario(trace)
    answers = [p["answer"] for p in doc["probes"]]
    assert "JFK" in answers and "DEN" not in answers
    assert doc["probe_counts"]["rejected_word"] >= 1
