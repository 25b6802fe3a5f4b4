"""Versions of memory files: every change to `/memories/` recorded, in the change's own unit
of work, with its run, time and author; memory must be UTF-8 text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.files.filesystem import ChangeHook
from harness.files.paths import FileError
from harness.store import UnitOfWork
from harness.store.memory import Memory as MemoryVersions

MEMORY_PREFIX = "/memories/"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A memory file whose bytes are not text; `reason` says why."""

    reason: str


Content = str | None | Unreadable
# Called after a version is recorded: (path, version, previous content, new content).
OnVersion = Callable[[str, int, str | None, str | None], None]


def memory_text(path: str, data: bytes) -> str:
    """`data` as memory text, or `FileError` when it is not UTF-8 text (binary, or UTF-16,
    whose ASCII characters carry NUL bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileError(
            f"{path} is not UTF-8 text ({len(data):,} bytes; byte {exc.start} is "
            f"0x{data[exc.start]:02x}); memory files must be UTF-8"
        ) from None
    if "\x00" in text:
        raise FileError(
            f"{path} holds NUL bytes ({len(data):,} bytes; UTF-16 text?); memory files "
            "must be UTF-8"
        )
    return text


def latest_version(memory: MemoryVersions, path: str) -> tuple[int, str | None] | None:
    """(version, content) of the newest stored version of `path` (content None when that
    version is a deletion), or None when it has none."""
    row = memory.latest(path)
    return (row[0], None if row[2] else row[1]) if row else None


def record_version(
    memory: MemoryVersions,
    path: str,
    content: str | None,
    run_id: str | None,
    author: str,
) -> tuple[int | None, str | None]:
    """Store `content` as the next version of `path` unless it is what the newest version
    holds, in the caller's unit of work: (new version or None when unchanged, previous
    content)."""
    latest = latest_version(memory, path)
    previous = latest[1] if latest else None
    if (latest is None and content is None) or (latest is not None and previous == content):
        return None, previous
    version = (latest[0] if latest else 0) + 1
    memory.insert_version(path, version, content, run_id, author)
    return version, previous


def versioning(run_id: str | None, author: str, on_version: OnVersion | None = None) -> ChangeHook:
    """The change hook that makes a `/memories/` change and its version one unit of work, and
    refuses to replace or delete a file that is not text (its bytes would be lost)."""

    def hook(uow: UnitOfWork, path: str, old: bytes | None, new: bytes | None) -> None:
        if old is not None:
            try:
                memory_text(path, old)
            except FileError as exc:
                raise FileError(
                    f"{exc}. It is left as it is so its content is not lost: ask the user to "
                    "re-save it as UTF-8 (export_memory, fix, import_memory)"
                ) from None
        text = None if new is None else memory_text(path, new)
        version, previous = record_version(uow.memory, path, text, run_id, author)
        if version is not None and on_version is not None:
            on_version(path, version, previous, text)

    return hook
