"""`new_id` draws its random bytes in blocks, and forked or threaded callers never share ids."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from harness import messages
from harness.messages import ID_BLOCK, new_id


def test_random_bytes_are_drawn_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def urandom(n: int) -> bytes:
        calls.append(n)
        return b"\xff" * n

    monkeypatch.setattr(messages.os, "urandom", urandom)
    messages._ids.clear()
    ids = [new_id("x") for _ in range(ID_BLOCK + 1)]
    assert len(calls) == 2  # one block, then the next for the id past it
    head = uuid.UUID(ids[0].split("_")[1] + "0" * 12)
    assert head.version == 4 and head.variant == uuid.RFC_4122
    messages._ids.clear()  # the rest of the all-ones block must not reach other tests


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_repeats_the_parents_ids() -> None:
    new_id()  # the pool holds ids the child inherits
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids, then leave without running the parent's code
        os.close(read)
        os.write(write, " ".join(new_id() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {new_id() for _ in range(5)}
    assert len(child) == 5 and not child & parent


def test_threads_drawing_at_once_get_distinct_ids() -> None:
    got: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        out.extend(new_id() for _ in range(3 * ID_BLOCK))

    threads = [threading.Thread(target=draw, args=(out,)) for out in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in got for i in out]
    assert len(set(every)) == len(every)
