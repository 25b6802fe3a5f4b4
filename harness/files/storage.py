"""How file contents sit in the store, so that reading a page costs O(page), not O(file).

A file of at most `CHUNK_CHARS` bytes is stored inline in `files.content`. A larger one is cut
into chunks of `CHUNK_CHARS` characters (bytes, for binary content) in `file_chunks`, keyed by a
`blob_id` that the `files` row names; each chunk records how many newlines precede it and how
many it holds, so the chunk where a line starts is found from the index alone. Chunks are
written one at a time from the caller's string: storing a 100 MB result never builds a second
whole copy of it in Python; one of more than CHUNKS_PER_TRANSACTION chunks is written that
many chunks a transaction. `harness.files.stored_file` reads them back.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from harness.store import Store
from harness.store.files import Files
from harness.store.pending import Rows

CHUNK_CHARS = 1 << 18
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


__all__ = [
    "CHUNK_CHARS",
    "Chunked",
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
