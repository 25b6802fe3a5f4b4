"""The writers' turn on a store file: a writer that finds the file locked holds a shared
`flock` on `<store>.writers` while it retries the open, so that readers (`ctxlab sql`) wait
and stop queries that would keep it out (see `harness.store.access`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from harness.errors import StoreError

try:
    import fcntl
except ImportError:  # not POSIX: readers and writers fall back to DuckDB's lock retries
    fcntl = None  # type: ignore[assignment]

TURN_SUFFIX = ".writers"


@contextmanager
def writer_turn(path: str) -> Iterator[None]:
    """Held by a writer while it retries opening `path`: readers wait, and stop queries that
    would keep it out. A shared lock: writers never wait for each other here (only DuckDB
    orders them). The pid of the last writer to come is written into the file for readers'
    messages."""
    if fcntl is None or path == ":memory:":
        yield
        return
    try:
        fd = os.open(path + TURN_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"cannot open store {path}: {path + TURN_SUFFIX}: {exc}") from exc
    try:
        # Blocks only while a reader checks for writers (an instant: see waiting_writer).
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.pwrite(fd, str(os.getpid()).encode().ljust(12), 0)
        yield
    finally:
        os.close(fd)  # releases the flock


def waiting_writer(path: str) -> int | None:
    """The pid of a writer waiting to open `path` (0 if it is not known), or None."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path + TURN_SUFFIX, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no writer has had to wait for this file yet
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 12, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
