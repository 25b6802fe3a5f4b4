"""One session at a time per store for agents that share durable state.

Memory (`/memories/`) and skills (`/skills/`) belong to the store, not to a thread: two
sessions on one store whose agents keep memory or skills would read each other's writes mid-run
and change each other's results without a word. So such a session holds an exclusive lock on
`<store>.session.lock` from its first step to its last, and a second one is refused with one
line naming the first. The operating system drops the lock when its process ends, however it
ends (a SIGKILL too), so a killed session never blocks the next. Sessions of agents without
memory or skills take no lock: any number of them share a store, as before. (POSIX `flock`;
where there is none, as on Windows, nothing is locked.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from harness import Agent
from harness.store import now


class SessionBusy(RuntimeError):
    """Another session with memory or skills is running on the store."""


def shares_durable_state(agent: Agent) -> bool:
    """The agent keeps memory, or syncs skills from folders: state another session sees."""
    return any(
        m.name == "memory" or (m.name == "skills" and getattr(m, "sources", ()))
        for m in agent.middleware
    )


@contextmanager
def exclusive_session(store_path: str, session_id: str, agent: str) -> Iterator[None]:
    """Hold the store's session lock while the block runs; `SessionBusy` if another process
    holds it. An in-memory store needs none."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform
        yield
        return
    if store_path == ":memory:":
        yield
        return
    path = f"{store_path}.session.lock"
    with open(path, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionBusy(_refusal(store_path, lock)) from None
        try:
            lock.truncate(0)
            lock.write(json.dumps({"session_id": session_id, "agent": agent,
                                   "pid": os.getpid(), "since": now().isoformat()}))  # fmt: skip
            lock.flush()
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _refusal(store_path: str, lock: IO[str]) -> str:
    lock.seek(0)
    try:
        holder = json.loads(lock.read() or "{}")
    except ValueError:
        holder = {}
    who = (
        f"session {holder.get('session_id')} ({holder.get('agent')}, pid {holder.get('pid')}, "
        f"since {holder.get('since')})"
        if holder
        else "another session"
    )
    return (
        f"{store_path} is in use by {who}, whose agent shares memory and skills with this one; "
        "run it after that session ends, or give it another store (--db)"
    )
