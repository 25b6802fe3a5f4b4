"""Probes of an imported trace (evals/sources/trace_probes.py): what the run used, asked by the
role the value had in its source (a JSON key path and its entity, a listing's file and line, the
command that printed it), only for distinctive values read causally with something between
source and use, rejections counted by reason, restated values marked `carried`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.traces import write_ledger

from evals.sources.formats import read_traces
from evals.sources.to_scenario import tool_names, trace_to_scenario
from evals.sources.trace import Trace, TraceMessage, TraceToolCall
from evals.sources.trace_probes import MAX_PROBES, trace_probes
from evals.sources.walk import walk_trace

FIXTURES = Path(__file__).parent / "fixtures"
USER = {
    "name": {"first_name": "Ines", "last_name": "Varga"},
    "payment_methods": {
        "credit_card_4421486": {"source": "credit_card", "last_four": "7447",
                                "id": "credit_card_4421486"},
        "gift_card_9915020": {"source": "gift_card", "amount": 120, "id": "gift_card_9915020"},
    },
    "reservations": ["Q7T2ZM", "K1P9WD"],
}  # fmt: skip


def _call(id_: str, tool: str, **args: object) -> TraceMessage:
    return TraceMessage("assistant", "", [TraceToolCall(id_, tool, dict(args))])


def _step(id_: str, tool: str, result: str, **args: object) -> tuple[TraceMessage, TraceMessage]:
    """A tool call and its result."""
    return _call(id_, tool, **args), TraceMessage("tool", result, tool_call_id=id_)


def _session(task: str, *steps: tuple[TraceMessage, TraceMessage]) -> list[TraceMessage]:
    """The user's task, then each step's call and result."""
    return [TraceMessage("user", task), *(message for step in steps for message in step)]


def _probe(doc: dict, answer: str) -> dict:
    (probe,) = [p for p in doc["probes"] if p["answer"] == answer]
    return probe


def _user_trace(reply: str = "Fine.") -> Trace:
    trace = Trace("airline", "openai-chat", "airline.json")
    trace.messages = [
        TraceMessage("user", "Pay my trip with the card ending 7447; my user id is ines_varga_31."),
        TraceMessage("assistant", "Let me look you up."),
        TraceMessage("user", "Sure, go ahead."),
        _call("a", "get_user_details", user_id="ines_varga_31"),
        TraceMessage("tool", json.dumps(USER), tool_call_id="a"),
        _call("x", "list_airports", country="US"),
        TraceMessage("tool", "JFK, LAX, SFO", tool_call_id="x"),
        _call("b", "get_reservation_details", reservation_id="K1P9WD"),
        TraceMessage("tool", json.dumps({"reservation_id": "K1P9WD", "origin": "JFK"}),
                     tool_call_id="b"),
        TraceMessage("assistant", "Checking the fare."),
        TraceMessage("user", reply),
        _call("c", "book_reservation", payment_id="credit_card_4421486"),
        TraceMessage("tool", "booked", tool_call_id="c"),
    ]  # fmt: skip
    return trace


def test_a_json_value_is_asked_by_its_key_path_and_the_entity_it_belongs_to() -> None:
    doc = trace_to_scenario(_user_trace())
    card = _probe(doc, "credit_card_4421486")
    assert card["question"] == (
        "What is the `id` of the `payment_methods` entry whose `source` is `credit_card` in the "
        "`get_user_details` result?"
    )
    assert card["role"]["kind"] == "json_key" and card["role"]["shape"] == "identifier"
    assert {"payment_methods", "source", "credit_card", "id"} <= set(card["role"]["terms"])
    listed = _probe(doc, "K1P9WD")
    asked = "What is item 2 of `reservations` in the `get_user_details` result?"
    assert listed["question"] == asked
    assert listed["carried"] is False and card["carried"] is False


def test_a_value_the_agent_restated_between_source_and_use_is_carried() -> None:
    doc = trace_to_scenario(_user_trace(reply="Fine, charge credit_card_4421486."))
    assert _probe(doc, "credit_card_4421486")["carried"] is True
    assert doc["probe_counts"]["carried"] == 1


def test_a_value_used_right_where_it_was_read_is_rejected_and_counted() -> None:
    doc = trace_to_scenario(_user_trace())
    # the user id goes to get_user_details with no step and few tokens between: nothing to keep
    assert "ines_varga_31" not in [p["answer"] for p in doc["probes"]]
    assert doc["probe_counts"]["rejected_nothing_between"] >= 1
    assert all(
        p["provenance"]["steps_between"] > 0 or p["provenance"]["tokens_between"] >= 200
        for p in doc["probes"]
    )


def test_a_listing_line_number_is_asked_by_file_and_symbol() -> None:
    grep = "django/db/models/sql/query.py:1523:    def split_exclude(self, filter_expr, prefix):"
    trace = Trace("grep", "mini-swe-agent", "grep.traj.json")
    trace.messages = _session(
        "Fix the exclude bug.",
        _step("a", "bash", grep, command="grep -rn 'def split_exclude' django"),
        _step("b", "bash", "On branch main\nnothing to commit", command="git status"),
        _step("c", "read_file", "    def split_exclude(self, filter_expr, prefix):",
              path="django/db/models/sql/query.py", offset=1523),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    probe = _probe(doc, "1523")
    assert probe["question"] == (
        "What is the line number of `def split_exclude` in `django/db/models/sql/query.py`?"
    )
    assert probe["role"]["kind"] == "listing" and probe["role"]["shape"] == "number"
    assert "Step" not in probe["question"]


def test_words_fragments_and_short_numbers_are_rejected_by_reason() -> None:
    trace = Trace("junk", "openai-chat", "junk.json")
    trace.messages = _session(
        "Check the build.",
        _step("a", "run", "status: However\nretries: 7\nsizes: 2,5\nbuild: BLD-8812", name="build"),
        _step("b", "run", "clean", name="lint"),
        _step("c", "report", "ok", word="However", retries=7, sizes="2,5", build="BLD-8812"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert [p["answer"] for p in doc["probes"]] == ["BLD-8812"]
    counts = doc["probe_counts"]
    assert counts["rejected_word"] >= 1 and counts["rejected_fragment"] == 1  # However, 2,5
    assert counts["rejected_short_number"] == 1  # 7
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected_"))
    assert counts["candidates"] == rejected + len(doc["probes"])


def test_a_value_seen_only_inside_other_text_has_no_role_and_no_probe() -> None:
    # `125` stands in "Reading database ... 125%" only as part of a percentage: a coincidence
    trace = Trace("apt", "mini-swe-agent", "apt.traj.json")
    trace.messages = _session(
        "Install the toolkit.",
        _step("a", "bash", "Reading database ... 125%\nSetting up toolkit",
              command="apt-get install -y toolkit"),
        _step("b", "bash", "toolkit 3.1", command="toolkit --version"),
        _step("c", "bash", "done", command="toolkit --jobs 125"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert doc["probes"] == []
    assert doc["probe_counts"]["rejected_no_role"] == 1


def test_no_question_is_about_a_place_in_a_later_answer(tmp_path: Path) -> None:
    docs = [trace_to_scenario(t) for f in sorted(FIXTURES.iterdir()) for t in read_traces(f)]
    (ledger,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    docs.append(trace_to_scenario(ledger))
    probes = [p for d in docs for p in d["probes"]]
    assert len(probes) > 15
    for p in probes:
        assert p["role"]["phrase"] in p["question"]
        assert not re.search(r"\bStep \d|final answer|\(the \w+ in it\)", p["question"])
        assert p["answer"] not in p["question"]


def test_provenance_has_source_step_use_step_and_what_came_between(tmp_path: Path) -> None:
    (trace,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    doc = trace_to_scenario(trace)
    first = doc["probes"][0]
    assert first["answer"] == "ACC-1000" and first["after"] == "u000" and first["at_step"] == 10
    # ten results of one tool: the role says which call's result it means
    assert "`list_account` result for `index` `0`" in first["question"]
    prov = first["provenance"]
    assert prov["from"] == "trace" and prov["source_step"] == 1 and prov["steps_between"] == 9
    assert prov["use_step"] == "turn 1 step 11" and prov["source"] == "step 1 list_account result"
    gaps = [p["provenance"]["tokens_between"] for p in doc["probes"][:10]]
    assert gaps[0] > 4000 and gaps == sorted(gaps, reverse=True)  # earlier listings, longer gaps


def test_probes_are_capped_and_spread_over_the_run(tmp_path: Path) -> None:
    (trace,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    walk = walk_trace(trace, tool_names(trace))
    every, _ = trace_probes(walk, trace.ground_truth)
    assert len(every) == 11 < MAX_PROBES  # ten settlements and the final balance
    capped, rejected = trace_probes(walk, trace.ground_truth, cap=4)
    assert len(capped) == 4 and rejected["over_cap"] == 7
    # one per place asked, the longest distances first: the first four settlements
    assert sorted(p["at_step"] for p in capped) == [10, 11, 12, 13]


def test_a_gold_patch_file_is_probed_from_ground_truth() -> None:
    trace = Trace("patch", "mini-swe-agent", "p.json")
    trace.messages = _session(
        "Fix the crash.",
        _step("a", "bash", "lib/core/loader.py:41:    raise crash()", command="grep -rn crash lib"),
        _step("b", "bash", "", command="git diff"),
        _step("c", "bash", "", command="sed -i 4d lib/core/loader.py"),
    )  # fmt: skip
    trace.ground_truth.patch_files = ["lib/core/loader.py"]
    doc = trace_to_scenario(trace)
    (gt,) = [p for p in doc["probes"] if p["provenance"]["from"] == "ground-truth"]
    assert gt["answer"] == "lib/core/loader.py" and gt["at_step"] == 2
    # the file's role in its source: the grep line that found it
    assert gt["question"] == "What is the file that holds `raise crash()` (as `grep -rn crash " \
        "lib` listed it)?"  # fmt: skip


def test_values_the_agent_made_up_or_the_system_prompt_holds_are_not_probed() -> None:
    trace = Trace("own", "openai-chat", "own.json", system="Always cite policy POL-77.")
    trace.messages = _session(
        "Check it.",
        _step("a", "fetch", "ref REF-9001 ok; policy POL-77 applies", ref="REF-9001"),
        _step("b", "close", "closed", ref="REF-9001", policy="POL-77"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert doc["probes"] == []
    assert "{{" not in json.dumps(doc["turns"])


def test_a_value_that_turns_up_everywhere_is_neither_slotted_nor_probed() -> None:
    log = "\n".join(f"GET /api/item/{i} status 200 in {i + 3} ms" for i in range(20))
    trace = Trace("common", "openai-chat", "common.json")
    trace.messages = _session(
        "Check the API log.",
        _step("a", "read_log", log + "\nrequest id REQ-7781 failed", name="api"),
        _step("b", "count", "20", status="200", request="REQ-7781"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    args = doc["turns"][0]["steps"][1]["calls"][0]["arguments"]
    assert args == {"status": "200", "request": "{{arg_1}}"}
    assert doc["probe_counts"]["rejected_common"] == 1


def test_a_number_a_sed_substitution_copies_from_a_listing_is_asked_by_its_line() -> None:
    # Shell agents edit with `sed 's/old/new/'`: the old text between slashes is what the
    # file showed, and a replay that lost the file must not get it for free.
    listing = "\n".join(f"{n:>4}\t    limit = {1000 + 37 * n}" for n in range(1, 40))
    trace = Trace("sed", "mini-swe-agent", "sed.traj.json")
    trace.messages = _session(
        "Fix the off-by-one in lib/rates.py.",
        _step("a", "bash", listing, command="cat -n lib/rates.py"),
        _step("x", "bash", "a1b2c3d Rates", command="git log -1 --oneline"),
        _step("b", "bash", "", command="sed -i '21s/limit = 1777/limit = 1 + 1777/' lib/rates.py"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    command = doc["turns"][0]["steps"][2]["calls"][0]["arguments"]["command"]
    assert command == "sed -i '21s/limit = {{arg_2}}/limit = 1 + {{arg_2}}/' {{arg_1}}"
    probe = _probe(doc, "1777")
    assert probe["question"] == "What is the value of `limit` on line 21 of `lib/rates.py`?"


def test_a_user_given_value_is_named_by_what_the_user_called_it() -> None:
    trace = Trace("user", "openai-chat", "user.json")
    trace.messages = _session(
        "Hi. Sure, but my user ID is omar_rossi_1241, thanks.",
        _step("a", "lookup", "region EU ok", region="EU"),
        _step("b", "policy", "refunds in 30 days", topic="refunds"),
        _step("c", "notify", "sent", note="user omar_rossi_1241 asked"),
    )  # fmt: skip
    probe = _probe(trace_to_scenario(trace), "omar_rossi_1241")
    assert probe["question"] == "What is the `user ID` the user wrote?"
    assert probe["role"]["kind"] == "user_text" and probe["source"] == "user"


def test_a_role_naming_a_redacted_file_is_no_role() -> None:
    trace = Trace("masked", "claude-code", "m.jsonl")
    trace.messages = _session(
        "Rename the setting.",
        _step("a", "Read", "     1→import os\n     2→show_sensitive_data = False",
              file_path="/srv/ann@corp.example/app/config.py"),
        _step("b", "Bash", "clean", command="git status"),
        _step("c", "Grep", "app/config.py", pattern="show_sensitive_data"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert all("[REDACTED]" not in p["question"] for p in doc["probes"])
    assert doc["probe_counts"].get("rejected_no_role", 0) >= 1


def test_a_value_the_user_wrote_before_its_tool_source_is_carried() -> None:
    # The user says "ending in 7447" (no role there), then the tool shows it as `last_four`:
    # the user's words keep it in view whatever a strategy (or a blanked tool) does.
    trace = Trace("airline", "openai-chat", "airline.json")
    trace.messages = [
        TraceMessage("user", "Change my trip; my user id is ines_varga_31."),
        _call("x", "list_airports", country="US"),
        TraceMessage("tool", "JFK, LAX, SFO", tool_call_id="x"),
        TraceMessage("user", "Option 1. Please use my credit card ending in 7447 for charges."),
        _call("a", "get_user_details", user_id="ines_varga_31"),
        TraceMessage("tool", json.dumps(USER), tool_call_id="a"),
        _call("b", "get_reservation_details", reservation_id="K1P9WD"),
        TraceMessage("tool", json.dumps({"reservation_id": "K1P9WD"}), tool_call_id="b"),
        TraceMessage("assistant", "Done: the charges went to your credit card ending in 7447."),
    ]  # fmt: skip
    probe = _probe(trace_to_scenario(trace), "7447")
    assert probe["source"] == "tool" and probe["carried"] is True


def test_a_role_naming_two_values_of_its_source_is_rejected_as_ambiguous() -> None:
    # "the path of `libcore.so` that `find` listed" names two paths: no reader could say which
    # one the agent then read (evals/sources/readable.py).
    listing = "\n".join(f"lib/{abi}/{name}" for abi in ("arm64", "x86_64")
                        for name in ("libcore.so", "libboot.so"))  # fmt: skip
    notes = "\n".join(f"note {i}: the build is reproducible" for i in range(60))
    trace = Trace("apk", "mini-swe-agent", "apk.traj.json")
    trace.messages = _session(
        "Patch the x86_64 libraries.",
        _step("a", "bash", listing, command="find lib -name '*.so'"),
        _step("b", "bash", notes, command="cat NOTES"),
        _step("c", "bash", "ELF 64-bit", command="file lib/x86_64/libcore.so"),
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert "lib/x86_64/libcore.so" not in [p["answer"] for p in doc["probes"]]
    assert doc["probe_counts"]["rejected_ambiguous"] >= 1
