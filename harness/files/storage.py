"""How file contents sit in the store, so that reading a page costs O(page), not O(file).

A file of at most `CHUNK_CHARS` bytes is stored inline in `files.content`. A larger one is cut
into chunks of `CHUNK_CHARS` characters (bytes, for binary content) in `file_chunks`, keyed by a
`blob_id` that the `files` row names; each chunk records how many newlines precede it and how
many it holds, so the chunk where a line starts is found from the index alone. Chunks are
written one at a time from the caller's string: storing a 100 MB result never builds a second
whole copy of it in Python.

`StoredFile` is a file opened for reading: its size and line count, the line index, and text
fetched chunk by chunk from any line and character position.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.store import Store
from harness.store.files import Files
from harness.store.pending import Rows

CHUNK_CHARS = 1 << 18
# Streaming fetches 1, 2, 4, ... chunks per query up to this: a page read costs one or two
# chunks, a scan to the end of a 100 MB file a few dozen queries (each opens the file when the
# store does not hold its connection).
_MAX_FETCH_CHUNKS = 16
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# DuckDB holds a transaction's new rows in memory until it commits, and fails the commit (or,
# past its memory_limit while checkpointing, the whole database) when they do not fit: a
# content of more chunks than this is written this many chunks (at most 16 MB) a transaction.
CHUNKS_PER_TRANSACTION = 16


@dataclass(frozen=True, slots=True)
class Chunked:
    """A large content's chunks, written ahead of its `files` row (`write_chunks`)."""

    blob_id: str
    size: int
    is_text: bool
    chars: int | None
    lines: int | None


def encode_text(text: str) -> bytes:
    """UTF-8 bytes of `text`; lone surrogates (JSON from a model can carry them) have no UTF-8
    form and become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def line_count(text: str) -> int:
    """How many lines `split_lines` makes of `text`, without splitting it."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def store_content(
    files: Files,
    namespace: str,
    path: str,
    content: str | bytes,
    run_id: str | None,
    ts: datetime,
    *,
    blob: bool = False,
    new: bool = False,
    chunked: Chunked | None = None,
) -> str | None:
    """Create or overwrite the file at `path`, inside the caller's unit of work; returns its
    blob id, None when it is stored inline. `blob=True` stores text in `file_chunks` however
    short it is, so that a message can name it (`Message.full_ref`). `new=True`: the caller
    has just seen that there is no file at `path`, so none is looked for. `chunked`: the
    content's chunks are already written (`write_chunks`); only the row is."""
    exists, old_blob = (False, None) if new else files.blob_of(namespace, path)
    if chunked is not None:
        files.upsert(
            namespace, path, inline=b"", is_text=chunked.is_text, size=chunked.size,
            run_id=run_id, ts=ts, blob_id=chunked.blob_id, chars=chunked.chars,
            lines=chunked.lines, exists=exists,
        )  # fmt: skip
        if old_blob is not None:
            files.delete_chunks(old_blob)
        return chunked.blob_id
    if isinstance(content, str):
        text: str | None = content
        inline = encode_text(content) if len(content) <= CHUNK_CHARS and not blob else None
    else:
        text = decode(content)
        inline = bytes(content)
    blob_id = chars = lines = None
    if inline is not None and len(inline) <= CHUNK_CHARS:
        size, is_text = len(inline), text is not None
    else:
        inline = b""
        blob_id = uuid.uuid4().hex
        if text is not None:
            size, chars, lines = _write_text_chunks(files, blob_id, text)
            is_text = True
        else:
            assert isinstance(content, bytes)  # text is None only for undecodable bytes
            size, is_text = _write_binary_chunks(files, blob_id, content), False
    files.upsert(
        namespace, path, inline=inline, is_text=is_text, size=size, run_id=run_id, ts=ts,
        blob_id=blob_id, chars=chars, lines=lines, exists=exists,
    )  # fmt: skip
    if old_blob is not None:
        files.delete_chunks(old_blob)
    return blob_id


def write_chunks(store: Store, content: str | bytes) -> Chunked | None:
    """Write `content`'s chunks CHUNKS_PER_TRANSACTION a transaction, ahead of its row (which
    `store_content(..., chunked=...)` writes); None when it fits in one transaction, which
    the row's own then holds. Chunks whose row is never written (the process died between)
    name no file and no message: nothing reads them."""
    if len(content) <= CHUNKS_PER_TRANSACTION * CHUNK_CHARS:
        return None
    blob_id = uuid.uuid4().hex
    text = content if isinstance(content, str) else decode(content)
    if text is not None:
        pieces = _text_chunks(text)
    else:
        assert isinstance(content, bytes)  # text is None only for undecodable bytes
        pieces = _binary_chunks(content)
    size = newlines = 0
    group: list[tuple[int, int, int, bytes]] = []
    for piece in pieces:
        group.append(piece)
        size += len(piece[3])
        newlines += piece[2]
        if len(group) == CHUNKS_PER_TRANSACTION:
            _insert_group(store, blob_id, group)
            group = []
    _insert_group(store, blob_id, group)
    if text is None:
        return Chunked(blob_id, size, False, None, None)
    return Chunked(blob_id, size, True, len(text), newlines + (0 if text.endswith("\n") else 1))


