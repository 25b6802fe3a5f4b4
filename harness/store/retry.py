"""Waiting out another process's lock on a DuckDB file: one backoff for every opener."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator


def lock_retries(timeout: float) -> Iterator[int]:
    """Attempts at something a file lock may refuse: the first at once, each next one after a
    jittered backoff (10 ms, doubling up to 0.5 s), until `timeout` seconds have passed. The
    caller returns from the loop on success; when the loop ends, it has failed for good."""
    delay = 0.01
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        yield attempt
        if time.monotonic() > deadline:
            return
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.5)
        attempt += 1


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether DuckDB refused a connection because another process holds the file."""
    return "lock" in str(exc).lower()
