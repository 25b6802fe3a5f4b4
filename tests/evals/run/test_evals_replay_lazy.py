"""An eval replay's store is lazy (issue 35): its rows stay in Python, so a replay runs no DuckDB
statement at all, and a store queried with SQL afterwards holds every row an eager store holds."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any

import pytest

from evals.run.replay import replay
from evals.scenarios import get_scenario
from harness import Store
from harness.store import database

# (scenario, options, strategy, settings): together they write skills, subagent runs, memory
# over weeks, offloaded originals, summaries and history files.
CELLS = [
    ("competitive-analysis", {}, "full", {}),
    ("competitive-analysis", {"weeks": 3}, "full", {}),
    ("support-transcript", {}, "full", {}),
    ("long-horizon", {}, "summarize", {"summarize.trigger": 0.5}),
]
APPENDED = ("runs", "messages", "windows", "model_calls", "events", "summaries", "memory")
KEYED = {"files": "namespace, path", "file_chunks": "blob_id, chunk"}


def _replay(cell: tuple[str, dict[str, Any], str, dict[str, Any]], store: Store | None = None):
    name, options, strategy, settings = cell
    scenario = get_scenario(name, 0, "small", options)
    return asyncio.run(replay(scenario, strategy, settings, store=store))


@pytest.mark.parametrize("cell", CELLS, ids=[f"{c[0]}-{c[2]}-{len(c[1])}" for c in CELLS])
def test_a_replay_opens_no_database(cell, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = database.Database.open

    def counting_open(self: database.Database) -> Any:
        opened.append(self.path)
        return real_open(self)

    monkeypatch.setattr(database.Database, "open", counting_open)
    out = _replay(cell)
    assert out.probes and out.usage["main"]["calls"] > 0
    assert opened == []  # no connection, so no schema and no statement


# Values a second run of the same replay draws anew: times, durations, fresh ids.
_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{16,32}(?![0-9a-f])")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?")
_DURATIONS = {"ms", "latency_ms"}


def _canonical(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The tables with each fresh value replaced by its order of first appearance."""
    seen: dict[str, str] = {}

    def fresh(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<{len(seen)}>")

    def value(name: str, v: Any) -> Any:
        if isinstance(v, datetime):
            return "<time>"
        if name in _DURATIONS:
            return "<duration>"
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        return _ID.sub(fresh, _TIME.sub("<time>", text)) if isinstance(text, str) else v

    out = {t: [{k: value(k, v) for k, v in row.items()} for row in rows]
           for t, rows in tables.items()}  # fmt: skip
    # Blob ids are fresh: their chunks are in the order of the files and messages naming them.
    out["file_chunks"].sort(key=lambda r: (r["blob_id"], r["chunk"]))
    return out


def _tables(store: Store) -> dict[str, list[dict[str, Any]]]:
    out = {t: store.query(f"SELECT * FROM {t} ORDER BY rowid") for t in APPENDED}  # noqa: S608
    for table, key in KEYED.items():
        out[table] = store.query(f"SELECT * FROM {table} ORDER BY {key}")  # noqa: S608
    return out  # `files` before `file_chunks`: `_canonical` names the blobs in that order


@pytest.mark.parametrize("cell", CELLS, ids=[f"{c[0]}-{c[2]}-{len(c[1])}" for c in CELLS])
def test_a_lazy_store_queried_after_a_replay_holds_what_an_eager_one_holds(cell) -> None:
    eager = Store(":memory:")
    _replay(cell, eager)
    lazy = _replay(cell).store
    assert lazy is not None and lazy.lazy is not None and lazy.lazy.live
    want, got = _canonical(_tables(eager)), _canonical(_tables(lazy))
    assert not lazy.lazy.live  # the first query wrote every row to the database
    for table in want:
        assert got[table] == want[table], table
    assert sum(len(rows) for rows in got.values()) > 50


def _answers(store: Store, files: list[tuple[str, str, Any]], runs: list[str]) -> dict[str, Any]:
    """What a replay's store reads answer (`files`: (namespace, path, blob id) of each; `runs`:
    (run, thread) ids): from its rows while it is live, from SQL after."""
    threads = sorted({t for _, t in runs})
    tops = sorted({"/" + p.split("/")[1] for _, p, _ in files})
    namespaces = sorted({ns for ns, _, _ in files})
    blobs = [b for _, _, b in files if b is not None]
    out: dict[str, Any] = {
        "rows": [store.files.row(ns, p) for ns, p, _ in files],
        "exists": [store.files.exists(ns, p) for ns, p, _ in files],
        "blob_of": [store.files.blob_of(ns, p) for ns, p, _ in files],
        "content": [store.files.content(ns, p) for ns, p, _ in files],
        "thread_file": [store.files.thread_file(t, p) for t in threads for _, p, _ in files],
        "below": [
            store.files.has_files_below((ns, "shared"), t + "/") for ns in namespaces for t in tops
        ],  # fmt: skip
        "listing": [store.files.listing((ns, "shared"), "/") for ns in namespaces],
        "text_at": [
            store.files.text_files_at((ns, "shared"), t, t + "/") for ns in namespaces for t in tops
        ],  # fmt: skip
        "clashes": [store.files.clashes(ns, tops, "/") for ns in namespaces],
        "tops": store.files.paths_under_tops(namespaces, tops),
        "digests": sorted(
            (r["path"], r["digest"]) for ns in namespaces for r in store.files.digests(ns, "/")
        ),  # fmt: skip
        "blobs": [store.files.blob_bytes(b) for b in blobs],
        "chunks": [store.files.blob_chunks(b, 0, 3) for b in blobs],
        "lines": [store.files.chunk_of_line(b, n) for b in blobs for n in (0, 1, 70, 10**6)],
        "memory": (store.memory.any(), [store.memory.latest(p) for _, p, _ in files]),
        "in_use": [store.runs.thread_in_use(t) for t in [*threads, "nobody"]],
        "overflows": store.runs.subagent_overflows(),
        "by_role": store.usage.by_role(),
        "of_thread": [store.usage.of_thread(t) for t in threads],
        "events": (
            store.events.count("offload_%"),
            store.events.count("%"),
            [store.events.rows(r) for r, _ in runs],
        ),  # fmt: skip
        "summaries": (store.summaries.all(), [store.summaries.last_cycle(t) for t in threads]),
        "steps": [store.messages.committed_steps(r) for r, _ in runs],
        "calls": store.messages.all_tool_calls(),
        "windows": [(store.load_window(t), store.next_seq(t)) for t in threads],
    }
    ids = {
        t: [m.id for m in window] for t, (window, _) in zip(threads, out["windows"], strict=True)
    }
    out["seq_range"] = [
        store.messages.seq_range(t, ids[t][:n]) for t in threads for n in (1, 5, 99)
    ]
    return out


@pytest.mark.parametrize("cell", CELLS, ids=[f"{c[0]}-{c[2]}-{len(c[1])}" for c in CELLS])
def test_a_lazy_store_answers_from_its_rows_what_sql_answers(cell) -> None:
    store = _replay(cell).store
    assert store is not None and store.lazy is not None
    files = [(ns, p, r[8]) for (ns, p), r in store.lazy.files.items()]
    runs = [(str(r[0]), str(r[1])) for r in store.lazy.runs.values()]
    live = _answers(store, files, runs)
    assert store.lazy.live  # every read above was answered from the rows
    store.query("SELECT 1")
    assert not store.lazy.live
    store.own.forget()  # windows and next positions read from the tables too
    assert _answers(store, files, runs) == live
