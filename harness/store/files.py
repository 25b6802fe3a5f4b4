"""The `files` and `file_chunks` tables: how `harness.files` stores, finds and reads file
contents, and what other readers ask of them.

Reached as `store.files` for reads between writes, and as `uow.files` inside a unit of work
(`store.unit()`): a file's row, its chunks and whatever a change hook records of it are written
in one transaction. What goes in a row (the chunking, the line index, the write policy) is
decided in `harness.files`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.store.schema import RUN_TREE

if TYPE_CHECKING:
    from harness.store.pending import PendingRows
    from harness.store.sql import Sql

    # A read that sees the pending (written-behind) rows without writing them first.
    ReadingBehind = Callable[[], AbstractContextManager[tuple[Sql, PendingRows]]]
    # `OwnWrites.file_paths`: a namespace's paths, from a read of every (namespace, path).
    KnownPaths = Callable[[str, Callable[[], Iterable[tuple[str, str]]]], set[str] | None]

# What a `StoredFile` is opened from.
_FILE_COLUMNS = "path, content, is_text, size, blob_id, chars, lines"
_INSERT_ROWS = 200  # rows per INSERT statement in `insert_inline` and `insert_chunks`
# A blob's id ends in its chunk size (`<hex>.<characters>`): readers find a character's chunk
# by arithmetic, and blobs written before the chunks shrank (ids of bare hex) keep theirs.
LEGACY_CHUNK_CHARS = 1 << 18
# A read of a blob fetches at most this many characters' chunks a query (<= 4 MB of UTF-8),
# so that neither DuckDB nor a reader's query result ever holds a whole large blob.
READ_CHARS = 1 << 20
# A blob that a message names (`messages.full_ref`, an offloaded original) is that message's
# only copy of its text: deleting or overwriting the file leaves the blob's chunks in place.
_UNNAMED = "NOT EXISTS (SELECT 1 FROM messages m WHERE m.full_ref = file_chunks.blob_id)"
# Files a middleware wrote (matched through its events with one of two actions) for runs that
# ended before a cutoff. A file rewritten later by another run carries that run's id and is kept.
_EXPIRED_FILES = """
SELECT DISTINCT f.namespace, f.path, f.size
FROM files f
JOIN events e ON e.run_id = f.run_id AND json_extract_string(e.detail, '$.path') = f.path
JOIN runs r ON r.run_id = f.run_id
WHERE e.middleware = ? AND e.action IN (?, ?)
  AND r.ended_at IS NOT NULL AND r.ended_at < ?
