"""What an in-memory store knows of its own writes, so that the reads a run makes at every start
are answered without a statement: whether the store holds memory, which folders hold no file
(the skills middleware's), and each thread's window and next transcript position; and the
paths of its files, so that an offload's check for a free path (`Files.clashes`, ~1 ms a
statement) is a look-up.

An in-memory database belongs to its `Store` alone (no other process or connection reaches it),
so what the store wrote is what it holds. The knowledge is kept only while that stays certain:
a statement the store cannot see into (`execute`, a connection or transaction handed out, a
deletion of runs) or rows that may not land (a batch inside an atomic block that could roll
back, a batch the write-behind dropped) make it forget, and the tables are read again. A file
store never remembers: another process may write it between two runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.messages import Message
from harness.store.memory import MEMORY_DIR
from harness.store.rows import row_to_message
from harness.store.schema import COLUMN_NAMES

if TYPE_CHECKING:
    from harness.store.memory import Memory
    from harness.store.messages import Messages

_MESSAGE = COLUMN_NAMES["messages"]
_MESSAGE_ID = _MESSAGE.index("message_id")
_WINDOW = COLUMN_NAMES["windows"]


@dataclass
class _Thread:
    """A thread's rows as the store wrote them, since the thread was empty."""

    # A message's row until a window holds it, then the message read from it (`_message`):
    # many leave the window (summarized, the thread's last run ended) before any reload.
    by_id: dict[str, Message | tuple[Any, ...]] = field(default_factory=dict)
    seqs: list[tuple[int, str]] = field(default_factory=list)  # (seq, message id), in order
    snapshot: tuple[int, datetime, list[str]] | None = None  # the newest windows row

    def window(self) -> list[Message]:
        """What `Messages.load_window` reads: the newest snapshot's messages, then every
        message after it (all of them when there is no snapshot)."""
        if self.snapshot is None:
            return [self._message(i) for _, i in self.seqs]
        at_seq, _, ids = self.snapshot
        # A window reload reads every message it keeps: a message made already is taken as
        # it is, without a call per message.
        by_id = self.by_id
        kept = [
            held if not isinstance(held, tuple) else self._message(i)
            for i in ids
            if (held := by_id.get(i)) is not None
        ]
        return kept + [self._message(i) for seq, i in self.seqs if seq > at_seq]

    def _message(self, message_id: str) -> Message:
        """The message as its row reads back, made once."""
        held = self.by_id[message_id]
        if isinstance(held, tuple):
            held = self.by_id[message_id] = row_to_message(dict(zip(_MESSAGE, held, strict=True)))
        return held

    def next_seq(self) -> int:
        return self.seqs[-1][0] + 1 if self.seqs else 1


class OwnWrites:
    """The memory flag and the windows of the threads an in-memory store has written."""

    def __init__(self, private: bool, *, complete: bool = False) -> None:
        """`complete`: the store starts empty and every row it holds is handed to `wrote`
        (a lazy store's, until something it cannot see into makes it forget), so a thread
        not seen yet is known to be empty."""
        self.private = private
        self.complete = complete
        self._lost: set[str] = set()  # threads whose rows stopped being a plain append
        self.memoryless = False  # known to hold no memory file nor version
        self._empty: set[str] = set()  # path prefixes known to hold no file, in any namespace
        self._threads: dict[str, _Thread] = {}
        self._paths: dict[str, set[str]] | None = None  # every file's path, by namespace

    def forget(self) -> None:
        """Something the store cannot see into may have written: read the tables again."""
        self.memoryless = False
        self.complete = False
        self._empty.clear()
        self._threads.clear()
        self._paths = None

    @contextmanager
    def writing_files(self) -> Iterator[None]:
        """Around a unit of work: it may write memory (the flag is dropped before, and after
        in case a check ran meanwhile), never a thread's rows."""
        self.memoryless = False
        self._empty.clear()
        self._paths = None
        try:
            yield
        finally:
            self.memoryless = False
            self._empty.clear()
            self._paths = None

    def holds_memory(self, memory: Memory) -> bool:
        if self.memoryless:
            return False
        held = memory.any()
        self.memoryless = not held and self.private
        return held

    def files_under(
        self, prefix: str, read: Callable[[], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """`read()`'s rows (files under `prefix`), or none without a read when the store is
        known to hold no file there; an empty answer is known from then on."""
        if prefix in self._empty:
            return []
        rows = read()
        if not rows and self.private:
            self._empty.add(prefix)
        return rows

    def file_paths(
        self, namespace: str, read: Callable[[], Iterable[tuple[str, str]]]
    ) -> set[str] | None:
        """Every file path of `namespace`, from `read()`'s (namespace, path) of every file
        (pending ones too) the first time, then kept up with the rows written; None for a file
        store."""
        if not self.private:
            return None
        paths = self._paths  # once: `forget` may drop it meanwhile, from another thread
        if paths is None:
            paths = {}
            for ns, path in read():
                paths.setdefault(ns, set()).add(path)
            self._paths = paths
        return paths.get(namespace, set())

    def load_window(self, thread_id: str, messages: Messages) -> list[Message]:
        """The thread's window from the rows written when it is known; else read, and known
        from then on if the thread turns out to be new."""
        thread = self._known(thread_id)
        if thread is not None:
            return thread.window()
        window = messages.load_window(thread_id)
        if not window and self.private and messages.is_empty(thread_id):
            self._threads[thread_id] = _Thread()
        return window

    def next_seq(self, thread_id: str, messages: Messages) -> int:
        thread = self._known(thread_id)
        return thread.next_seq() if thread is not None else messages.next_seq(thread_id)

    def _known(self, thread_id: str) -> _Thread | None:
        """The thread's rows when known (a thread not seen yet, when `complete`: none)."""
        thread = self._threads.get(thread_id)
        if thread is None and self.complete and thread_id not in self._lost:
            thread = self._threads[thread_id] = _Thread()
        return thread

    def wrote(self, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        """Take note of a batch of rows handed to the store (every column in order)."""
        if "memory" in rows or any(str(r[1]).startswith(MEMORY_DIR) for r in rows.get("files", ())):
            self.memoryless = False
        paths = self._paths
        for row in rows.get("files", ()):
            self._empty = {p for p in self._empty if not str(row[1]).startswith(p)}
            if paths is not None:
                paths.setdefault(row[0], set()).add(row[1])
        if not self._threads and not self.complete:
            return
        for row in rows.get("messages", ()):
            thread = self._known(row[0])
            if thread is None:
                continue
            message_id, seq = row[_MESSAGE_ID], int(row[1])
            if message_id in thread.by_id or (thread.seqs and seq <= thread.seqs[-1][0]):
                del self._threads[row[0]]  # not the plain append the window read assumes
                self._lost.add(row[0])
                continue
            thread.by_id[message_id] = tuple(row)
            thread.seqs.append((seq, message_id))
        for row in rows.get("windows", ()):
            thread = self._known(row[0])
            if thread is None:
                continue
            values = dict(zip(_WINDOW, row, strict=True))
            snapshot = (
                int(values["at_seq"]),
                values["created_at"],
                json.loads(values["message_ids"]),
            )
            if thread.snapshot is None or snapshot[:2] >= thread.snapshot[:2]:
                thread.snapshot = snapshot
