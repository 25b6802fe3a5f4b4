"""What reading other harnesses' traces costs at the scale #18 names: a folder of 500 runs
(median ~75k characters, a few near 2 MB, five formats; `trace_corpus.write_corpus`) read
with `read_folder`, and a 10 MB Claude Code session streamed with `read_traces`
(`trace_corpus.write_session`), each in a fresh process so its peak RSS is its own.

#18 asks for the folder in under 2 minutes on 2 cores and the session under 300 MB peak
RSS; the numbers go in `extra_info` and the notes, never in asserts. The same folder is
also timed through `evals.sources.trace_import.import_path`, the whole import a user runs
(parse, redaction, probes, one scenario file per trace and the suite index), since the
2-minute figure is for that, not for the parse alone.

Run with `uv run pytest tests/benchmarks/test_trace_import.py --benchmark-only -s`.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from trace_corpus import write_corpus, write_session

# The child reports its own peak RSS, and the RSS it had before reading (the interpreter and
# the parsers' imports), so the reading's own share is the difference. Linux's VmHWM, not
# getrusage: a child's ru_maxrss starts at its parent's (pytest's) high-water mark.
RSS = """
import json, resource, sys, time
from pathlib import Path
def rss():
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

PARSE = (
    RSS
    + """
from evals.sources.formats import read_folder, read_traces
from evals.sources.trace import Skipped
path = Path(sys.argv[1])
before = rss()
start = time.perf_counter()
traces = messages = calls = skipped_files = 0
items = read_folder(path) if path.is_dir() else read_traces(path)
for item in items:  # counted and let go, as an importer writing one file a trace would
    if isinstance(item, Skipped):
        skipped_files += 1
        continue
    traces += 1
    messages += len(item.messages)
    calls += sum(len(m.tool_calls) for m in item.messages)
print(json.dumps({"seconds": round(time.perf_counter() - start, 2), "traces": traces,
                  "messages": messages, "tool_calls": calls, "skipped_files": skipped_files,
                  "rss_before_mb": round(before, 1), "peak_rss_mb": round(rss(), 1)}))
"""
)

IMPORT = (
    RSS
    + """
from evals.sources.trace_import import import_path
before = rss()
summary = import_path(Path(sys.argv[1]), Path(sys.argv[2]), window=int(sys.argv[3]))
print(json.dumps({"seconds": round(summary.seconds, 2), "scenarios": len(summary.files),
                  "probes": summary.probes, "skipped": len(summary.skipped),
                  "rss_before_mb": round(before, 1), "peak_rss_mb": round(rss(), 1)}))
"""
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 500-run folder (written once per session of benchmarks)."""
    folder = tmp_path_factory.mktemp("trace-corpus")
    write_corpus(folder, n=500, seed=18)
    return folder


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_session(tmp_path_factory.mktemp("trace-session") / "session.jsonl", mb=10)


def _child(script: str, *args: object) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def _measure(path: Path) -> dict[str, float]:
    return _child(PARSE, path)


def _import(path: Path, out: Path, window: int) -> dict[str, float]:
    return _child(IMPORT, path, out, window)


def test_read_a_folder_of_500_traces(benchmark, corpus: Path) -> None:  # type: ignore[no-untyped-def]
    sizes = sorted(p.stat().st_size for p in corpus.iterdir())
    numbers = benchmark.pedantic(_measure, args=(corpus,), rounds=1, iterations=1)
    benchmark.extra_info.update(
        numbers, files=len(sizes), median_bytes=statistics.median(sizes), max_bytes=sizes[-1]
    )
    print(f"\n500 traces (median {statistics.median(sizes):.0f} B, max {sizes[-1]} B): {numbers}")


def test_stream_a_10_mb_claude_code_session(benchmark, session: Path) -> None:  # type: ignore[no-untyped-def]
    numbers = benchmark.pedantic(_measure, args=(session,), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers, file_mb=round(session.stat().st_size / 2**20, 1))
    print(f"\n10 MB session ({session.stat().st_size / 2**20:.1f} MB): {numbers}")


def test_import_a_folder_of_500_traces(  # type: ignore[no-untyped-def]
    benchmark, corpus: Path, tmp_path: Path
) -> None:
    """The whole import at a window tight enough that most traces need compaction (the
    case #18's users test), so probes are built over every trace, not skipped."""
    out = tmp_path / "suite"
    numbers = benchmark.pedantic(_import, args=(corpus, out, 8000), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers)
    print(f"\nimport of 500 traces: {numbers}")
