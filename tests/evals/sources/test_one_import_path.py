"""A ctxlab thread (`ctxlab scenarios import RUN`) and a foreign trace take one import path
(evals/sources/thread_trace.py -> to_scenario.py): the same roles, the same hygiene, the same
minimum of probes, each rejection counted by reason in the import summary alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.sources.export import export_trace, run_trace
from evals.sources.formats import read_traces
from evals.sources.thread_import import import_run
from evals.sources.to_scenario import trace_to_scenario
from flows.cli import main
from harness import Store, create_agent
from harness.messages import ModelResponse, ToolCall
from harness.models.scripted import ScriptedModel
from harness.tools import tool


@tool
def find_order(customer: str) -> str:
    """The last order of a customer.

    Args:
        customer: the customer's name.
    """
    return json.dumps({"customer": customer, "status": "reservation", "tracking": "ZX-99812"})


@tool
def track(code: str) -> str:
    """Where a parcel is.

    Args:
        code: the tracking code.
    """
    return "In transit."


@tool
def set_status(status: str) -> str:
    """Record an order's status.

    Args:
        status: the status to record.
    """
    return "Recorded."


def _record(db: Path) -> str:
    """A thread whose only candidates are a dictionary word and a value used right where it
    was read: neither source's rules make a probe of them."""
    store = Store(str(db))
    model = ScriptedModel([
        ModelResponse(text="Finding the order.",
                      tool_calls=(ToolCall("c1", "find_order", {"customer": "Birch"}),)),
        ModelResponse(text="Tracking it.", tool_calls=(ToolCall("c2", "track",
                                                                {"code": "ZX-99812"}),)),
        ModelResponse(text="Recording the status.",
                      tool_calls=(ToolCall("c3", "set_status", {"status": "reservation"}),)),
        "Your order is on its way.",
    ])  # fmt: skip
    agent = create_agent(model, [find_order, track, set_status], store=store,
                         system_prompt="You help.")  # fmt: skip
    result = agent.run_sync("Where is my last order?", thread_id="t-hygiene")
    store.close()
    return result.run_id


def _rejected(message: str) -> str:
    """The `... candidates (rejected: ...)` part of an import's refusal."""
    start = message.index("no probes from")
    return message[start : message.index(")", start) + 1]


def test_a_thread_and_its_trace_are_refused_for_the_same_counted_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    db = tmp_path / "run.duckdb"
    run_id = _record(db)
    assert main(["scenarios", "import", run_id, "--db", str(db), "--out",
                 str(tmp_path / "run.yaml")]) == 2  # fmt: skip
    thread = capsys.readouterr().err.strip()
    assert f"run {run_id}: no probes from 2 candidates" in thread
    assert "1 nothing_between" in thread and "1 word" in thread
    assert not (tmp_path / "run.yaml").exists()

    exported = tmp_path / "run.openai-chat.json"
    exported.write_text(export_trace(run_trace(str(db), run_id), "openai-chat"))
    assert main(["scenarios", "import", str(exported), "--out", str(tmp_path / "t.yaml")]) == 1
    said = capsys.readouterr()
    foreign = next(line for line in (said.out + said.err).splitlines() if "no probes" in line)
    assert "nothing imported" in foreign
    assert _rejected(thread) == _rejected(foreign)


def test_a_thread_and_its_export_give_the_same_probes(tmp_path: Path) -> None:
    """The probes of a thread are derived once: importing it from the store or from its
    export asks the same questions, by role, at the same places."""
    db = tmp_path / "run.duckdb"
    store = Store(str(db))
    model = ScriptedModel([
        ModelResponse(text="Finding the order.",
                      tool_calls=(ToolCall("c1", "find_order", {"customer": "Birch"}),)),
        ModelResponse(text="Recording the status.",
                      tool_calls=(ToolCall("c3", "set_status", {"status": "reservation"}),)),
        ModelResponse(text="Tracking it.", tool_calls=(ToolCall("c2", "track",
                                                                {"code": "ZX-99812"}),)),
        "Your order is on its way.",
    ])  # fmt: skip
    agent = create_agent(model, [find_order, track, set_status], store=store,
                         system_prompt="You help.")  # fmt: skip
    run_id = agent.run_sync("Where is my last order?", thread_id="t-same").run_id
    store.close()

    def asked(doc: dict) -> list[tuple]:
        return [(p["question"], p["answer"], p["after"], p.get("at_step"), p["source"],
                 p["role"]["kind"]) for p in doc["probes"]]  # fmt: skip

    from_store = import_run(str(db), run_id, min_probes=1)
    exported = tmp_path / "run.json"
    exported.write_text(export_trace(run_trace(str(db), run_id), "openai-chat"))
    (back,) = read_traces(exported)
    assert asked(from_store) == asked(trace_to_scenario(back))
    assert asked(from_store) == [("What is the `tracking` in the `find_order` result?",
                                  "ZX-99812", "u000", 2, "tool", "json_key")]  # fmt: skip
    counts = from_store["probe_counts"]
    assert counts["candidates"] == 2 and counts["rejected_word"] == 1


@tool
def fetch(n: int) -> str:
    """Fetch market-data document n.

    Args:
        n: the document's number.
    """
    return "\n".join(f"doc {n} row {i}: revenue {n * 1000 + i} EUR" for i in range(40))


def test_the_harness_compactions_are_the_traces(tmp_path: Path) -> None:
    """A summary the harness wrote is a compaction of the thread's trace, where it fell, with
    the messages it kept: the scenario records it for the `original` arm, as a trace's."""
    from harness.models import FunctionModel, call, reply
    from harness.profiles import ModelProfile

    fetched: list[int] = []

    def researcher(messages: list, params: object) -> ModelResponse | str:
        if "summar" in messages[-1].content.lower() and messages[-1].role == "user":
            return "SUMMARY: fetched documents, revenue in EUR."
        fetched.append(len(fetched) + 1)
        return reply(f"Looking at document {fetched[-1]}.", call("fetch", n=fetched[-1])) \
            if len(fetched) <= 8 else "All documents read."  # fmt: skip

    db = tmp_path / "summarized.duckdb"
    store = Store(str(db))
    profile = ModelProfile(name="researcher", context_window=8_000)
    model = FunctionModel(researcher, name="researcher", profile=profile)
    agent = create_agent(model, [fetch], store=store, strategy="summarize", memory=(),
                         strategy_params={"summarize.trigger": 0.6})  # fmt: skip
    run_id = agent.run_sync("Study Acme's revenue.", thread_id="acme").run_id
    rows = store.summaries.all()
    store.close()

    trace = run_trace(str(db), run_id)
    assert len(trace.compactions) == len(rows) >= 1
    assert all("SUMMARY" in c.summary for c in trace.compactions)
    assert [c.tokens_before for c in trace.compactions] == [r["tokens_before"] for r in rows]
    first = trace.compactions[0]
    assert 0 < first.kept < first.index  # the recent messages it kept verbatim
    assert all("SUMMARY" not in m.text for m in trace.messages)  # not the run's conversation
    specs = trace_to_scenario(trace)["source"]["compactions"]
    assert [s["kept"] for s in specs] == [c.kept for c in trace.compactions]
    assert specs[0]["tokens_before"] == rows[0]["tokens_before"]
