"""What importing one long trace costs as it grows (#37 item 5): an OpenAI Chat session of
1k, 10k and 100k messages (`long_trace.write_long_trace`: lookups showing records, closes
passing their ids, notes repeating their amounts) through
`evals.sources.trace_import.import_path`, the whole import a user runs (parse, redaction,
walk, probes, the scenario file), each in a fresh process so its peak RSS is its own.

#37 asks for 10k messages in under 10 s and 100k in under 2 minutes on 2 cores, peak RSS
stated; the numbers go in `extra_info` and are printed, never asserted (the linearity itself
is tested by counting, in tests/evals/sources/test_trace_import_linear.py). The 100k case
takes minutes: it is marked `slow`.

Run with `uv run pytest tests/benchmarks/test_long_trace_import_bench.py --benchmark-only -s`
(add `-m slow` for the 100k case).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from long_trace import write_long_trace
from test_trace_import import _child

# The child reports the import's own time, wall and CPU (the CPU time holds on a machine
# shared with other work, where the wall time does not), and its peak RSS (VmHWM, not
# getrusage: a child's ru_maxrss starts at its parent's high-water mark), and the RSS before
# the trace was read.
IMPORT = """
import json, sys, time
from pathlib import Path
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
from evals.sources.trace_import import import_path
before, cpu = rss(), time.process_time()
summary = import_path(Path(sys.argv[1]), Path(sys.argv[2]))
print(json.dumps({"seconds": round(summary.seconds, 2),
                  "cpu_seconds": round(time.process_time() - cpu, 2),
                  "scenarios": len(summary.files),
                  "probes": summary.probes, "skipped": len(summary.skipped),
                  "rss_before_mb": round(before, 1), "peak_rss_mb": round(rss(), 1)}))
"""


def _import(tmp_path: Path, n: int) -> dict[str, float]:
    trace = write_long_trace(tmp_path / f"session-{n}.json", n)
    return _child(IMPORT, trace, tmp_path / f"session-{n}.yaml")


def _run(benchmark, tmp_path: Path, n: int) -> None:  # type: ignore[no-untyped-def]
    numbers = benchmark.pedantic(_import, args=(tmp_path, n), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers, messages=n)
    print(f"\nimport of a {n}-message trace: {numbers}")


def test_import_a_1k_message_trace(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _run(benchmark, tmp_path, 1_000)


def test_import_a_10k_message_trace(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _run(benchmark, tmp_path, 10_000)


@pytest.mark.slow
def test_import_a_100k_message_trace(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _run(benchmark, tmp_path, 100_000)
