"""Probes of an imported trace (evals/sources/trace_probes.py): what the run used, asked where it
used it, ground truth first, questions that name the need and never quote the source."""

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


def _unescaped(pattern: str) -> str:
    return re.sub(r"\\(.)", r"\1", pattern)


def test_ground_truth_comes_first_and_is_asked_where_the_call_was_made() -> None:
    doc = trace_to_scenario(next(iter(read_traces(FIXTURES / "chat_tau.json"))))
    gt = [p for p in doc["probes"] if p["provenance"]["from"] == "ground-truth"]
    assert [(p["answer"], p["at_step"]) for p in gt] == [("#W2611340", 0), ("#W2611340", 1)]
    assert "`get_order_details`" in gt[0]["question"] and "`order_id`" in gt[0]["question"]
    assert all(p["source"] == "user" for p in gt)
    trace = [p for p in doc["probes"] if p["provenance"]["from"] == "trace"]
    assert [(p["answer"], p["source"], p["at_step"]) for p in trace] == [("54.10", "tool", 2)]
    assert doc["probe_counts"]["recall"] == 3


def test_a_gold_patch_file_is_probed_from_ground_truth() -> None:
    trace = Trace("patch", "mini-swe-agent", "p.json")
    trace.messages = [
        TraceMessage("user", "Fix the crash."),
        TraceMessage("assistant", "", [TraceToolCall("a", "bash", {"command": "grep -rn crash lib"})]),  # noqa: E501
        TraceMessage("tool", "lib/core/loader.py:41:    raise crash()", tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("b", "bash", {"command": "sed -i 4d lib/core/loader.py"})]),  # noqa: E501
        TraceMessage("tool", "", tool_call_id="b"),
    ]  # fmt: skip
    trace.ground_truth.patch_files = ["lib/core/loader.py"]
    doc = trace_to_scenario(trace)
    (gt,) = [p for p in doc["probes"] if p["provenance"]["from"] == "ground-truth"]
    assert gt["answer"] == "lib/core/loader.py" and gt["at_step"] == 1
    assert "fix change" in gt["question"]


def test_questions_name_the_tool_and_argument_and_never_quote_the_source(tmp_path: Path) -> None:
    docs = [trace_to_scenario(t) for f in sorted(FIXTURES.iterdir()) for t in read_traces(f)]
    (ledger,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    docs.append(trace_to_scenario(ledger))
    probes = [p for d in docs for p in d["probes"]]
    assert len(probes) > 15
    for p in probes:
        assert p["answer"] not in p["question"]
        for pattern in p["cue"]["patterns"]:
            label = _unescaped(pattern.split("(", 1)[0]).strip()
            assert len(label) < 6 or label not in p["question"], (p["question"], label)
    settle = [p for p in docs[-1]["probes"] if "settle_account" in p["question"]]
    assert (
        settle[0]["question"] == "Step 11 calls `settle_account`: which `account_id` does it need?"
    )


def test_provenance_has_source_step_use_step_and_tokens_between(tmp_path: Path) -> None:
    (trace,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    doc = trace_to_scenario(trace)
    first = doc["probes"][0]
    assert first["answer"] == "ACC-1000" and first["after"] == "u000" and first["at_step"] == 10
    prov = first["provenance"]
    assert prov["from"] == "trace" and prov["source_step"] == 1
    assert prov["use_step"] == "turn 1 step 11" and prov["source"] == "step 1 list_account result"
    gaps = [p["provenance"]["tokens_between"] for p in doc["probes"]]
    assert gaps[0] > 4000 and gaps == sorted(gaps, reverse=True)  # earlier listings, longer gaps


def test_probes_are_capped_and_spread_over_the_run(tmp_path: Path) -> None:
    (trace,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    walk = walk_trace(trace, tool_names(trace))
    every = trace_probes(walk, trace.ground_truth)
    assert len(every) == 11 < MAX_PROBES  # ten settlements and the final balance
    capped = trace_probes(walk, trace.ground_truth, cap=4)
    assert len(capped) == 4
    # one per place asked, the longest distances first: the first four settlements
    assert sorted(p["at_step"] for p in capped) == [10, 11, 12, 13]
    assert len({p["question"].splitlines()[0] for p in capped}) == 4


def test_a_probe_giving_another_away_is_dropped_and_counted() -> None:
    (trace,) = read_traces(FIXTURES / "anthropic.json")
    doc = trace_to_scenario(trace)
    # 0.21's cue is the label "RATES = {'NO': 0.25, 'SE': ", which holds 0.25, another answer
    assert [p["answer"] for p in doc["probes"]] == ["0.25"]
    assert doc["probe_counts"]["dropped_leaks"] == 1


def test_values_the_agent_made_up_or_the_system_prompt_holds_are_not_probed() -> None:
    trace = Trace("own", "openai-chat", "own.json", system="Always cite policy POL-77.")
    trace.messages = [
        TraceMessage("user", "Check it."),
        TraceMessage("assistant", "", [TraceToolCall("a", "fetch", {"ref": "REF-9001"})]),
        TraceMessage("tool", "ref REF-9001 ok; policy POL-77 applies", tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("b", "close", {"ref": "REF-9001", "policy": "POL-77"})]),  # noqa: E501
        TraceMessage("tool", "closed", tool_call_id="b"),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    assert doc["probes"] == []
    assert "{{" not in json.dumps(doc["turns"])


def test_a_value_that_turns_up_everywhere_is_neither_slotted_nor_probed() -> None:
    log = "\n".join(f"GET /api/item/{i} status 200 in {i + 3} ms" for i in range(20))
    trace = Trace("common", "openai-chat", "common.json")
    trace.messages = [
        TraceMessage("user", "Check the API log."),
        TraceMessage("assistant", "", [TraceToolCall("a", "read_log", {"name": "api"})]),
        TraceMessage("tool", log + "\nrequest id REQ-7781 failed", tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("b", "count", {"status": "200", "request": "REQ-7781"})]),  # noqa: E501
        TraceMessage("tool", "20", tool_call_id="b"),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    args = doc["turns"][0]["steps"][1]["calls"][0]["arguments"]
    assert args == {"status": "200", "request": "{{arg_1}}"}
    assert [p["answer"] for p in doc["probes"]] == ["REQ-7781"]


def test_a_number_a_sed_substitution_copies_from_a_result_is_slotted_and_probed() -> None:
    # Shell agents edit with `sed 's/old/new/'`: the old text between slashes is what the
    # file showed, and a replay that lost the file must not get it for free.
    listing = "\n".join(f"{n:>4}\t    limit = {1000 + 37 * n}" for n in range(1, 40))
    trace = Trace("sed", "mini-swe-agent", "sed.traj.json")
    trace.messages = [
        TraceMessage("user", "Fix the off-by-one in lib/rates.py."),
        TraceMessage("assistant", "", [TraceToolCall("a", "bash", {"command": "cat -n lib/rates.py"})]),  # noqa: E501
        TraceMessage("tool", listing, tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("b", "bash", {"command": "sed -i '21s/limit = 1777/limit = 1 + 1777/' lib/rates.py"})]),  # noqa: E501
        TraceMessage("tool", "", tool_call_id="b"),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    command = doc["turns"][0]["steps"][1]["calls"][0]["arguments"]["command"]
    assert command == "sed -i '21s/limit = {{arg_2}}/limit = 1 + {{arg_2}}/' {{arg_1}}"
    (probe,) = [p for p in doc["probes"] if p["answer"] == "1777"]
    assert probe["source"] == "tool" and probe["at_step"] == 1