def _insert_group(store: Store, blob_id: str, group: list[tuple[int, int, int, bytes]]) -> None:
    if group:
        with store.unit() as uow:
            for index, newlines_before, newlines, data in group:
                uow.files.insert_chunk(blob_id, index, newlines_before, newlines, data)


def delete_content(files: Files, keys: list[tuple[str, str]]) -> None:
    """Delete the files at `(namespace, path)` `keys` and their chunks, in the caller's unit
    of work."""
    for namespace, path in keys:
        files.delete(namespace, path)


def replace_many(
    files: Files,
    writes: Mapping[tuple[str, str], bytes],
    deletes: Sequence[tuple[str, str]],
    run_id: str | None,
    ts: datetime,
) -> None:
    """Delete the files at `(namespace, path)` `deletes` and create or overwrite `writes`,
    inside the caller's unit of work. Small rows are replaced in bulk: row-by-row upserts cost
    DuckDB ~30 ms each. A file overwritten keeps its `created_at`."""
    keys = [*writes, *deletes]
    created: dict[tuple[str, str], datetime] = {}
    for namespace in {ns for ns, _ in keys}:
        mine = [path for ns, path in keys if ns == namespace]
        gone = files.delete_many(namespace, mine)
        created.update(((namespace, path), at) for path, at in gone.items())
    small = {key: d for key, d in writes.items() if len(d) <= CHUNK_CHARS}
    for (namespace, path), data in writes.items():
        if (namespace, path) not in small:  # chunked: written one chunk at a time
            store_content(files, namespace, path, data, run_id, ts)
    rows = [
        (namespace, path, data, decode(data) is not None, len(data), run_id,
         created.get((namespace, path), ts), ts)
        for (namespace, path), data in small.items()
    ]  # fmt: skip
    files.insert_inline(rows)


def whole_content(files: Files, inline: bytes | None, blob_id: str | None) -> bytes:
    """A file's whole content from its `files` row (`content`, `blob_id`), its chunks joined
    when it is stored in `file_chunks`: for readers of a store outside a `FileSystem`."""
    if blob_id is None:
        return bytes(inline or b"")
    return files.blob_bytes(blob_id)


def decode(data: bytes) -> str | None:
    """UTF-8 text, or None for binary content."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _write_text_chunks(files: Files, blob_id: str, text: str) -> tuple[int, int, int]:
    size = total_newlines = 0
    for index, newlines_before, newlines, data in _text_chunks(text):
        files.insert_chunk(blob_id, index, newlines_before, newlines, data)
        size += len(data)
        total_newlines += newlines
    lines = total_newlines + (0 if text.endswith("\n") else 1)
    return size, len(text), lines


def _text_chunks(text: str) -> Iterator[tuple[int, int, int, bytes]]:
    """(index, newlines before it, newlines in it, UTF-8 bytes) of each chunk of `text`,
    encoded one at a time."""
    newlines_before = 0
    for index, start in enumerate(range(0, len(text), CHUNK_CHARS)):
        piece = text[start : start + CHUNK_CHARS]
        newlines = piece.count("\n")
        yield index, newlines_before, newlines, encode_text(piece)
        newlines_before += newlines


def blob_rows(
    namespace: str, path: str, text: str, run_id: str | None, ts: datetime
) -> tuple[str, Rows] | None:
    """The rows that store `text` as a new file at `path` whose one chunk is a blob (what
    `store_content(..., blob=True, new=True)` writes), and the blob id; None when `text`
    needs more than one chunk (that is written chunk by chunk, never held twice)."""
    if len(text) > CHUNK_CHARS:
        return None
    blob_id = uuid.uuid4().hex
    chunks = [(blob_id, *chunk) for chunk in _text_chunks(text)]
    newlines = sum(c[3] for c in chunks)
    lines = newlines + (0 if text.endswith("\n") else 1)
    size = sum(len(c[4]) for c in chunks)
    row = (namespace, path, b"", True, size, run_id, ts, ts, blob_id, len(text), lines)
    return blob_id, {"files": [row], "file_chunks": chunks}


def _write_binary_chunks(files: Files, blob_id: str, data: bytes) -> int:
    for index, _, _, piece in _binary_chunks(data):
        files.insert_chunk(blob_id, index, 0, 0, piece)
    return len(data)


def _binary_chunks(data: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(index, 0, 0, bytes) of each chunk of binary `data`: no line index."""
    for index, start in enumerate(range(0, len(data), CHUNK_CHARS)):
        yield index, 0, 0, data[start : start + CHUNK_CHARS]


