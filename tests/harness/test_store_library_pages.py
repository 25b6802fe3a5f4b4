"""DuckDB's start-up pages (`harness.store.library_pages`, issue 35): once the process's first
connection is configured, and again once its first write-behind flush has run, the clean pages
of DuckDB's library leave the resident memory, the pages copied on write stay, and DuckDB works
on, faulting back what it runs."""

from __future__ import annotations

import os
import sys

import duckdb
import pytest

from harness import Store
from harness.messages import user
from harness.resident import READ_ONLY_OR_CODE, clean_mappings
from harness.store import StepBatch, library_pages, message_row

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's smaps")

LIBRARY = os.path.realpath(sys.modules[duckdb.DuckDBPyConnection.__module__].__file__ or "")


def _resident_kb() -> tuple[int, int]:
    """Resident kB of DuckDB's library: (its clean read-only mappings, the others)."""
    clean = {start for start, _ in clean_mappings(LIBRARY, READ_ONLY_OR_CODE)}
    sizes = [0, 0]
    where: int | None = None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            parts = line.split(maxsplit=5)
            if not parts[0].endswith(":"):
                ours = len(parts) > 5 and parts[5].rstrip("\n") == LIBRARY
                where = None if not ours else 0 if int(parts[0].split("-")[0], 16) in clean else 1
            elif where is not None and parts[0] == "Rss:":
                sizes[where] += int(parts[1])
    return sizes[0], sizes[1]


def _warm() -> None:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t AS SELECT range AS i, range::VARCHAR AS s FROM range(1000)")
    assert con.execute("SELECT count(*), max(s) FROM t").fetchone() == (1000, "999")


def test_the_clean_pages_go_and_duckdb_works_on() -> None:
    _warm()
    clean, other = _resident_kb()
    assert clean > 4_096  # connecting alone runs megabytes of its code
    library_pages.let_go_of_library_pages()
    after, other_after = _resident_kb()
    assert after < clean // 4
    assert other_after == other  # relocated data (copied on write) stays as it was
    _warm()  # runs on, its pages read back


def test_the_first_open_and_the_first_flush_of_the_process_settle_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(library_pages, "_settled", set())
    monkeypatch.setattr(library_pages, "let_go_of_library_pages", lambda: calls.append(1))
    store = Store(":memory:", write_behind=2)
    assert len(calls) == 1  # its connection, the process's first
    for seq in range(1, 4):
        batch = StepBatch()
        batch.add("messages", message_row(user("x"), thread_id="t", seq=seq, run_id="r",
                                          step=0, tokens=1))  # fmt: skip
        store.write(batch)
        assert len(calls) == (2 if seq == 3 else 1)  # the third batch flushed the first two
    store.flush()
    Store(":memory:").close()
    assert len(calls) == 2


def test_a_moment_that_is_not_one_is_named() -> None:
    with pytest.raises(ValueError, match="no such moment 'later'"):
        library_pages.settle("later")
