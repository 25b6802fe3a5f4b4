"""Memory files as the user sees them and their versions, for the memory tests."""

from __future__ import annotations

from harness import Store
from harness.files.filesystem import FileSystem

AGENTS = "/memories/AGENTS.md"


def as_user(store: Store) -> FileSystem:
    """Memory files as the user edits them, outside any run (seen at the next run start)."""
    return FileSystem(store, "outside", grants=["/memories/"])


def versions(store: Store, path: str = AGENTS) -> list[tuple[int, str, str]]:
    rows = store.memory.versions(path)
    return [(r["version"], r["author"], r["content"]) for r in rows]
