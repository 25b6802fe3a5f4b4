"""DuckDB's library pages: the ones its start-up read, let go once a store has settled.

DuckDB's library is 66 MB of file, and its start-up (connecting: registering every function and
setting; the schema; a run's first statements) leaves ~38 MB of it resident: pages of code run
once and never again, kept mapped 64 kB a fault. `settle` drops the library's clean pages from
this process's resident memory (MADV_DONTNEED) twice, once each: when the process's first
connection is configured (connecting ran most of that code), and after its first write-behind
flush (by then every statement a run repeats has run once). Later statements fault back only
what they run: in the issue-35 trajectory ~21 MB, and its peak RSS at 401 steps fell from 147 to
130 MB (at step 1 the tokenizer's load no longer meets DuckDB's start-up pages either).

Only mappings of the library that are read-only, private and hold nothing but the file's pages
(no page copied on write, such as relocated data) are dropped: the kernel reads a dropped page
back from the file (the page cache, as a rule) when it is touched again, so nothing changes but
the resident size. Each drop costs ~6 ms of CPU (reading /proc/self/smaps). Linux only;
anything unexpected leaves the pages be.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

# The moments already settled in this process (the library is loaded once a process).
_settled: set[str] = set()
MOMENTS = ("open", "flush")
_MADV_DONTNEED = 4


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
    """Drop the resident pages of DuckDB's library that are the file's own (see the module)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        import duckdb

        path = sys.modules[duckdb.DuckDBPyConnection.__module__].__file__
        if path is None:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start, stop in clean_mappings(os.path.realpath(path)):
            libc.madvise(start, stop - start, _MADV_DONTNEED)
    except (OSError, AttributeError, ValueError, IndexError, KeyError):
        log.debug("DuckDB's library pages stay resident", exc_info=True)


def clean_mappings(path: str) -> list[tuple[int, int]]:
    """(start, stop) of the mappings of the file at `path` that are read-only (code or data)
    and private with no anonymous (copied-on-write) page, from /proc/self/smaps."""
    found: list[tuple[int, int]] = []
    candidate: tuple[int, int] | None = None
    seen = False  # the file's mappings are adjacent: reading stops after them
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            parts = line.split(maxsplit=5)
            if not parts:
                continue
            if not parts[0].endswith(":"):  # a mapping's header: range, perms, ..., path
                ours = len(parts) > 5 and parts[5].rstrip("\n") == path
                if seen and not ours:
                    break
                seen = seen or ours
                span = parts[0].split("-")
                mine = ours and parts[1] in ("r--p", "r-xp")
                candidate = (int(span[0], 16), int(span[1], 16)) if mine else None
            elif candidate is not None and parts[0] == "Anonymous:":
                if parts[1] == "0":
                    found.append(candidate)
                candidate = None
    return found
