"""A stored file opened for reading: its size and line count, the line index, and text
fetched chunk by chunk from any line and character position, so that reading a page costs
O(page), not O(file) (see `harness.files.storage` for how contents are chunked)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.files import storage
from harness.store import Store
from harness.store.files import READ_CHARS, chunk_chars_of


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
    # Characters (bytes, for binary content) a chunk holds: a blob's id names them.
    chunk_chars: int = 0

    @classmethod
    def from_row(cls, store: Store, row: dict[str, Any]) -> StoredFile:
        """From a `files` row with path, content, is_text, size, blob_id, chars, lines."""
        inline = bytes(row["content"]) if row["content"] is not None else b""
        chars, lines = row["chars"], row["lines"]
        if row["blob_id"] is None and row["is_text"]:
            text = inline.decode("utf-8")
            chars, lines = len(text), storage.line_count(text)
            return cls(store, row["path"], row["size"], True, None, inline, chars, lines,
                       {0: text})  # fmt: skip
        return cls(store, row["path"], row["size"], bool(row["is_text"]), row["blob_id"],
                   inline, chars or 0, lines or 0, {},
                   chunk_chars_of(row["blob_id"]) if row["blob_id"] else 0)  # fmt: skip

    @property
    def n_chunks(self) -> int:
        if self.blob_id is None:
            return 1
        unit = self.chars if self.is_text else self.size
        return -(-unit // self.chunk_chars)

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
        """The text from character `pos` to the end, in pieces of at most a chunk. Chunks
        are fetched 1, 2, 4, ... a query up to READ_CHARS characters' worth: a page read
        costs one or two, a scan to the end of a 300 MB file a few hundred queries."""
        if self.blob_id is None:
            text = self._cache[0]
            if pos < len(text):
                yield text[pos:] if pos else text
            return
        ahead, most = 1, max(1, READ_CHARS // self.chunk_chars)
        for index in range(pos // self.chunk_chars, self.n_chunks):
            if index not in self._cache:
                piece = self.chunk(index, ahead)
                ahead = min(2 * ahead, most)
            else:
                piece = self._cache[index]
            offset = pos - index * self.chunk_chars
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
        return index * self.chunk_chars + _after_newline(self.chunk(index), line - newlines_before)

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
        return self.chunk(pos // self.chunk_chars)[pos % self.chunk_chars]


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


__all__ = ["StoredFile"]
