"""How file contents sit in the store, so that reading a page costs O(page), not O(file).

A file of at most `INLINE_LIMIT` bytes is stored inline in `files.content`. A larger one is cut
into chunks of `CHUNK_CHARS` characters (bytes, for binary content) in `file_chunks`, keyed by a
`blob_id` that the `files` row names and that names the chunk size (`new_blob_id`); each chunk
records how many newlines precede it and how many it holds, so the chunk where a line starts is
found from the index alone. Chunks are encoded one at a time from the caller's string: storing
a 100 MB result never builds a second whole copy of it in Python; one of more than
`TRANSACTION_BYTES` is written that much a transaction. `harness.files.stored_file` reads them
back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from harness.errors import StoreError
from harness.store import Store
from harness.store.files import Files, new_blob_id
from harness.store.pending import Rows
from harness.store.write_behind import is_io_error

INLINE_LIMIT = 1 << 18
# DuckDB reads a column 2,048 rows at a time holding all their values, when a query scans it
# and when a checkpoint rewrites a table's last segment, so 2,048 chunks must fit well under
# its memory_limit: 4,096 characters are at most 16 KB (32 MB for 2,048, 8 MB of ASCII).
# Chunks of 256 Ki characters killed a store once ~1.4 times its limit of them was written.
CHUNK_CHARS = 1 << 12
# DuckDB holds a transaction's new rows in memory until it commits, and fails the commit (or,
# past its memory_limit while checkpointing, the whole database) when they do not fit: a
# content larger than this is written this many bytes (and one chunk) a transaction.
TRANSACTION_BYTES = 4 << 20
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_Chunk = tuple[int, int, int, bytes]  # index, newlines before it, newlines in it, content


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
        inline = encode_text(content) if len(content) <= INLINE_LIMIT and not blob else None
    else:
        text = decode(content)
        inline = bytes(content)
    blob_id = chars = lines = None
    if inline is not None and len(inline) <= INLINE_LIMIT:
        size, is_text = len(inline), text is not None
    else:
        inline = b""
        blob_id = new_blob_id(CHUNK_CHARS)
        if text is not None:
            size, newlines = _insert_all(files, blob_id, _text_chunks(text, CHUNK_CHARS))
            is_text, chars, lines = True, len(text), _lines(text, newlines)
        else:
            assert isinstance(content, bytes)  # text is None only for undecodable bytes
            size, _ = _insert_all(files, blob_id, _binary_chunks(content, CHUNK_CHARS))
            is_text = False
    files.upsert(
        namespace, path, inline=inline, is_text=is_text, size=size, run_id=run_id, ts=ts,
        blob_id=blob_id, chars=chars, lines=lines, exists=exists,
    )  # fmt: skip
    if old_blob is not None:
        files.delete_chunks(old_blob)
    return blob_id


def write_chunks(store: Store, content: str | bytes) -> Chunked | None:
    """Write `content`'s chunks TRANSACTION_BYTES a transaction, ahead of its row (which
    `store_content(..., chunked=...)` writes); None when it fits in one transaction (a
    character is at most 4 bytes), which the row's own then holds. Chunks whose row is never
    written (the process died between) name no file and no message: nothing reads them."""
    if len(content) * (4 if isinstance(content, str) else 1) <= TRANSACTION_BYTES:
        return None
    blob_id = new_blob_id(CHUNK_CHARS)
    text = content if isinstance(content, str) else decode(content)
    if text is not None:
        pieces = _text_chunks(text, CHUNK_CHARS)
    else:
        assert isinstance(content, bytes)  # text is None only for undecodable bytes
        pieces = _binary_chunks(content, CHUNK_CHARS)
    size = newlines = group_bytes = 0
    group: list[_Chunk] = []
    for piece in pieces:
        group.append(piece)
        group_bytes += len(piece[3])
        if group_bytes >= TRANSACTION_BYTES:
            size, newlines = _add(_insert_group(store, blob_id, group), size, newlines)
            group, group_bytes = [], 0
    size, newlines = _add(_insert_group(store, blob_id, group), size, newlines)
    if text is None:
        return Chunked(blob_id, size, False, None, None)
    return Chunked(blob_id, size, True, len(text), _lines(text, newlines))


def _insert_group(store: Store, blob_id: str, group: list[_Chunk]) -> tuple[int, int]:
    if not group:
        return 0, 0
    with store.unit() as uow:
        return _insert_all(uow.files, blob_id, group)


def _insert_all(files: Files, blob_id: str, pieces: Iterable[_Chunk]) -> tuple[int, int]:
    """Insert `pieces` as chunks of `blob_id`, a few hundred an INSERT, encoding no more of
    them ahead; (bytes, newlines) written."""
    size = newlines = 0
    rows: list[tuple[str, int, int, int, bytes]] = []
    for index, newlines_before, count, data in pieces:
        rows.append((blob_id, index, newlines_before, count, data))
        size, newlines = size + len(data), newlines + count
        if len(rows) == 200:
            files.insert_chunks(rows)
            rows = []
    files.insert_chunks(rows)
    return size, newlines


def _add(written: tuple[int, int], size: int, newlines: int) -> tuple[int, int]:
    return size + written[0], newlines + written[1]


def _lines(text: str, newlines: int) -> int:
    """Lines of `text`, which holds `newlines` newlines (`line_count` without counting)."""
    return newlines + (0 if not text or text.endswith("\n") else 1)


@contextmanager
def disk_refusals(path: str) -> Iterator[None]:
    """A write of `path` the disk refuses (full, over a size limit) raises a StoreError, as
    a step's rows do: the run ends `failed` with it, and the thread can go on once there is
    space (chunks written before the refusal name no file and no message)."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        if not is_io_error(exc):
            raise
        raise StoreError(f"{path} could not be stored: {type(exc).__name__}: {exc}") from exc


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
    small = {key: d for key, d in writes.items() if len(d) <= INLINE_LIMIT}
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


