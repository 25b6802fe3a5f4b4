"""Reading a 50 MB LangSmith run export (issue 34): every `llm` run repeats its thread's
history, so the reader keeps each distinct message once and reads a line at a time. Peak RSS
is measured in a fresh process (`test_trace_import._child`); the issue asks for under 300 MB.
Numbers go in `extra_info`, never in asserts.

Run with `uv run pytest tests/benchmarks/test_langsmith_import_bench.py --benchmark-only -s`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langsmith_export import write_export
from test_trace_import import PARSE, _child


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_export(tmp_path_factory.mktemp("langsmith") / "runs.jsonl", mb=50)


def test_stream_a_50_mb_langsmith_export(benchmark, export: Path) -> None:  # type: ignore[no-untyped-def]
    numbers = benchmark.pedantic(_child, args=(PARSE, export), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers, file_mb=round(export.stat().st_size / 2**20, 1))
    print(f"\n50 MB LangSmith export ({export.stat().st_size / 2**20:.1f} MB): {numbers}")
