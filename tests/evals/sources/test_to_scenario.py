"""A parsed trace as a replayable scenario (evals/sources/to_scenario.py): every format loads and
replays with the recorded replies, tool names are made safe, slot syntax stays literal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.traces import counting_misses, write_ledger

from evals.run.cell import run_cell
from evals.scenarios.from_file import load_scenario_file
from evals.simulated.plan import Act, escape_slots, fill, slots_in
from evals.sources.formats import read_traces
from evals.sources.thread_import import write_scenario
from evals.sources.to_scenario import original_window, tool_names, trace_to_scenario
from evals.sources.trace import Trace, TraceMessage, TraceToolCall

FIXTURES = Path(__file__).parent / "fixtures"
# Every fixture, and whether some trace in it yields probes (the first Claude Code session
# uses nothing it read: its one path is redacted, its answer restates the code; the Responses,
# OpenTelemetry and mini-swe-agent ones use each value right where they read it: no step
# between; the Anthropic one answers with the rate `billing/tax.py` gives `SE`, a step later).
FILES = [
    ("chat_tau.json", True),
    ("responses.json", False),
    ("anthropic.json", True),
    ("claude_code.jsonl", False),
    ("claude_code_fix.jsonl", True),
    ("mini_swe_agent.traj.json", False),
    ("otel_genai.json", False),
]


def _write(doc: dict[str, object], tmp_path: Path, name: str = "t") -> Path:
    return write_scenario(doc, tmp_path / f"{name}.yaml")


@pytest.mark.parametrize(("name", "probed"), FILES)
def test_each_fixture_imports_to_a_loadable_scenario(
    name: str, probed: bool, tmp_path: Path
) -> None:
    traces = list(read_traces(FIXTURES / name))
    docs = [trace_to_scenario(t) for t in traces]
    for i, (trace, doc) in enumerate(zip(traces, docs, strict=True)):
        scenario = load_scenario_file(_write(doc, tmp_path, f"t{i}"))
        assert scenario.probes is not None
        assert doc["source"]["file"] == name  # the name, never the path
        assert doc["source"]["original"]["compactions"] >= 0
        # The window of the model that ran it where ctxlab has its profile, else 128k.
        assert doc["model"]["window"] == original_window(trace.model)
    assert any(doc["probes"] for doc in docs) is probed


@pytest.mark.parametrize("name", [n for n, probed in FILES if probed])
def test_a_full_replay_is_answered_by_the_recorded_replies_and_scores_every_probe(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = next(d for d in map(trace_to_scenario, read_traces(FIXTURES / name)) if d["probes"])
    path = _write(doc, tmp_path)
    with counting_misses(monkeypatch) as misses:
        result = run_cell(str(path), "full", reader="ideal")
    assert misses == []
    # The ideal reader finds a fact by its cue; a probe asked by its role alone (no cue told
    # its value apart) waits for a reader that searches by role.
    # Carried probes (restated by the recorded user or agent) are scored apart.
    uncarried = [p for p in doc["probes"] if not p.get("carried")]
    cued = sum(bool(p.get("cue")) for p in uncarried)
    assert result.probes == len(uncarried) and cued >= 1
    assert result.accuracy * result.probes >= cued


def test_a_tools_name_that_clashes_with_the_harness_is_renamed_everywhere(tmp_path: Path) -> None:
    (trace,) = read_traces(FIXTURES / "anthropic.json")
    doc = trace_to_scenario(trace)
    assert [t["name"] for t in doc["tools"]] == ["read_file_recorded"]
    calls = [c["tool"] for t in doc["turns"] for s in t["steps"] for c in s["calls"]]
    assert calls == ["read_file_recorded", "read_file_recorded"]
    assert {r["tool"] for r in doc["replies"]} == {"read_file_recorded"}
    assert doc["source"]["tool_names"] == {"read_file": "read_file_recorded"}
    scenario = load_scenario_file(_write(doc, tmp_path))
    assert {t.name for t in scenario.tools} == {"read_file_recorded"}


def test_tool_names_are_made_valid_and_kept_apart() -> None:
    trace = Trace("t", "openai-chat", "x")
    trace.messages = [
        TraceMessage("user", "go"),
        TraceMessage("assistant", "", [TraceToolCall("a", "my.tool/v2", {}), TraceToolCall("b", "my tool v2", {}),  # noqa: E501
                                  TraceToolCall("c", "Grep", {}), TraceToolCall("d", "x" * 80, {})]),  # noqa: E501
    ]  # fmt: skip
    names = tool_names(trace)
    assert names["my.tool/v2"] == "my_tool_v2" and names["my tool v2"] == "my_tool_v2_2"
    assert names["Grep"] == "Grep_recorded"  # the harness has `grep`
    assert len(names["x" * 80]) == 64


def test_slot_syntax_in_recorded_text_stays_literal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = Trace("braces", "openai-chat", "braces.json")
    trace.messages = [
        TraceMessage("user", "Render the {{greeting}} template for order ORD-5521."),
        TraceMessage("assistant", "Rendering {{greeting}} now.",
                [TraceToolCall("a", "render", {"template": "Hi {{name}}", "order": "ORD-5521"})]),
        TraceMessage("tool", "rendered", tool_call_id="a"),
        TraceMessage("assistant", "Done."),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    (step,) = doc["turns"][0]["steps"]
    assert list(step["slots"]) == ["arg_1"]  # the order id only, not the braces
    scenario = load_scenario_file(_write(doc, tmp_path))
    # the probe at the step cuts the turn there: the step is in its second part
    (act,) = [s for t in scenario.plan.turns for s in t.steps if isinstance(s, Act)]
    filled = fill(dict(act.calls[0][1]), {"arg_1": "ORD-5521"})
    assert filled == {"template": "Hi {{name}}", "order": "ORD-5521"}
    assert fill(act.text, {}) == "Rendering {{greeting}} now."
    with counting_misses(monkeypatch) as misses:
        run_cell(str(tmp_path / "t.yaml"), "full", reader="ideal")
    assert misses == []


def test_escaped_slot_syntax_and_a_slot_after_a_backslash_are_told_apart() -> None:
    # A backslash run before slot syntax: even, a slot after that many halved backslashes; odd,
    # literal text. Files escaped the old way (one backslash) read as they did.
    assert fill(r"C:\x\\{{arg_1}}", {"arg_1": "README.md"}) == r"C:\x\README.md"
    assert fill(r"Hi \{{name}}", {"name": "Ann"}) == "Hi {{name}}"
    for literal in [r"C:\x\{{arg_1}}", r"\\{{a}} and {{b}}", "{{c}}"]:
        assert fill(escape_slots(literal), {"arg_1": "R", "a": "A", "b": "B", "c": "C"}) == literal
    assert slots_in({"p": r"C:\x\\{{arg_1}}", "q": [r"\{{lit}}"]}) == {"arg_1"}


def test_a_windows_path_keeps_its_slot_and_replays_to_the_recorded_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = "C:\\work\\acme"
    trace = Trace("windows", "openai-chat", "windows.json")
    trace.messages = [
        TraceMessage("user", f"Summarise the quarterly report in {folder}."),
        TraceMessage("assistant", "Listing.",
                     [TraceToolCall("a", "bash", {"command": f"dir {folder}"})]),
        TraceMessage("tool", f"Directory of {folder}\n  report_q3_2024.csv  1200 bytes\n"
                     "  notes.txt  80 bytes", tool_call_id="a"),
        TraceMessage("assistant", "Reading it.", [TraceToolCall(
            "b", "bash", {"command": f"type {folder}\\report_q3_2024.csv"})]),
        TraceMessage("tool", "revenue,1200", tool_call_id="b"),
        TraceMessage("assistant", "Revenue was 1200."),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    step = doc["turns"][0]["steps"][1]
    assert list(step["slots"]) == ["arg_1"]
    filled = fill(step["calls"][0]["arguments"], {"arg_1": "report_q3_2024.csv"})
    assert filled == {"command": "type C:\\work\\acme\\report_q3_2024.csv"}
    _write(doc, tmp_path)
    with counting_misses(monkeypatch) as misses:
        run_cell(str(tmp_path / "t.yaml"), "full", reader="ideal")
    assert misses == []


_WRITES_THREE_NAMES = """
import json
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Trace, TraceMessage as M, TraceToolCall as C
t = Trace("det", "openai-chat", "det.json")
t.messages = [
    M("user", "Wire the hooks into main.py."),
    M("assistant", "", [C("a", "bash", {"command": "grep -rn def hooks.py"})]),
    M("tool", "hooks.py:3:def hook_alpha(x):\\nhooks.py:9:def hook_bravo(x):\\n"
      "hooks.py:15:def hook_delta(x):", tool_call_id="a"),
    M("assistant", "", [C("b", "bash", {"command": "ls"})]),
    M("tool", "main.py hooks.py", tool_call_id="b"),
    M("assistant", "", [C("c", "write", {"path": "main.py", "content":
        "from hooks import hook_delta, hook_bravo, hook_alpha\\nhook_bravo(1)\\n"
        "hook_alpha(2)\\nhook_delta(3)\\n"})]),
    M("tool", "ok", tool_call_id="c"),
    M("assistant", "Done."),
]
print(json.dumps(trace_to_scenario(t)["turns"]))
"""


def test_slots_are_numbered_the_same_whatever_the_hash_seed() -> None:
    # Tokens of one length written in a file were slotted in set order: arg_N changed from
    # one run of an import to the next.
    runs = {
        subprocess.run(
            [sys.executable, "-c", _WRITES_THREE_NAMES],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout  # fmt: skip
        for seed in range(1, 6)
    }
    assert len(runs) == 1 and "{{arg_" in next(iter(runs))


def test_arguments_repeating_what_was_shown_are_slots_and_replies_keep_the_recording() -> None:
    doc = trace_to_scenario(next(iter(read_traces(FIXTURES / "chat_tau.json"))))
    steps = doc["turns"][0]["steps"]
    assert steps[0]["calls"][0]["arguments"] == {"order_id": "{{arg_1}}"}
    assert steps[0]["slots"]["arg_1"]["patterns"]  # a cue from the user's message
    assert "W2611340" not in json.dumps(steps[0]["slots"])
    assert doc["replies"][0]["arguments"] == {"order_id": "#W2611340"}
    assert doc["source"]["metadata"] == {"task_id": 7, "reward": 1.0}


def test_repeated_identical_calls_get_their_replies_in_order() -> None:
    trace = Trace("again", "openai-chat", "again.json")
    trace.messages = [TraceMessage("user", "Poll the job twice.")]
    for i, state in enumerate(("running", "finished")):
        trace.messages += [
            TraceMessage("assistant", "", [TraceToolCall(f"c{i}", "job_status", {"job": "J-1"})]),
            TraceMessage("tool", state, tool_call_id=f"c{i}"),
        ]
    doc = trace_to_scenario(trace)
    assert [(r["occurrence"], r["content"]) for r in doc["replies"]] == [
        (1, "running"), (2, "finished")
    ]  # fmt: skip


def test_a_subagent_run_is_a_task_the_parents_call_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (trace,) = read_traces(FIXTURES / "claude_code_fix.jsonl")
    doc = trace_to_scenario(trace)
    prompt = "Look up the tax the invoice of order ORD-88213 was charged."
    call = doc["turns"][0]["steps"][2]["calls"][0]
    assert call == {
        "tool": "task",
        "arguments": {"description": prompt, "subagent_type": "general-purpose"},
    }
    (task,) = doc["tasks"]
    assert task["prompt"] == prompt and task["final"].startswith("Invoice INV-5512")
    assert task["steps"][0]["calls"][0]["arguments"] == {
        "command": "billing-cli invoice --order {{arg_1}}"
    }
    assert doc["subagents"][0]["name"] == "general-purpose"
    assert doc["subagents"][0]["tools"] == ["Bash"]
    with counting_misses(monkeypatch) as misses:
        result = run_cell(str(_write(doc, tmp_path)), "full", reader="ideal")
    assert misses == [] and result.subagent_calls == 1


def test_a_mini_swe_agent_command_stays_a_bash_call() -> None:
    (trace,) = read_traces(FIXTURES / "mini_swe_agent.traj.json")
    doc = trace_to_scenario(trace)
    calls = [c for t in doc["turns"] for s in t["steps"] for c in s["calls"]]
    assert [c["tool"] for c in calls] == ["bash", "bash", "bash"]
    assert calls[1]["arguments"]["command"].startswith("sed -i 's/int(x)/int(x, 16)/' {{arg_")
    assert doc["tools"][0]["parameters"]["properties"] == {"command": {}}


def test_window_option_and_step_limit(tmp_path: Path) -> None:
    (trace,) = read_traces(write_ledger(tmp_path / "ledger.json"))
    doc = trace_to_scenario(trace, window=4000)
    assert doc["model"]["window"] == 4000
    assert doc["model"]["max_steps"] >= 2 * 20


def test_secrets_are_redacted_before_slots_and_probes(tmp_path: Path) -> None:
    trace = Trace("secret", "openai-chat", "secret.json")
    trace.messages = [
        TraceMessage("user", "Use key sk-proj-abcdefghijklmnop1234 for order ORD-7"),
        TraceMessage("assistant", "", [TraceToolCall("a", "lookup", {"key": "sk-proj-abcdefghijklmnop12"})]),  # noqa: E501
        TraceMessage("tool", "owner mail: kari@example.org, id CUS-4410", tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("b", "audit", {"order": "ORD-7"})]),
        TraceMessage("tool", "audited", tool_call_id="b"),
        TraceMessage("assistant", "The customer is CUS-4410."),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    text = json.dumps(doc)
    assert "sk-proj" not in text and "kari@example.org" not in text
    assert doc["source"]["redactions"] >= 3
    assert {p["answer"] for p in doc["probes"]} == {"ORD-7", "CUS-4410"}


def test_ids_inside_json_tool_results_are_slotted_and_probed() -> None:
    trace = Trace("json", "openai-chat", "json.json")
    trace.messages = [
        TraceMessage("user", "Return the lamp from my last order."),
        TraceMessage("assistant", "", [TraceToolCall("a", "get_user", {"user_id": "mia_kim_4397"})]),  # noqa: E501
        TraceMessage("tool", '{"user_id": "mia_kim_4397", "orders": ["#W4992383", "#W8872412"]}',
                tool_call_id="a"),
        TraceMessage("assistant", "", [TraceToolCall("c", "policy", {"topic": "returns"})]),
        TraceMessage("tool", "Returns within 30 days.", tool_call_id="c"),
        TraceMessage("assistant", "", [TraceToolCall("b", "get_order", {"order_id": "#W8872412"})]),
        TraceMessage("tool", '{"order_id": "#W8872412", "status": "delivered"}', tool_call_id="b"),
    ]  # fmt: skip
    doc = trace_to_scenario(trace)
    assert doc["turns"][0]["steps"][2]["calls"][0]["arguments"] == {"order_id": "{{arg_1}}"}
    (probe,) = doc["probes"]
    assert probe["answer"] == "#W8872412" and probe["at_step"] == 2
    assert probe["question"] == "What is item 2 of `orders` in the `get_user` result?"


def test_a_plan_the_loader_would_refuse_is_refused_at_import_in_one_line() -> None:
    sub = Trace("sub", "claude-code", "s.jsonl", parent_call_id="t1")
    sub.messages = [TraceMessage("user", "List the callers."), TraceMessage("assistant", "None.")]
    trace = Trace("same", "claude-code", "s.jsonl", subagents=[sub])
    trace.messages = [
        TraceMessage("user", "List the callers."),
        TraceMessage("assistant", "", [TraceToolCall("t1", "Task", {"prompt": "List the callers."})]),  # noqa: E501
        TraceMessage("tool", "None.", tool_call_id="t1"),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="distinct first lines"):
        trace_to_scenario(trace)