ORDER BY f.path
"""


class Files:
    """Stored files and their chunks."""

    def __init__(
        self, sql: Sql, behind: ReadingBehind | None = None, known: KnownPaths | None = None
    ) -> None:
        """`known`: the paths an in-memory store knows it wrote (`clashes` asks it first)."""
        self._sql = sql
        self._behind = behind
        self._known = known

    # -- reads ---------------------------------------------------------------------------

    def row(self, namespace: str, path: str) -> dict[str, Any] | None:
        """The row a `StoredFile` opens from (`_FILE_COLUMNS`) of the file at `path` in
        `namespace`, or None."""
        rows = self._sql.query(
            f"SELECT {_FILE_COLUMNS} FROM files WHERE namespace = ? AND path = ?", [namespace, path]
        )
        return rows[0] if rows else None

    def exists(self, namespace: str, path: str) -> bool:
        return bool(
            self._sql.scalar(
                "SELECT count(*) FROM files WHERE namespace = ? AND path = ?", [namespace, path]
            )
        )

    def has_files_below(self, namespaces: tuple[str, str], prefix: str) -> bool:
        """True if a file of either namespace has a path starting with `prefix`."""
        return bool(
            self._sql.scalar(
                "SELECT count(*) FROM files WHERE namespace IN (?, ?) AND starts_with(path, ?)",
                [*namespaces, prefix],
            )
        )

    def listing(self, namespaces: tuple[str, str], prefix: str) -> list[dict[str, Any]]:
        """`path`, `size` and `modified_at` of the files of either namespace whose path starts
        with `prefix`, by path."""
        return self._sql.query(
            "SELECT path, size, modified_at FROM files WHERE namespace IN (?, ?) "
            "AND starts_with(path, ?) ORDER BY path",
            [*namespaces, prefix],
        )

    def text_files_at(
        self, namespaces: tuple[str, str], path: str, prefix: str
    ) -> list[dict[str, Any]]:
        """The rows a `StoredFile` opens from (`_FILE_COLUMNS`) of the text files of either
        namespace at `path` or under `prefix`, by path."""
        return self._sql.query(
            f"SELECT {_FILE_COLUMNS} FROM files WHERE namespace IN (?, ?) AND is_text "
            "AND (path = ? OR starts_with(path, ?)) ORDER BY path",
            [*namespaces, path, prefix],
        )

    def clashes(self, namespace: str, parents: list[str], prefix: str) -> list[str]:
        """The paths of the files of `namespace` that are one of `parents` or start with
        `prefix`, by path; files still pending (write-behind) count, without writing them
        first: an offload asks this each time, and the answer is all it needs. An in-memory
        store answers from the paths it knows (`OwnWrites.file_paths`)."""
        sql = ("SELECT path FROM files WHERE namespace = ? "
               "AND (list_contains(?::VARCHAR[], path) OR starts_with(path, ?))")  # fmt: skip
        params = [namespace, parents, prefix]
        if self._behind is None:
            return sorted(str(r["path"]) for r in self._sql.query(sql, params))
        with self._behind() as (behind, pending):
            known = None if self._known is None else self._known(
                namespace, lambda: _every_path(behind, pending))  # fmt: skip
            if known is not None:
                above = set(parents)
                return sorted(p for p in known if p in above or p.startswith(prefix))
            rows = behind.query(sql, params)
            waiting = pending.file_paths(namespace, parents, prefix)
        return sorted({*(str(r["path"]) for r in rows), *waiting})

    def paths_under_tops(self, namespaces: list[str], tops: list[str]) -> set[str]:
        """The paths of the files of `namespaces` that are one of the top-level `tops` or lie
        under one of them."""
        rows = self._sql.query(
            "SELECT path FROM files WHERE list_contains(?::VARCHAR[], namespace) "
            "AND list_has_any(?::VARCHAR[], [path, '/' || split_part(path, '/', 2)])",
            [namespaces, tops],
        )
        return {r["path"] for r in rows}

    def blob_bytes(self, blob_id: str) -> bytes:
        """A chunked file's whole content, its chunks joined in Python (`blob_pieces`)."""
        return b"".join(blob_pieces(self._sql, blob_id))

    def blob_chunks(self, blob_id: str | None, start: int, stop: int) -> list[dict[str, Any]]:
        """`chunk` and `content` of chunks `start` to `stop` (excluded) of a blob, in order."""
        return self._sql.query(
            "SELECT chunk, content FROM file_chunks WHERE blob_id = ? AND chunk >= ? "
            "AND chunk < ? ORDER BY chunk",
            [blob_id, start, stop],
        )

    def chunk_of_line(self, blob_id: str | None, line: int) -> tuple[int, int] | None:
        """(chunk, newlines before it) of the chunk where 0-based `line` starts, or None past
        the last line."""
        rows = self._sql.query(
            "SELECT chunk, newlines_before FROM file_chunks WHERE blob_id = ? "
            "AND newlines_before < ? AND newlines_before + newlines >= ? ORDER BY chunk LIMIT 1",
            [blob_id, line, line],
        )
        return (rows[0]["chunk"], rows[0]["newlines_before"]) if rows else None

    def blob_of(self, namespace: str, path: str) -> tuple[bool, str | None]:
        """Whether there is a file at `path`, and its blob id (None when stored inline)."""
        rows = self._sql.query(
            "SELECT blob_id FROM files WHERE namespace = ? AND path = ?", [namespace, path]
        )
        return (True, rows[0]["blob_id"]) if rows else (False, None)

    def content(self, namespace: str, path: str) -> tuple[bytes | None, str | None] | None:
        """(inline content, blob id) of the file at `path`, or None when there is none."""
        rows = self._sql.query(
            "SELECT content, blob_id FROM files WHERE namespace = ? AND path = ?",
            [namespace, path],
        )
        return (rows[0]["content"], rows[0]["blob_id"]) if rows else None

    def rows(self, prefix: str = "/") -> list[dict[str, Any]]:
        """The rows of the stored files whose path starts with `prefix`, in every namespace,
        by namespace and path (`content` is inline only: a chunked file has a `blob_id`)."""
        return self._sql.query(
            "SELECT * FROM files WHERE starts_with(path, ?) ORDER BY namespace, path", [prefix]
        )

    def of_run_tree(self, run_id: str) -> list[dict[str, Any]]:
        """`path`, `size` and `namespace` of the files `run_id` and the runs under it wrote."""
        return self._sql.query(
            RUN_TREE + "SELECT path, size, namespace FROM files "
            "WHERE run_id IN (SELECT run_id FROM tree) ORDER BY path",
            [run_id],
        )

    def shared_text_files(self, prefix: str) -> list[dict[str, Any]]:
        """The shared text files under `prefix` (`path`, inline `content`, `blob_id`)."""
        return self._sql.query(
            "SELECT path, content, blob_id FROM files WHERE namespace = 'shared' "
            "AND starts_with(path, ?) AND is_text ORDER BY path",
            [prefix],
        )

    def thread_file(self, thread_id: str, path: str) -> dict[str, Any] | None:
        """The row (`content`, `is_text`, `blob_id`) of the file a thread sees at `path`."""
        rows = self._sql.query(
            "SELECT content, is_text, blob_id FROM files WHERE path = ? "
            "AND namespace IN (?, 'shared')",
            [path, f"thread:{thread_id}"],
        )
        return rows[0] if rows else None

    def expired(
        self, middleware: str, actions: tuple[str, str], ended_before: datetime
    ) -> list[dict[str, Any]]:
        """`namespace`, `path` and `size` of the files `middleware` wrote (events with one of
        `actions` naming the path) in runs that ended before `ended_before`, by path."""
        return self._sql.query(_EXPIRED_FILES, [middleware, *actions, ended_before])

    def digests(self, namespace: str, prefix: str) -> list[dict[str, Any]]:
        """`path`, `size`, `blob_id` and the SHA-256 hex `digest` of the inline content of
        every file of `namespace` under `prefix` (a chunked file's inline content is empty)."""
        return self._sql.query(
            "SELECT path, size, blob_id, sha256(content) AS digest FROM files "
            "WHERE namespace = ? AND starts_with(path, ?)",
            [namespace, prefix],
        )

    # -- writes (inside a unit of work) ---------------------------------------------------

    def upsert(
        self,
        namespace: str,
        path: str,
        *,
        inline: bytes,
        is_text: bool,
        size: int,
        run_id: str | None,
        ts: datetime,
        blob_id: str | None,
        chars: int | None,
        lines: int | None,
        exists: bool = True,
    ) -> None:
        """Create or overwrite the `files` row at `path`, modified at `ts`; an overwritten row
        keeps its `created_at`. `exists=False` (the caller has just seen there is no row)
        makes it a plain insert: DuckDB's ON CONFLICT costs ~3x that on a 100 kB row."""
        conflict = (
            " ON CONFLICT (namespace, path) DO UPDATE SET content = excluded.content, "
            "is_text = excluded.is_text, size = excluded.size, run_id = excluded.run_id, "
            "modified_at = excluded.modified_at, blob_id = excluded.blob_id, "
            "chars = excluded.chars, lines = excluded.lines"
            if exists
            else ""
        )
        self._sql.execute(
            "INSERT INTO files (namespace, path, content, is_text, size, run_id, created_at, "
            "modified_at, blob_id, chars, lines) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            + conflict,
            [namespace, path, inline, is_text, size, run_id, ts, ts, blob_id, chars, lines],
        )

    def insert_chunks(self, rows: Sequence[tuple[str, int, int, int, bytes]]) -> None:
        """Insert `file_chunks` rows (blob_id, chunk, newlines_before, newlines, content) in
        bulk: one INSERT a row costs DuckDB ~0.3 ms, most of the time of a large blob's."""
        for i in range(0, len(rows), _INSERT_ROWS):
            part = rows[i : i + _INSERT_ROWS]
            self._sql.execute(
                "INSERT INTO file_chunks VALUES " + ",".join(["(?, ?, ?, ?, ?)"] * len(part)),
                [value for row in part for value in row],
            )

    def delete_chunks(self, blob_id: str) -> None:
        self._sql.execute(f"DELETE FROM file_chunks WHERE blob_id = ? AND {_UNNAMED}", [blob_id])

    def delete_blobs(self, blob_ids: list[str]) -> None:
        """Drop the chunks of blobs no message names (a finished run's journal records)."""
        self._sql.execute(
            f"DELETE FROM file_chunks WHERE list_contains(?::VARCHAR[], blob_id) AND {_UNNAMED}",
            [blob_ids],
        )

    def delete(self, namespace: str, path: str) -> None:
        """Delete the file at `path` and its chunks."""
        with self._sql.together() as sql:
            sql.execute(
                "DELETE FROM file_chunks WHERE blob_id = (SELECT blob_id FROM files "
                f"WHERE namespace = ? AND path = ?) AND {_UNNAMED}",
                [namespace, path],
            )
            sql.execute("DELETE FROM files WHERE namespace = ? AND path = ?", [namespace, path])

    def delete_many(self, namespace: str, paths: list[str]) -> dict[str, datetime]:
        """Delete the files of `namespace` at `paths` and their chunks; path -> `created_at`
        of those there were."""
        with self._sql.together() as sql:
            gone = sql.query(
                "DELETE FROM files WHERE namespace = ? AND list_contains(?::VARCHAR[], path) "
                "RETURNING path, created_at, blob_id",
                [namespace, paths],
            )
            blobs = [r["blob_id"] for r in gone if r["blob_id"] is not None]
            if blobs:
                sql.execute(
                    "DELETE FROM file_chunks WHERE list_contains(?::VARCHAR[], blob_id) "
                    f"AND {_UNNAMED}",
                    [blobs],
                )
        return {r["path"]: r["created_at"] for r in gone}

    def insert_inline(
        self, rows: Sequence[tuple[str, str, bytes, bool, int, str | None, datetime, datetime]]
    ) -> None:
        """Insert inline `files` rows (namespace, path, content, is_text, size, run_id,
        created_at, modified_at) in bulk: row-by-row upserts cost DuckDB ~30 ms each."""
        for i in range(0, len(rows), _INSERT_ROWS):
            chunk = rows[i : i + _INSERT_ROWS]
            self._sql.execute(
                "INSERT INTO files (namespace, path, content, is_text, size, run_id, "
                "created_at, modified_at) VALUES "
                + ",".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk)),
                [value for row in chunk for value in row],
            )


