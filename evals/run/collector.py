"""The garbage collector while replays run. A replay allocates millions of small objects, few of
them in reference cycles, and what outlives it (the process-wide memos of tokens, normalised
texts and the reader's searches, the scenario files read) lives as long as the process. Under
the default thresholds (700, 10, 10) the collector takes ~7% of a suite's CPU, much of it in
full passes that walk that long-lived heap again and again. While replays run it passes less
often (`THRESHOLDS`), and what lived through a replay is moved out of its sight (`settle`), so
a full pass walks only what is new since.

A process that ends with a large heap also pays a last full collection of all of it while the
interpreter tears down (~0.3 s after a suite), to free what the operating system frees anyway:
`freeze_at_exit` leaves that heap frozen once every other exit hook has run. Nothing is lost:
the exit hooks (temporary folders removed, stores flushed) run as before, and an object only
reachable through a cycle at exit was never promised its finaliser (and the stores survive a
killed process, tests/**/test_*crash*, which skips far more than this)."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young passes every 10,000 net allocations instead of 700, so a full pass comes ~14x less
# often. On the 101-trace suite at --workers 1 the collector took 0.97-1.04 s under the
# defaults, 0.74-0.78 s under these alone, and 0.45-0.6 s with a `settle` after each replay.
THRESHOLDS = (10_000, 10, 10)

_exit_hooked = False


@contextmanager
def replaying() -> Iterator[None]:
    """`THRESHOLDS` in this process while replays run, and what `settle` froze thawed again
    after them: a caller that runs replays in its own process (a test, a notebook calling the
    command line's `main`) gets its collector back as it was. A caller that had frozen objects
    of its own before is left frozen (its `gc.freeze` was not ours to undo)."""
    previous = gc.get_threshold()
    thaw = gc.get_freeze_count() == 0
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if thaw:
            gc.unfreeze()


def settle() -> None:
    """After a replay: collect what it left in cycles (a pass over what is new since the last
    `settle`, the rest being frozen), then freeze what survived, so no later pass walks it.
    Freezing without the collection would be cheaper still, but what it froze in cycles would
    never be freed: +90 MB over the 101-trace suite, growing with the suite."""
    gc.collect()
    gc.freeze()


def use_in_worker() -> None:
    """A started worker process's collector for the rest of its life: `THRESHOLDS`, and its
    heap frozen at exit (`freeze_at_exit`), so the pool that waits for it to end waits less."""
    gc.set_threshold(*THRESHOLDS)
    freeze_at_exit()


def freeze_at_exit() -> None:
    """Freeze the heap when this process exits, after the exit hooks registered after this
    call (which run first) and before the interpreter's last collections. Once per process."""
    global _exit_hooked
    if not _exit_hooked:
        _exit_hooked = True
        atexit.register(gc.freeze)


__all__ = ["THRESHOLDS", "freeze_at_exit", "replaying", "settle", "use_in_worker"]
