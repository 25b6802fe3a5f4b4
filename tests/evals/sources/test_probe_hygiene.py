"""Probe hygiene rules found on held-out public traces (evals/sources/hygiene.py, roles.py): a
dictionary word in any case is no answer, and a value named as a path must look like one."""

from __future__ import annotations

import json

import pytest

from evals.sources.hygiene import is_word, path_shaped, rejection
from evals.sources.roles import Call, role_of
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


@pytest.mark.parametrize(
    "value", ["src/app/main.py", "README.md", "/etc/hosts", "./build", "~/notes", "django/db",
              "a/b/c", "docs/"],
)  # fmt: skip
def test_a_path_is_path_shaped(value: str) -> None:
    assert path_shaped(value)


@pytest.mark.parametrize("value", ["w/o", "and/or", "I/O", "TCP/IP", "24/7", "12/05/2024"])
def test_slash_joined_words_numbers_and_abbreviations_are_no_path(value: str) -> None:
    assert not path_shaped(value)


def test_a_message_names_no_value_by_a_shape_that_says_nothing_of_it() -> None:
    # The one value of its shape in a user's message is named by that shape only when the
    # shape says what it is: a path that is one, an id, a date; not `w/o`, a name, a number.
    assert role_of("w/o", "Rebuild the index w/o the cache.", "user", None, None) is None
    assert role_of("M-Claude", "Sync the notes of M-Claude now.", "user", None, None) is None
    assert role_of("600", "I can pay 600 at most.", "user", None, None) is None
    found = role_of("src/app/main.py", "The bug is in src/app/main.py.", "user", None, None)
    assert found is not None and found["phrase"] == "the path the user gave"
    found = role_of("KA7I60", "Look at KA7I60 please.", "user", None, None)
    assert found is not None and found["phrase"] == "the id the user gave"


def test_a_command_output_names_no_slash_joined_word_as_a_path() -> None:
    found = role_of("and/or", "Flags: and/or", "tool", Call("bash", {"command": "mode"}), None)
    assert found is None or "path" not in found["phrase"]


def _used_from_user(task: str, command: str) -> dict:
    trace = Trace("u", "mini-swe-agent", "u.traj.json")
    trace.messages = [
        TraceMessage("user", task),
        *_step("a", "bash", "On branch main", command="git status"),
        *_step("b", "bash", "ok", command="make lint"),
        *_step("c", "bash", "done", command=command),
    ]
    return trace_to_scenario(trace)


def test_values_a_shape_cannot_name_are_rejected_by_reason() -> None:
    doc = _used_from_user("Rebuild the index w/o the cache.", "make rebuild MODE=w/o")
    assert doc["probes"] == [] and doc["probe_counts"]["rejected_not_a_path"] == 1
    doc = _used_from_user("I can wait 4500 seconds at most.", "sleep 4500")
    assert doc["probes"] == [] and doc["probe_counts"]["rejected_shape_only"] == 1
    doc = _used_from_user("The bug is in src/app/main.py.", "python src/app/main.py")
    (probe,) = doc["probes"]
    assert probe["question"] == "What is the path the user gave?"


def test_a_value_named_by_the_argument_it_went_to_is_ambiguous_beside_a_rejected_rival() -> None:
    # The user gave three companies; `Juniper` is a word (no probe), yet "the `company` the
    # user gave" still names it as well as `Kestrovia`: neither is asked.
    trace = Trace("c", "openai-chat", "c.json")
    trace.messages = [
        TraceMessage("user", "Study Fjordline Shipping, Juniper Retail and Kestrovia Grid."),
        *_step("a", "query", "revenue 849.7", company="Juniper"),
        *_step("b", "news", "no news", topic="ports"),
        *_step("c", "query", "revenue 210.2", company="Kestrovia"),
    ]
    doc = trace_to_scenario(trace)
    assert "Kestrovia" not in [p["answer"] for p in doc["probes"]]
    assert doc["probe_counts"]["rejected_ambiguous"] == 1
