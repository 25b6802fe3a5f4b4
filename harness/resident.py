"""Resident pages of a loaded library, let go once they are read and not needed again.

A native library's pages that only a start-up reads (bpe-openai's compiled-in vocabularies,
DuckDB's registration of every function) stay in the process's resident memory for its life.
`let_go` drops them (MADV_DONTNEED) from mappings of the library's file that are read-only,
private and hold nothing but the file's own pages (no page copied on write, such as relocated
data): the kernel reads a dropped page back from the file (the page cache, as a rule) if it is
touched again, so nothing changes but the resident size. Each call reads /proc/self/smaps
(~4-6 ms). Linux only; anything unexpected leaves the pages be.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Collection

log = logging.getLogger(__name__)

_MADV_DONTNEED = 4
READ_ONLY = ("r--p",)
READ_ONLY_OR_CODE = ("r--p", "r-xp")


def let_go(path: str, perms: Collection[str] = READ_ONLY) -> None:
    """Drop the resident pages of the library at `path` held by its clean mappings whose
    permissions are one of `perms` (see the module)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start, stop in clean_mappings(os.path.realpath(path), perms):
            libc.madvise(start, stop - start, _MADV_DONTNEED)
    except (OSError, AttributeError, ValueError, IndexError, KeyError):
        log.debug("the pages of %s stay resident", path, exc_info=True)


def clean_mappings(path: str, perms: Collection[str] = READ_ONLY) -> list[tuple[int, int]]:
    """(start, stop) of the mappings of the file at `path` whose permissions are one of
    `perms`, private with no anonymous (copied-on-write) page, from /proc/self/smaps."""
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
                mine = ours and parts[1] in perms
                candidate = (int(span[0], 16), int(span[1], 16)) if mine else None
            elif candidate is not None and parts[0] == "Anonymous:":
                if parts[1] == "0":
                    found.append(candidate)
                candidate = None
    return found
