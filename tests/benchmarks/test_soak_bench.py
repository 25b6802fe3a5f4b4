"""The soak (issue 37): tool calls with results from 1 KB to hundreds of MB on a file store, a
full disk for a moment, a SIGKILL at a random point, then a new process that recovers the store
and finishes the thread. It must end with every reported step stored once (no hole, no double),
each result byte-identical; peak RSS is stated.

A quick run (300 calls, results up to 30 MB, ~1 GB written):

    uv run pytest tests/benchmarks/test_soak_bench.py --benchmark-only -s

The full one (10,000 calls up to 300 MB: ~240 GB written, so a disk that holds it):

    CTXLAB_SOAK_CALLS=10000 CTXLAB_SOAK_MAX_MB=300 uv run pytest \\
        tests/benchmarks/test_soak_bench.py --benchmark-only -s

The same range on an ordinary disk: 10,000 calls of 1 KB to 1 MB, three of them 150-300 MB:

    CTXLAB_SOAK_CALLS=10000 CTXLAB_SOAK_MAX_MB=300 CTXLAB_SOAK_BULK_MB=1 CTXLAB_SOAK_HUGE=3 \\
        uv run pytest tests/benchmarks/test_soak_bench.py --benchmark-only -s

CTXLAB_SOAK_SEED picks the sizes, the disk-full call and the kill point; CTXLAB_SOAK_MEMORY sets
the store's DuckDB memory_limit (default 256MB, the file store's).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness import Store

sys.path.insert(0, str(Path(__file__).parent))
from soak_child import BULK_MB, HUGE, THREAD, answered, call_number, result_text, sizes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("soak_child.py")
CALLS = int(os.environ.get("CTXLAB_SOAK_CALLS", "300"))
MAX_BYTES = int(float(os.environ.get("CTXLAB_SOAK_MAX_MB", "30")) * 1_000_000)
SEED = int(os.environ.get("CTXLAB_SOAK_SEED", "37"))
MEMORY = os.environ.get("CTXLAB_SOAK_MEMORY", "256MB")


def _child(db: Path, report: Path, disk_at: int) -> subprocess.Popen[str]:
    args = [db, CALLS, MAX_BYTES, SEED, disk_at, report, MEMORY]
    return subprocess.Popen(
        [sys.executable, str(CHILD), *map(str, args)], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _reported(report: Path) -> set[int]:
    return {int(line) for line in report.read_text().split()} if report.exists() else set()


def _children_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _soak(tmp: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    db, report = tmp / "soak.duckdb", tmp / "reported.txt"
    disk_at = rng.randrange(CALLS // 10, CALLS // 3)
    kill_after = rng.randrange(CALLS // 3, 2 * CALLS // 3)
    started = time.monotonic()
    doomed = _child(db, report, disk_at)
    while len(_reported(report)) < kill_after and doomed.poll() is None:
        time.sleep(0.05)
    time.sleep(rng.uniform(0, 0.2))  # somewhere inside a step
    doomed.send_signal(signal.SIGKILL)
    _, doomed_err = doomed.communicate()
    killed_at = len(_reported(report))
    assert doomed.returncode == -signal.SIGKILL, doomed_err[-2000:]
    first_peak = _children_peak_mb()
    survivor = _child(db, report, -1)  # opens the store (recovers it) and finishes the thread
    out, err = survivor.communicate()
    assert survivor.returncode == 0, err[-2000:]
    wall = time.monotonic() - started
    checked = _check(db, _reported(report))
    assert "StoreError" in doomed_err + err, "the disk never refused a write"
    return {
        "calls": CALLS, "max_mb": MAX_BYTES / 1e6, "bulk_mb": BULK_MB, "huge": HUGE,
        "disk_full_at": disk_at,
        "killed_after_reported": killed_at, "wall_s": round(wall, 1),
        "peak_rss_mb_killed": round(first_peak, 1),
        "peak_rss_mb_resumed": json.loads(out.strip().splitlines()[-1])["rss_mb"],
        "store_mb": round(db.stat().st_size / 1e6, 1),
        "disk_full_errors": (doomed_err + err).count("StoreError"),
        **checked,
    }  # fmt: skip


def _sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def _check(db: Path, reported: set[int]) -> dict[str, Any]:
    """Every call answered once, in order, each result byte-identical; every reported step among
    them; seqs 1..N with no hole and none twice."""
    size_of = sizes(CALLS, MAX_BYTES, SEED)
    with Store(db) as store:
        rows = store.messages.rows(THREAD)
        seqs = [r["seq"] for r in rows]
        assert seqs == list(range(1, len(seqs) + 1))
        assert len({r["message_id"] for r in rows}) == len(rows)
        done = answered(store)
        assert done == list(range(CALLS)), "a call missing or answered twice"
        assert reported <= set(done)
        bytes_checked = 0
        for row in rows:  # one original in memory at a time
            if row["role"] != "tool" or row["kind"] != "message":
                continue
            n = call_number(row["tool_call_id"])
            ref = row["full_ref"]
            text = store.messages.full_texts([ref])[ref] if ref else row["content"]
            assert _sha(text) == _sha(result_text(n, size_of[n])), f"result {n} differs"
            bytes_checked += len(text)
        runs = store.runs.all()
    return {"rows_checked": len(rows), "results_checked": len(done),
            "result_mb_checked": round(bytes_checked / 1e6, 1), "runs": len(runs)}  # fmt: skip


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE and SIGKILL are POSIX")
def test_soak_on_a_file_store(benchmark, tmp_path: Path) -> None:
    numbers = benchmark.pedantic(_soak, args=(tmp_path,), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers)
    print(json.dumps(numbers))