def _text_chunks(text: str, chunk_chars: int) -> Iterator[_Chunk]:
    """(index, newlines before it, newlines in it, UTF-8 bytes) of each chunk of `text`,
    encoded one at a time."""
    newlines_before = 0
    for index, start in enumerate(range(0, len(text), chunk_chars)):
        piece = text[start : start + chunk_chars]
        newlines = piece.count("\n")
        yield index, newlines_before, newlines, encode_text(piece)
        newlines_before += newlines


def blob_rows(
    namespace: str, path: str, text: str, run_id: str | None, ts: datetime
) -> tuple[str, Rows] | None:
    """The rows that store `text` as a new file at `path` as a blob (what
    `store_content(..., blob=True, new=True)` writes), and the blob id; None when `text` is
    longer than INLINE_LIMIT (that is written a transaction at a time, never held twice)."""
    if len(text) > INLINE_LIMIT:
        return None
    blob_id = new_blob_id(CHUNK_CHARS)
    chunks = [(blob_id, *chunk) for chunk in _text_chunks(text, CHUNK_CHARS)]
    lines = _lines(text, sum(c[3] for c in chunks))
    size = sum(len(c[4]) for c in chunks)
    row = (namespace, path, b"", True, size, run_id, ts, ts, blob_id, len(text), lines)
    return blob_id, {"files": [row], "file_chunks": chunks}


def _binary_chunks(data: bytes, chunk_bytes: int) -> Iterator[_Chunk]:
    """(index, 0, 0, bytes) of each chunk of binary `data`: no line index."""
    for index, start in enumerate(range(0, len(data), chunk_bytes)):
        yield index, 0, 0, data[start : start + chunk_bytes]


__all__ = [
    "CHUNK_CHARS",
    "INLINE_LIMIT",
    "Chunked",
    "blob_rows",
    "decode",
    "delete_content",
    "disk_refusals",
    "encode_text",
    "line_count",
    "replace_many",
    "store_content",
    "whole_content",
    "write_chunks",
]
