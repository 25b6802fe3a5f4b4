"""`files`, `file_chunks` and `memory` of a lazy store answered and written from its rows
(`harness.store.lazy_rows`) while it is live; SQL (which materializes the store) otherwise.

Each method answers exactly what its SQL in `harness.store.files` / `harness.store.memory`
would; where that SQL leaves an order open (two rows tied on its ORDER BY) it runs instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.errors import StoreError
from harness.store.files import READ_CHARS, Files, chunk_chars_of
from harness.store.lazy_rows import duplicate, locked
from harness.store.memory import MEMORY_DIR, Memory
from harness.store.schema import now

if TYPE_CHECKING:
    from harness.store.files import ReadingBehind
    from harness.store.lazy_rows import LazyRows
    from harness.store.sql import Sql

_FILE_COLUMNS = ("path", "content", "is_text", "size", "blob_id", "chars", "lines")
_ALL_COLUMNS = ("namespace", "path", "content", "is_text", "size", "run_id", "created_at",
                "modified_at", "blob_id", "chars", "lines")  # fmt: skip


def _opened(row: tuple[Any, ...]) -> dict[str, Any]:
    """What `SELECT path, content, is_text, size, blob_id, chars, lines` gives of a row."""
    return {"path": row[1], "content": row[2], "is_text": row[3], "size": row[4],
            "blob_id": row[8], "chars": row[9], "lines": row[10]}  # fmt: skip


def _tied(rows: Sequence[tuple[Any, ...]]) -> bool:
    """Whether two of `rows` (namespace, path, ...) share a path: SQL orders them either way."""
    return len({r[1] for r in rows}) < len(rows)


class LazyFiles(Files):
    """`Files` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql, behind: ReadingBehind | None = None) -> None:
        super().__init__(sql, behind)
        self._rows = rows

    def _where(self, namespaces: Sequence[str], keep: Any) -> list[tuple[Any, ...]]:
        return [r for (ns, path), r in self._rows.files.items() if ns in namespaces and keep(r)]

    # -- reads ---------------------------------------------------------------------------

    @locked
    def row(self, namespace: str, path: str) -> dict[str, Any] | None:
        if not self._rows.live:
            return super().row(namespace, path)
        found = self._rows.files.get((namespace, path))
        return _opened(found) if found is not None else None

    @locked
    def exists(self, namespace: str, path: str) -> bool:
        if not self._rows.live:
            return super().exists(namespace, path)
        return (namespace, path) in self._rows.files

    @locked
    def has_files_below(self, namespaces: tuple[str, str], prefix: str) -> bool:
        if not self._rows.live:
            return super().has_files_below(namespaces, prefix)
        return bool(self._where(namespaces, lambda r: r[1].startswith(prefix)))

    @locked
    def listing(self, namespaces: tuple[str, str], prefix: str) -> list[dict[str, Any]]:
        found = (
            self._where(namespaces, lambda r: r[1].startswith(prefix)) if self._rows.live else []
        )
        if not self._rows.live or _tied(found):
            return super().listing(namespaces, prefix)
        return [{"path": r[1], "size": r[4], "modified_at": r[7]}
                for r in sorted(found, key=lambda r: r[1])]  # fmt: skip

    @locked
    def text_files_at(
        self, namespaces: tuple[str, str], path: str, prefix: str
    ) -> list[dict[str, Any]]:
        found = (
            self._where(namespaces, lambda r: r[3] and (r[1] == path or r[1].startswith(prefix)))
            if self._rows.live
            else []
        )
        if not self._rows.live or _tied(found):
            return super().text_files_at(namespaces, path, prefix)
        return [_opened(r) for r in sorted(found, key=lambda r: r[1])]

    @locked
    def clashes(self, namespace: str, parents: list[str], prefix: str) -> list[str]:
        if not self._rows.live:
            return super().clashes(namespace, parents, prefix)
        above = set(parents)
        found = self._where((namespace,), lambda r: r[1] in above or r[1].startswith(prefix))
        return sorted({str(r[1]) for r in found})

    @locked
    def paths_under_tops(self, namespaces: list[str], tops: list[str]) -> set[str]:
        if not self._rows.live:
            return super().paths_under_tops(namespaces, tops)
        wanted = set(tops)

        def under(r: tuple[Any, ...]) -> bool:
            parts = r[1].split("/")
            return r[1] in wanted or "/" + (parts[1] if len(parts) > 1 else "") in wanted

        return {r[1] for r in self._where(namespaces, under)}

    @locked
    def blob_bytes(self, blob_id: str) -> bytes:
        if not self._rows.live:
            return super().blob_bytes(blob_id)
        return b"".join(self._pieces(blob_id))

    def _pieces(self, blob_id: str) -> Iterator[bytes]:
        """`blob_pieces`: a blob's chunks from 0 on, a query's worth at a time, up to the
        first query that finds fewer than it asked for."""
        chunks = self._rows.chunks.get(blob_id, {})
        step, start = max(1, READ_CHARS // chunk_chars_of(blob_id)), 0
        while found := [chunks[i] for i in sorted(chunks) if start <= i < start + step]:
            yield from (r[4] for r in found)
            if len(found) < step:
                return
            start += step

    @locked
    def blob_chunks(self, blob_id: str | None, start: int, stop: int) -> list[dict[str, Any]]:
        if not self._rows.live:
            return super().blob_chunks(blob_id, start, stop)
        chunks = self._rows.chunks.get(blob_id or "", {}) if blob_id is not None else {}
        return [{"chunk": i, "content": chunks[i][4]} for i in sorted(chunks) if start <= i < stop]

    @locked
    def chunk_of_line(self, blob_id: str | None, line: int) -> tuple[int, int] | None:
        if not self._rows.live:
            return super().chunk_of_line(blob_id, line)
        chunks = self._rows.chunks.get(blob_id, {}) if blob_id is not None else {}
        for i in sorted(chunks):
            before, newlines = chunks[i][2], chunks[i][3]
            if before < line <= before + newlines:
                return i, before
        return None

    @locked
    def blob_of(self, namespace: str, path: str) -> tuple[bool, str | None]:
        if not self._rows.live:
            return super().blob_of(namespace, path)
        found = self._rows.files.get((namespace, path))
        return (True, found[8]) if found is not None else (False, None)

    @locked
    def content(self, namespace: str, path: str) -> tuple[bytes | None, str | None] | None:
        if not self._rows.live:
            return super().content(namespace, path)
        found = self._rows.files.get((namespace, path))
        return (found[2], found[8]) if found is not None else None

    @locked
    def rows(self, prefix: str = "/") -> list[dict[str, Any]]:
        if not self._rows.live:
            return super().rows(prefix)
        found = sorted((k, r) for k, r in self._rows.files.items() if r[1].startswith(prefix))
        return [dict(zip(_ALL_COLUMNS, r, strict=True)) for _, r in found]

    @locked
    def thread_file(self, thread_id: str, path: str) -> dict[str, Any] | None:
        files = self._rows.files
        found = [files[k] for k in ((f"thread:{thread_id}", path), ("shared", path)) if k in files]
        if not self._rows.live or len(found) > 1:
            return super().thread_file(thread_id, path)
        return (
            {"content": found[0][2], "is_text": found[0][3], "blob_id": found[0][8]}
            if found
            else None
        )

    @locked
    def digests(self, namespace: str, prefix: str) -> list[dict[str, Any]]:
        if not self._rows.live:
            return super().digests(namespace, prefix)
        return [
            {"path": r[1], "size": r[4], "blob_id": r[8],
             "digest": hashlib.sha256(r[2]).hexdigest()}
            for r in self._where((namespace,), lambda r: r[1].startswith(prefix))
        ]  # fmt: skip

    # -- writes --------------------------------------------------------------------------

    @locked
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
        if not self._rows.live:
            return super().upsert(
                namespace, path, inline=inline, is_text=is_text, size=size, run_id=run_id,
                ts=ts, blob_id=blob_id, chars=chars, lines=lines, exists=exists,
            )  # fmt: skip
        old = self._rows.files.get((namespace, path))
        if old is not None and not exists:
            raise duplicate("files", (namespace, path))
        created = old[6] if old is not None else ts
        self._rows.files[(namespace, path)] = (
            namespace, path, bytes(inline), is_text, size, run_id, created, ts, blob_id, chars,
            lines,
        )  # fmt: skip
        return None

    @locked
    def insert_chunks(self, rows: Sequence[tuple[str, int, int, int, bytes]]) -> None:
        if not self._rows.live:
            return super().insert_chunks(rows)
        self._rows.add({"file_chunks": list(rows)})
        return None

    @locked
    def delete_chunks(self, blob_id: str) -> None:
        if not self._rows.live:
            return super().delete_chunks(blob_id)
        self._drop_blob(blob_id)
        return None

    def _drop_blob(self, blob_id: str | None) -> None:
        if blob_id is not None and blob_id not in self._rows.named:
            self._rows.chunks.pop(blob_id, None)

    @locked
    def delete_blobs(self, blob_ids: list[str]) -> None:
        if not self._rows.live:
            return super().delete_blobs(blob_ids)
        for blob_id in blob_ids:
            self._drop_blob(blob_id)
        return None

    @locked
    def delete(self, namespace: str, path: str) -> None:
        if not self._rows.live:
            return super().delete(namespace, path)
        gone = self._rows.files.pop((namespace, path), None)
        self._drop_blob(gone[8] if gone is not None else None)
        return None

    @locked
    def delete_many(self, namespace: str, paths: list[str]) -> dict[str, datetime]:
        if not self._rows.live:
            return super().delete_many(namespace, paths)
        created: dict[str, datetime] = {}
        for path in dict.fromkeys(paths):
            gone = self._rows.files.pop((namespace, path), None)
            if gone is not None:
                created[path] = gone[6]
                self._drop_blob(gone[8])
        return created

    @locked
    def insert_inline(
        self, rows: Sequence[tuple[str, str, bytes, bool, int, str | None, datetime, datetime]]
    ) -> None:
        if not self._rows.live:
            return super().insert_inline(rows)
        self._rows.add({"files": [(*row, None, None, None) for row in rows]})
        return None


class LazyMemory(Memory):
    """`Memory` over a lazy store's rows while they are live."""

    def __init__(self, rows: LazyRows, sql: Sql) -> None:
        super().__init__(sql)
        self._rows = rows

    @locked
    def any(self) -> bool:
        if not self._rows.live:
            return super().any()
        return bool(self._rows.memory) or any(
            path.startswith(MEMORY_DIR) for _, path in self._rows.files
        )

    @locked
    def latest(self, path: str) -> tuple[int, str, bool] | None:
        if not self._rows.live:
            return super().latest(path)
        versions = [v for p, v in self._rows.memory if p == path]
        if not versions:
            return None
        row = self._rows.memory[(path, max(versions))]
        return row[1], row[2], row[6]

    @locked
    def insert_version(
        self, path: str, version: int, content: str | None, run_id: str | None, author: str
    ) -> None:
        if not self._rows.live:
            return super().insert_version(path, version, content, run_id, author)
        self._rows.add_memory(
            (path, version, content or "", run_id, author, now(), content is None)
        )
        return None


class UnitSql:
    """The SQL of a lazy store's unit of work: none. A unit's changes are kept in Python and
    put back if it raises; a statement would land outside that."""

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        raise _refused(sql)

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        raise _refused(sql)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        raise _refused(sql)

    def together(self) -> AbstractContextManager[Sql]:
        raise _refused("a transaction")


def _refused(sql: str) -> StoreError:
    return StoreError(
        "a unit of work of a lazy in-memory store answers from its rows and runs no SQL "
        f"(asked: {sql.strip()[:80]!r}); use the store outside the unit"
    )
