"""A ctxlab run exported (`ctxlab export`) to each format and imported back as a scenario gives
the same probes, questions and answers alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.sources.export import EXPORT_FORMATS, export_trace, run_trace
from evals.sources.formats import read_traces
from evals.sources.to_scenario import trace_to_scenario
from harness import Store, create_agent
from harness.messages import ModelResponse, ToolCall
from harness.models.scripted import ScriptedModel
from harness.tools import tool


@tool
def find_account(name: str) -> str:
    """Find an account by name.

    Args:
        name: the account holder.
    """
    return f"holder {name}\naccount id: ACC-7302\nopened 2019-04-11, balance 1234.50 EUR"


@tool
def statement(account_id: str, since: str) -> str:
    """A statement of an account.

    Args:
        account_id: the account's id.
        since: the first day.
    """
    return f"statement of {account_id} since {since}: 3 entries, last payment ref PAY-55190"


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("roundtrip") / "run.duckdb"
    store = Store(str(db))
    model = ScriptedModel([
        ModelResponse(text="Finding the account.",
                      tool_calls=(ToolCall("c1", "find_account", {"name": "Birch"}),)),
        ModelResponse(text="Fetching its statement.",
                      tool_calls=(ToolCall("c2", "statement",
                                           {"account_id": "ACC-7302", "since": "2019-04-11"}),)),
        "The last payment of ACC-7302 was PAY-55190; the balance is 1234.50 EUR.",
    ])  # fmt: skip
    agent = create_agent(model, [find_account, statement], store=store, system_prompt="You help.")
    result = agent.run_sync("What was Birch's last payment?", thread_id="t-roundtrip")
    store.close()
    return db, result.run_id


def _probes(doc: dict[str, object]) -> list[tuple[object, ...]]:
    return [
        (p["question"], p["answer"], p["after"], p["at_step"], p["source"])
        for p in doc["probes"]  # type: ignore[attr-defined]
    ]


def test_each_export_format_imports_back_to_the_same_probes(
    stored_run: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = stored_run
    original = run_trace(str(db), run_id)
    probes = {}
    for format in EXPORT_FORMATS:
        out = tmp_path / f"run.{format}.json"
        out.write_text(export_trace(original, format))
        (back,) = read_traces(out)
        assert back.format == format
        probes[format] = _probes(trace_to_scenario(back))
    first = probes[EXPORT_FORMATS[0]]
    assert all(p == first for p in probes.values()), probes
    assert ("What is the `account id` the `find_account` result printed?", "ACC-7302", "u000", 2,
            "tool") in first  # fmt: skip
