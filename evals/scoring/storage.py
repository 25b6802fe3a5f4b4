"""Eval results in DuckDB: `eval_runs` (one row per run) and `eval_probes` (one row per probe
of a run), next to the harness's own tables in the same store; polars frames for analysis."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evals.errors import StoreSaveError
from evals.scoring.records import ProbeResult
from evals.scoring.results import EvalResult
from harness.store import Store, now

SCHEMA = """
CREATE TABLE IF NOT EXISTS eval_runs (
    run_key VARCHAR PRIMARY KEY, batch VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    scenario VARCHAR NOT NULL, strategy VARCHAR NOT NULL, params JSON, seed INTEGER,
    scale VARCHAR, model VARCHAR, reader VARCHAR, simulated BOOLEAN, status VARCHAR,
    accuracy DOUBLE, probes INTEGER, correct INTEGER, wrong INTEGER, dont_know INTEGER,
    accuracy_by_kind JSON,
    input_tokens BIGINT, output_tokens BIGINT, cached_input_tokens BIGINT,
    cache_write_tokens BIGINT, peak_context_tokens BIGINT, model_calls INTEGER,
    retrieval_calls INTEGER, tool_recalls INTEGER,
    main_input_tokens BIGINT, summarizer_input_tokens BIGINT, summarizer_output_tokens BIGINT,
    subagent_input_tokens BIGINT, subagent_output_tokens BIGINT, summaries INTEGER,
    offloads INTEGER, skill_reads INTEGER, subagent_calls INTEGER, memory_writes INTEGER,
    overflowed BOOLEAN, overflow_step INTEGER, overflow_turn INTEGER,
    subagent_overflows INTEGER, cost_usd DOUBLE, live_cost_usd DOUBLE, wall_s DOUBLE,
    tuned BOOLEAN, train_seeds JSON, lost_to_overflow INTEGER, reached_accuracy DOUBLE,
    weeks JSON,
    data_probes INTEGER, data_accuracy DOUBLE, data_free_accuracy DOUBLE,
    carried_probes INTEGER, carried_accuracy DOUBLE, in_view DOUBLE, one_read DOUBLE,
    lost DOUBLE, retrieved_probes INTEGER, retrieval_found INTEGER, replay_digest VARCHAR,
    thresholds JSON
);
CREATE TABLE IF NOT EXISTS eval_probes (
    run_key VARCHAR NOT NULL, probe_id VARCHAR NOT NULL, kind VARCHAR, session INTEGER,
    question VARCHAR, expected VARCHAR, answer VARCHAR, correct BOOLEAN, status VARCHAR,
    retrieval_calls INTEGER, input_tokens BIGINT, outcome VARCHAR, judge_model VARCHAR,
    judge_verdict VARCHAR, judge_cost_usd DOUBLE, source VARCHAR, window_tokens BIGINT,
    carried BOOLEAN, availability VARCHAR, evidence VARCHAR, retrieval_found BOOLEAN
);
"""
# Stores written before the fallible reader, the judge, tuned runs or the data split: add what
# they lack (their runs read as "ideal" readers when `rot` was off, and as untuned, with no
# data split; the old column stays, unread).
UPGRADE = """
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS reader VARCHAR;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS wrong INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS dont_know INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS skill_reads INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS subagent_calls INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS memory_writes INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS tool_recalls INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS tuned BOOLEAN;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS train_seeds JSON;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS lost_to_overflow INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS reached_accuracy DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS weeks JSON;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS outcome VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS judge_model VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS judge_verdict VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS judge_cost_usd DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS data_probes INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS data_accuracy DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS data_free_accuracy DOUBLE;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS source VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS window_tokens BIGINT;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS carried_probes INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS carried_accuracy DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS in_view DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS one_read DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS lost DOUBLE;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS retrieved_probes INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS retrieval_found INTEGER;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS replay_digest VARCHAR;
ALTER TABLE eval_runs ADD COLUMN IF NOT EXISTS thresholds JSON;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS carried BOOLEAN;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS availability VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS evidence VARCHAR;
ALTER TABLE eval_probes ADD COLUMN IF NOT EXISTS retrieval_found BOOLEAN;
"""
_JSON_COLUMNS = ("params", "accuracy_by_kind", "train_seeds", "weeks", "thresholds")


def open_store(store: Store | str | Path) -> Store:
    """A store with the eval tables; a path opens (and closes) its own."""
    opened = store if isinstance(store, Store) else Store(store, hold=False)
    opened.execute(SCHEMA)
    opened.execute(UPGRADE)
    return opened


def save_results(store: Store | str | Path, results: Sequence[EvalResult]) -> str:
    """Append runs and their probes; returns the batch id shared by these rows."""
    db = open_store(store)
    batch = f"batch_{uuid.uuid4().hex[:12]}"
    stamp = now()
    runs, probes = [], []
    for i, r in enumerate(results):
        key = f"{batch}-{i:04d}"
        row = r.to_dict()
        row.pop("cost_by_cache_price")  # derived from the stored tokens and the model's prices
        row["weeks"] = list(r.weeks)  # [] for a scenario that is not recurring
        for col in _JSON_COLUMNS:
            row[col] = json.dumps(row[col], sort_keys=True, default=str)
        runs.append({"run_key": key, "batch": batch, "created_at": stamp, **row})
        probes += [{"run_key": key, "probe_id": p.id, **_probe_row(p)} for p in r.probe_results]
    with db.transaction() as con:
        for table, rows in (("eval_runs", runs), ("eval_probes", probes)):
            if rows:
                # Every row decides the types: a column None in the first hundred rows (a
                # probe never retrieved) must not be taken for an all-null one.
                frame = pl.DataFrame(rows, infer_schema_length=None)
                con.register("incoming", frame.to_arrow())
                con.execute(f"INSERT INTO {table} ({', '.join(rows[0])}) SELECT * FROM incoming")
                con.unregister("incoming")
    return batch


def save_or_dump(store: str | Path, results: Sequence[EvalResult]) -> str:
    """`save_results`, and if the store cannot take them, the results in a JSON file next to it
    (else in the working or temporary folder): the raised error names the file, so no computed
    run is lost."""
    try:
        return save_results(store, results)
    except Exception as exc:
        dumped = dump_results(Path(store), results)
        raise StoreSaveError(
            f"could not save {len(results)} results to {store} ({str(exc).splitlines()[0]}); "
            f"they are in {dumped}"
        ) from exc


def dump_results(store: Path, results: Sequence[EvalResult]) -> Path:
    import tempfile

    name = f"{store.stem}-unsaved-{uuid.uuid4().hex[:8]}.json"
    text = json.dumps([r.to_dict(probes=True) for r in results], default=str, indent=1)
    for folder in (store.parent, Path.cwd(), Path(tempfile.gettempdir())):
        try:
            (folder / name).write_text(text)
            return folder / name
        except OSError:
            continue
    raise OSError(f"could not write {name} anywhere")


def _probe_row(p: ProbeResult) -> dict[str, object]:
    row = p.to_dict()
    row.pop("id")
    return row


def load_runs(store: Store | str | Path, scenario: str | None = None) -> pl.DataFrame:
    """Every stored run (of `scenario`), oldest first."""
    db = open_store(store)
    where, params = ("WHERE scenario = ?", [scenario]) if scenario else ("", [])
    return db.frame(f"SELECT * FROM eval_runs {where} ORDER BY created_at, run_key", params)


def load_probes(store: Store | str | Path, run_key: str | None = None) -> pl.DataFrame:
    db = open_store(store)
    where, params = ("WHERE run_key = ?", [run_key]) if run_key else ("", [])
    return db.frame(f"SELECT * FROM eval_probes {where} ORDER BY run_key, probe_id", params)


def results_from_frame(frame: pl.DataFrame) -> list[EvalResult]:
    """Stored runs back as `EvalResult`s (without their probe rows)."""
    fields = EvalResult.__dataclass_fields__
    out = []
    for row in frame.iter_rows(named=True):
        data = {k: v for k, v in row.items() if k in fields}
        for col in ("params", "accuracy_by_kind", "thresholds"):
            data[col] = json.loads(data[col]) if data.get(col) else {}
        data["train_seeds"] = tuple(json.loads(data.get("train_seeds") or "[]"))
        data["weeks"] = tuple(json.loads(data.get("weeks") or "[]"))
        # NULL in runs stored before these columns
        for col in ("lost_to_overflow", "reached_accuracy", "data_probes", "carried_probes",
                    "retrieved_probes", "retrieval_found", "replay_digest"):  # fmt: skip
            if data.get(col) is None:
                data.pop(col, None)
        out.append(EvalResult(**data))
    return out
