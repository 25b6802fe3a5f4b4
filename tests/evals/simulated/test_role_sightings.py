"""The reader finds an imported probe's value by its role (evals/simulated/sightings.py): in the
source the role names (a JSON result, a listing, the user's message), read by the import's own
rules, where a cue built from the role's first term alone reads another value or none. The
fixtures are written by hand in the shape of real traces (a tau-bench record on one line, a
mini-swe-agent `sed -n` listing)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml

from evals import run_cell
from evals.run.replay import replay
from evals.scenarios.from_file import load_scenario_file
from evals.simulated.cursor import Cursor
from evals.simulated.plan import Answer, Cue, PlanTurn
from evals.simulated.reader import Attention, ReaderConfig, RequestReader
from evals.simulated.request import render
from evals.simulated.retrieval import Retrievals
from evals.simulated.sightings import Role, sightings
from evals.sources.role_rules import IMPORT_RULES
from evals.sources.roles import Call, role_of
from harness.messages import Message, ToolCall
from harness.tokens import TokenCounter

RECORD = json.dumps(
    {
        "user_id": "ana_ruiz_4410",
        "payment_methods": {
            "certificate_7504069": {"source": "certificate", "amount": 250,
                                    "id": "certificate_7504069"},
            "credit_card_1187": {"source": "credit_card", "brand": "visa",
                                 "id": "credit_card_1187"},
            "gift_card_5521": {"source": "gift_card", "amount": 130, "id": "gift_card_5521"},
        },
        "membership": "gold",
    }
)  # fmt: skip
LISTING_COMMAND = "sed -n '60,66p' pkg/timeseries/core.py"
LISTING = (
    "<returncode>0</returncode>\n<output>\n"
    "    def check(self):\n        if not self.columns:\n            return\n"
    "        names = self.colnames\n        found = sorted(names)\n"
    "    required_columns = ['time']\n        return found\n</output>"
)
NOTES = "\n".join(f"Note {i}: the customer prefers email over phone calls." for i in range(40))


def _role(value: str, text: str, kind: str, call: Call | None) -> dict[str, Any]:
    found = role_of(value, text, kind, call, None)
    assert found is not None, value
    return found


def _probe(pid: str, value: str, role: dict[str, Any]) -> dict[str, Any]:
    # No cue: the import left it out (ambiguous, or it would leak), as for most real probes.
    return {"id": pid, "kind": "recall", "question": f"What is {role['phrase']}?",
            "answer": value, "after": "end", "role": role}  # fmt: skip


def _scenario(directory: Path) -> Path:
    user = "Hi, my user id is ana_ruiz_4410 and my reservation code is KQ7T2M. Please help."
    amount = _role("250", RECORD, "tool", Call("get_user_details", {"user_id": "ana_ruiz_4410"}))
    name = _role("required_columns", LISTING, "tool", Call("bash", {"command": LISTING_COMMAND}))
    code = _role("KQ7T2M", user, "user", None)
    spec = {
        "format": "ctxlab-scenario/1", "name": "sightings", "model": {"window": 16000},
        "system_prompt": "You help with bookings and code.",
        "tools": [
            {"name": "get_user_details", "description": "Read a user record.",
             "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}}},
            {"name": "bash", "description": "Run a command.",
             "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"name": "read_notes", "description": "Read notes.",
             "parameters": {"type": "object", "properties": {"page": {"type": "integer"}}}},
        ],
        "turns": [{"id": "u1", "text": user, "final": "Done.", "steps": [
            {"note": "Reading the user.", "calls": [
                {"tool": "get_user_details", "arguments": {"user_id": "ana_ruiz_4410"}}]},
            {"note": "Reading the code.", "calls": [
                {"tool": "bash", "arguments": {"command": LISTING_COMMAND}}]},
            {"note": "Reading notes.", "calls": [
                {"tool": "read_notes", "arguments": {"page": 1}}]},
        ]}],
        "replies": [
            {"tool": "get_user_details", "arguments": {"user_id": "ana_ruiz_4410"},
             "content": RECORD},
            {"tool": "bash", "arguments": {"command": LISTING_COMMAND}, "content": LISTING},
            {"tool": "read_notes", "arguments": {"page": 1}, "content": NOTES},
        ],
        "probes": [_probe("amount", "250", amount), _probe("name", "required_columns", name),
                   _probe("code", "KQ7T2M", code)],
    }  # fmt: skip
    path = directory / "sightings.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_the_roles_are_the_imports_own() -> None:
    amount = _role("250", RECORD, "tool", Call("get_user_details", {"user_id": "ana_ruiz_4410"}))
    assert amount["phrase"] == (
        "the `amount` of the `payment_methods` entry whose `source` is "
        "`certificate` in the `get_user_details` result"
    )
    name = _role("required_columns", LISTING, "tool", Call("bash", {"command": LISTING_COMMAND}))
    assert name["phrase"] == "the name that line 65 of `pkg/timeseries/core.py` defines"


def test_every_value_in_view_is_read_by_its_role(tmp_path: Path) -> None:
    scenario = load_scenario_file(_scenario(tmp_path))
    out = asyncio.run(replay(scenario, "none", window=16_000, reader="ideal"))
    if out.store is not None:
        out.store.close()
    answers = {p.id: (p.expected, p.answer) for p in out.probes}
    assert all(p.correct for p in out.probes), answers


def test_a_question_asked_is_no_source_of_what_the_user_gave() -> None:
    role = Role("user_text", "the id the user gave", (), "identifier")
    user = Message(role="user", content="My booking is KQ7T2M, thanks.")
    asked = "What is the id the user gave?"
    messages = [user, Message(role="user", content=asked)]
    assert [s.value for s in sightings(IMPORT_RULES, role, messages, {asked})] == ["KQ7T2M"]


def test_a_source_is_read_only_with_the_call_that_made_it() -> None:
    role = Role("json_key", "the `membership` in the `get_user_details` result",
                ("membership", "get_user_details"), "identifier")  # fmt: skip
    made = ToolCall(id="c1", name="get_user_details", arguments={"user_id": "ana_ruiz_4410"})
    call = Message(role="assistant", content="", tool_calls=(made,))
    result = Message(role="tool", content='{"membership": "gold_2024"}', tool_call_id="c1")
    other = Message(role="tool", content='{"membership": "silver_2023"}', tool_call_id="zz")
    assert [s.value for s in sightings(IMPORT_RULES, role, [call, result, other])] == ["gold_2024"]


def _big_record() -> str:
    """A user record on one line, as tau-bench's tools return it: ~4k tokens, so offload (at an
    eighth of a 16k window) takes it out and leaves a preview without the payment methods."""
    history = [{"event": f"routine account activity, entry {i}", "channel": "web"}
               for i in range(150)]  # fmt: skip
    return json.dumps(
        {"user_id": "ana_ruiz_4410", "history": history, "payment_methods": {
            "certificate_7504069": {"source": "certificate", "amount": 250},
            "gift_card_5521": {"source": "gift_card", "amount": 130}}, "membership": "gold"}
    )  # fmt: skip


def test_retrieval_greps_a_saved_record_with_the_values_own_key(tmp_path: Path) -> None:
    record = _big_record()
    call = Call("get_user_details", {"user_id": "ana_ruiz_4410"})
    amount = _role("250", record, "tool", call)
    assert amount["terms"][0] == "payment_methods" and amount["terms"][-2] == "amount"
    spec = yaml.safe_load(_scenario(tmp_path).read_text())
    spec["replies"][0]["content"] = record
    spec["probes"] = [_probe("amount", "250", amount)]
    path = tmp_path / "saved.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    out = asyncio.run(replay(load_scenario_file(path), "offload", window=16_000, reader="ideal"))
    assert out.store is not None
    greps = [c["arguments"]["pattern"] for c in out.store.messages.all_tool_calls()
             if c["name"] == "grep"]  # fmt: skip
    out.store.close()
    # The key stands on the value's line; the outer `payment_methods` may be far before it.
    assert greps and greps[0].startswith("amount")
    probe = out.probes[0]
    assert probe.retrieval_found is True, (greps, probe.answer)


def test_the_oracle_keeps_the_source_a_role_is_read_from(tmp_path: Path) -> None:
    # The oracle arm is the token lower bound at full accuracy: cutting a JSON result or a
    # listing down to a cue's lines would leave the reader no source to read the role in.
    result = run_cell(str(_scenario(tmp_path)), "oracle", {}, 0, reader="ideal")
    answers = {p.id: (p.expected, p.answer) for p in result.probe_results}
    assert answers and all(p.correct for p in result.probe_results), answers


def test_a_reader_that_missed_a_value_in_view_reads_its_source_again() -> None:
    # A reader that misses everything it sees (attention nil): the value stood in view under
    # its role, so the retrieval re-runs the call whose result showed it, not another lookup.
    blind = ReaderConfig(name="blind", attention=Attention(points=((1_000, -1e6),), base=1.0),
                         reliable_chars=0, confusion=0.0)  # fmt: skip
    args = {"user_id": "ana_ruiz_4410"}
    amount = _role("250", RECORD, "tool", Call("get_user_details", args))
    step = Answer("amount", Cue(()), tuple(amount["terms"]), "number", "json_key",
                  amount["phrase"])  # fmt: skip
    other = ToolCall(id="c0", name="get_user_details", arguments={"user_id": "bo_li_1"})
    made = ToolCall(id="c1", name="get_user_details", arguments=args)
    messages = [
        Message(role="user", content="Help me."),
        Message(role="assistant", content="", tool_calls=(other,)),
        Message(role="tool", content='{"user_id": "bo_li_1"}', tool_call_id="c0"),
        Message(role="assistant", content="", tool_calls=(made,)),
        Message(role="tool", content=RECORD, tool_call_id="c1"),
        Message(role="user", content=f"What is {amount['phrase']}?"),
    ]
    texts = ["system", *(render(m) for m in messages)]
    reader = RequestReader(blind, texts, 20_000, 0)
    retrievals = Retrievals(TokenCounter(), rules=IMPORT_RULES)
    cursor = Cursor(PlanTurn(prompt=messages[-1].content, steps=(step,)), 0, "q")
    response = retrievals.answer(blind, None, cursor, step, reader, messages,
                                 {"get_user_details"})  # fmt: skip
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("get_user_details", args)]