def _every_path(sql: Sql, pending: PendingRows) -> list[tuple[str, str]]:
    """(namespace, path) of every file, the pending ones too."""
    stored = sql.query("SELECT namespace, path FROM files")
    return [*((r["namespace"], r["path"]) for r in stored), *pending.file_keys()]


def new_blob_id(chunk_chars: int) -> str:
    """A new blob's id, naming the size of its chunks (characters, bytes for binary)."""
    return f"{uuid.uuid4().hex}.{chunk_chars}"


def chunk_chars_of(blob_id: str) -> int:
    """The characters (bytes, for binary content) in each chunk of `blob_id` but its last."""
    _, dot, size = blob_id.rpartition(".")
    return int(size) if dot else LEGACY_CHUNK_CHARS


def blob_pieces(sql: Sql, blob_id: str) -> Iterator[bytes]:
    """A blob's chunks in order, fetched READ_CHARS characters' worth a query: the whole is
    joined by the caller, never by DuckDB (a string_agg of a 160 MB original fails a 256 MB
    memory_limit). A blob's chunks are numbered from 0 without a gap (it is written once,
    `harness.files.storage`), so a query that finds fewer than it asked for found the last:
    most blobs are read in one query rather than two, the second finding nothing."""
    step, start = max(1, READ_CHARS // chunk_chars_of(blob_id)), 0
    while rows := sql.query(
        "SELECT content FROM file_chunks WHERE blob_id = ? AND chunk >= ? AND chunk < ? "
        "ORDER BY chunk",
        [blob_id, start, start + step],
    ):
        yield from (bytes(r["content"]) for r in rows)
        if len(rows) < step:
            return
        start += step
