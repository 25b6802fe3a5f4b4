"""DuckDB's library pages: the ones its start-up read, let go once a store has settled.

DuckDB's library is 66 MB of file, and its start-up (connecting: registering every function and
setting; the schema; a run's first statements) leaves ~38 MB of it resident: pages of code run
once and never again, kept mapped 64 kB a fault. `settle` drops the library's clean pages from
this process's resident memory (`harness.resident`) twice, once each: when the process's first
connection is configured (connecting ran most of that code), and after its first write-behind
flush (by then every statement a run repeats has run once). Later statements fault back only
what they run: in the issue-35 trajectory ~21 MB, and its peak RSS at 401 steps fell from 147 to
130 MB (at step 1 the tokenizer's load no longer meets DuckDB's start-up pages either). Each
drop costs ~6 ms of CPU.
"""

from __future__ import annotations

import sys

from harness.resident import READ_ONLY_OR_CODE, let_go

# The moments already settled in this process (the library is loaded once a process).
_settled: set[str] = set()
MOMENTS = ("open", "flush")


def settle(moment: str) -> None:
    """Drop the library pages read so far, the first time `moment` (one of MOMENTS: the first
    connection configured, the first write-behind flush) comes in this process."""
    if moment not in MOMENTS:
        raise ValueError(f"no such moment {moment!r}: one of {', '.join(MOMENTS)}")
    if moment in _settled:
        return
    _settled.add(moment)
    let_go_of_library_pages()


def let_go_of_library_pages() -> None:
    """Drop the resident pages of DuckDB's library that are the file's own."""
    import duckdb

    path = sys.modules[duckdb.DuckDBPyConnection.__module__].__file__
    if path is not None:
        let_go(path, READ_ONLY_OR_CODE)