@dataclass(slots=True)
class StoredFile:
    """One file opened for reading. Text files only use the text methods."""

    store: Store
    path: str
    size: int
    is_text: bool
    blob_id: str | None
    inline: bytes
    chars: int
    lines: int
    _cache: dict[int, str]

    @classmethod
    def from_row(cls, store: Store, row: dict[str, Any]) -> StoredFile:
        """From a `files` row with path, content, is_text, size, blob_id, chars, lines."""
        inline = bytes(row["content"]) if row["content"] is not None else b""
        chars, lines = row["chars"], row["lines"]
        if row["blob_id"] is None and row["is_text"]:
            text = inline.decode("utf-8")
            chars, lines = len(text), line_count(text)
            return cls(store, row["path"], row["size"], True, None, inline, chars, lines,
                       {0: text})  # fmt: skip
        return cls(store, row["path"], row["size"], bool(row["is_text"]), row["blob_id"],
                   inline, chars or 0, lines or 0, {})  # fmt: skip

    @property
    def n_chunks(self) -> int:
        if self.blob_id is None:
            return 1
        unit = self.chars if self.is_text else self.size
        return -(-unit // CHUNK_CHARS)

    def read_bytes(self) -> bytes:
        if self.blob_id is None:
            return self.inline
        return self.store.files.blob_bytes(self.blob_id)

    def chunk(self, index: int, ahead: int = 1) -> str:
        """Text of chunk `index`; when it must be fetched, `ahead - 1` following chunks come
        with it."""
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        rows = self.store.files.blob_chunks(self.blob_id, index, index + ahead)
        if not rows:  # overwritten or deleted since it was opened
            raise FileNotFoundError(f"{self.path} changed while it was being read: read it again")
        self._cache.clear()
        for r in rows:
            self._cache[r["chunk"]] = bytes(r["content"]).decode("utf-8")
        return self._cache[index]

    def text_from(self, pos: int) -> Iterator[str]:
        """The text from character `pos` to the end, in pieces of at most a chunk."""
        if self.blob_id is None:
            text = self._cache[0]
            if pos < len(text):
                yield text[pos:] if pos else text
            return
        ahead = 1
        for index in range(pos // CHUNK_CHARS, self.n_chunks):
            if index not in self._cache:
                piece = self.chunk(index, ahead)
                ahead = min(2 * ahead, _MAX_FETCH_CHUNKS)
            else:
                piece = self._cache[index]
            offset = pos - index * CHUNK_CHARS
            yield piece[offset:] if offset > 0 else piece

    def fragments(self, line: int, col: int, piece: int) -> Iterator[tuple[int, int, str, bool]]:
        """`(line, column, text, ends_line)` from character `col` of 0-based `line` to the end
        of the file. A line longer than `piece` characters comes in fragments that end at
        multiples of `piece` in the line, so memory stays bounded; `split_lines` semantics (a
        trailing "\\r" dropped, no empty line after a final newline)."""
        buf = ""
        for chunk in self.text_from(self.line_start(line) + col):
            at = 0
            while (nl := chunk.find("\n", at)) >= 0:
                text = buf + chunk[at:nl] if buf else chunk[at:nl]
                if text.endswith("\r"):
                    text = text[:-1]
                if col == 0 and len(text) <= piece:
                    yield line, 0, text, True
                else:
                    yield from _split(line, col, text, piece)
                line, col, buf, at = line + 1, 0, "", nl + 1
            buf += chunk[at:] if at else chunk
            # Keep at least one character back: it may be a "\r" that ends the line.
            while len(buf) > (take := (col // piece + 1) * piece - col):
                yield line, col, buf[:take], False
                buf, col = buf[take:], col + take
        if buf:
            yield from _split(line, col, buf.removesuffix("\r"), piece)

    def line_start(self, line: int) -> int:
        """Character position where 0-based `line` starts (`chars` past the last line)."""
        if line == 0:
            return 0
        if self.blob_id is None:
            return _after_newline(self._cache[0], line)
        found = self.store.files.chunk_of_line(self.blob_id, line)
        if found is None:
            return self.chars
        index, newlines_before = found
        return index * CHUNK_CHARS + _after_newline(self.chunk(index), line - newlines_before)

    def line_length(self, line: int) -> int:
        """Characters in 0-based `line`, a trailing "\\r" excluded as `split_lines` drops it."""
        start = self.line_start(line)
        end = self.line_start(line + 1)
        if end > start and self._char(end - 1) == "\n":
            end -= 1
        if end > start and self._char(end - 1) == "\r":
            end -= 1
        return end - start

    def _char(self, pos: int) -> str:
        if self.blob_id is None:
            return self._cache[0][pos]
        return self.chunk(pos // CHUNK_CHARS)[pos % CHUNK_CHARS]


def _split(line: int, col: int, text: str, piece: int) -> Iterator[tuple[int, int, str, bool]]:
    """The rest of a line, starting at `col`, in fragments ending at multiples of `piece`."""
    while len(text) > (take := (col // piece + 1) * piece - col):
        yield line, col, text[:take], False
        text, col = text[take:], col + take
    yield line, col, text, True


def _after_newline(text: str, n: int) -> int:
    """Position just after the `n`-th newline of `text` (n >= 1), or its length if it has
    fewer."""
    pos = -1
    for _ in range(n):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            return len(text)
    return pos + 1


__all__ = [
    "CHUNK_CHARS",
    "Chunked",
    "StoredFile",
    "blob_rows",
    "decode",
    "delete_content",
    "encode_text",
    "line_count",
    "replace_many",
    "store_content",
    "whole_content",
    "write_chunks",
]
