"""The `memory` table: every version of every memory file, a deletion included.

A version is written inside the unit of work of the file change it records (`uow.memory`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.store.schema import now

if TYPE_CHECKING:
    from harness.store.sql import Sql

# Where memory files live (`harness.files.paths.DURABLE_PREFIXES`).
MEMORY_DIR = "/memories/"


class Memory:
    """Memory file versions."""

    def __init__(self, sql: Sql) -> None:
        self._sql = sql

    def any(self) -> bool:
        """Whether any memory version, or any file under `/memories/` (in any namespace), is
        stored."""
        return bool(
            self._sql.scalar(
                "SELECT EXISTS (SELECT 1 FROM memory) "
                "OR EXISTS (SELECT 1 FROM files WHERE starts_with(path, ?))",
                [MEMORY_DIR],
            )
        )

    def latest(self, path: str) -> tuple[int, str, bool] | None:
        """(version, content, deleted) of the newest stored version of memory file `path`, or
        None when it has none."""
        rows = self._sql.query(
            "SELECT version, content, deleted FROM memory WHERE path = ? "
            "ORDER BY version DESC LIMIT 1",
            [path],
        )
        return (rows[0]["version"], rows[0]["content"], rows[0]["deleted"]) if rows else None

    def insert_version(
        self, path: str, version: int, content: str | None, run_id: str | None, author: str
    ) -> None:
        """Store `version` of memory file `path`; `content` None records a deletion (empty
        content, `deleted`)."""
        self._sql.execute(
            "INSERT INTO memory (path, version, content, run_id, author, created_at, deleted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [path, version, content or "", run_id, author, now(), content is None],
        )

    def at(self, when: datetime) -> list[dict[str, str]]:
        """Memory files (`path`, `content`) as they stood just before `when`."""
        rows = self._sql.query(
            "SELECT path, content, deleted FROM memory m WHERE created_at < ? AND version = "
            "(SELECT max(version) FROM memory x WHERE x.path = m.path AND x.created_at < ?) "
            "ORDER BY path",
            [when, when],
        )
        return [{"path": r["path"], "content": r["content"]} for r in rows if not r["deleted"]]

    def versions(self, path: str | None = None) -> list[dict[str, Any]]:
        """Every stored version of the memory files (or of one path), oldest first."""
        where, params = ("WHERE path = ? ", [path]) if path is not None else ("", [])
        return self._sql.query(f"SELECT * FROM memory {where}ORDER BY version, path", params)
