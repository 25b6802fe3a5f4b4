"""The step journal holds plain JSON records: every journaled kind round-trips exactly, and a
row that is not a record (a pickle, crafted into the DuckDB file) is refused, never run."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from flows.journal import Journal, JournalError, encode, ensure_tables, state_key
from harness.messages import ModelResponse, ToolCall, Usage
from harness.store import Store, now


def _store(tmp_path: Path) -> Store:
    store = Store(str(tmp_path / "journal.duckdb"))
    ensure_tables(store)
    return store


class Checkpointed:
    name = "stateful"

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.restored: Any = None

    def checkpoint(self) -> dict[str, Any]:
        return self.state

    def restore(self, state: dict[str, Any]) -> None:
        self.restored = state


RESPONSE = ModelResponse(
    text="Two calls \ud800 and \U0001f600",
    tool_calls=(
        ToolCall("call_1", "write_file", {"file_path": "/a.md", "content": "x\n", "n": [1, 2.5]}),
        ToolCall("call_2", "grep", {}, raw_arguments='{"pattern": '),
    ),
    usage=Usage(1200, 80, cached_tokens=1000, cache_write_tokens=10, requests=1, cost_usd=0.0125),
    stop_reason="tool_calls",
    model_name="gpt-x-2026",
    provider_items=({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted": "abc"},),
)


def test_every_journaled_kind_round_trips_exactly(tmp_path: Path) -> None:
    store = _store(tmp_path)
    checkpoint = {"main": {"index": 2, "turn": "t2"}, "tasks": {}, "ids": ["a", "b"], "n": None}
    first = Journal(store, "run_a")
    first.record("model", "model:k1", RESPONSE, "task-1", model=Checkpointed(checkpoint))
    first.record("tool:grep", "tool:grep:call_2", "3 matches \udcff", None)
    first.record("model", "model:k2", ModelResponse(text="done"), None)

    again = Journal(store, "run_a", replay=True)
    entry = again.take("model:k1")
    assert entry is not None and entry.value == RESPONSE and entry.task_run_id == "task-1"
    assert entry.value.provider_items == RESPONSE.provider_items
    assert again.take("tool:grep:call_2").value == "3 matches \udcff"  # type: ignore[union-attr]
    assert again.take("model:k2").value == ModelResponse(text="done")  # type: ignore[union-attr]
    model = Checkpointed({})
    assert again.restore_model(model) and model.restored == checkpoint

    # What is stored is readable JSON with its schema and version.
    raw = store.scalar("SELECT decode(result) FROM step_journal WHERE key = 'model:k1'")
    record = json.loads(raw)
    assert (record["schema"], record["version"], record["kind"]) == (
        "ctxlab.step_journal",
        1,
        "model_response",
    )


def test_a_value_with_no_record_is_not_journaled(tmp_path: Path) -> None:
    store = _store(tmp_path)
    Journal(store, "run_a").record("tool:t", "tool:t:c", object(), None)
    assert encode(object()) is None
    assert store.scalar("SELECT count(*) FROM step_journal") == 0


class _Payload:
    """What an attacker would plant: unpickling it creates a file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (self.path,))


def _plant(store: Store, key: str, blob: bytes) -> None:
    store.execute(
        "INSERT INTO step_journal VALUES ('run_a', 'model', ?, ?, NULL, ?)", [key, blob, now()]
    )


def test_a_crafted_pickle_row_is_refused_and_never_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    marker = tmp_path / "pwned"
    _plant(store, "model:k1", pickle.dumps(_Payload(marker)))
    with pytest.raises(JournalError, match=r"step_journal row 'model:k1' of run 'run_a'.*pickle"):
        Journal(store, "run_a", replay=True)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"kind": "text", "value": "x"}, "no 'ctxlab.step_journal' schema"),
        ({"schema": "ctxlab.step_journal", "version": 9, "kind": "text", "value": "x"}, "ver"),
        ({"schema": "ctxlab.step_journal", "version": 1, "kind": "pickle", "value": "x"}, "kind"),
        ({"schema": "ctxlab.step_journal", "version": 1, "kind": "text", "value": 3}, "type"),
        (
            {"schema": "ctxlab.step_journal", "version": 1, "kind": "model_response",
             "value": {"text": "x"}},
            "malformed model_response",
        ),
        (
            {"schema": "ctxlab.step_journal", "version": 1, "kind": "model_response",
             "value": {**json.loads(encode(RESPONSE))["value"], "stop_reason": "rm -rf"}},  # type: ignore[arg-type]
            "stop_reason",
        ),
    ],
)  # fmt: skip
def test_a_row_that_is_not_a_valid_record_is_refused(
    tmp_path: Path, record: dict[str, Any], why: str
) -> None:
    store = _store(tmp_path)
    _plant(store, "model:k1", json.dumps(record).encode())
    with pytest.raises(JournalError, match=why):
        Journal(store, "run_a", replay=True)


def test_a_checkpoint_under_a_step_key_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _plant(store, "model:k1", encode({"main": None}, checkpoint=True))  # type: ignore[arg-type]
    with pytest.raises(JournalError, match="wrong key"):
        Journal(store, "run_a", replay=True)
    assert state_key(Checkpointed({})) == "model-state:stateful"
