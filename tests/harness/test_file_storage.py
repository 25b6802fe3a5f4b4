"""Chunked file storage: any line and character is reachable, a page fetches only its chunks,
and grep over windows of long lines finds exactly what a whole-line search finds."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.files import search as file_search
from harness.files import storage as file_storage
from harness.files.filesystem import FileSystem
from harness.files.paths import split_lines
from harness.store import Store

TEXT = st.one_of(
    st.text(alphabet="ab\r\né", max_size=120),
    st.lists(st.text(alphabet="abé\r", max_size=40), max_size=6).map("\n".join),
)


@contextmanager
def tiny_chunks() -> Iterator[None]:
    """Chunks, windows and excerpts a few characters long, so short texts cross every
    boundary the code handles."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(file_storage, "CHUNK_CHARS", 7)
        mp.setattr(file_storage, "INLINE_LIMIT", 7)
        mp.setattr(file_search, "WINDOW", 8)
        mp.setattr(file_search, "OVERLAP", 4)
        mp.setattr(file_search, "CONTEXT", 2)
        mp.setattr(file_search, "LONG_LINE", 6)
        # The long-line check is compiled from LONG_LINE at import: patched with it, or a
        # 7-character line would count as short there and long here.
        mp.setattr(file_search, "_LONG", re.compile(r"^[^\n]{7}", re.MULTILINE))
        yield


def stored(text: str) -> FileSystem:
    fs = FileSystem(Store(":memory:"), "t")
    fs.write("/f.txt", text)
    return fs


@settings(max_examples=60, deadline=None)
@given(TEXT, st.sampled_from([1, 3, 5]), st.data())
def test_fragments_rebuild_every_line_from_any_position(text: str, piece: int, data) -> None:
    with tiny_chunks():
        fs = stored(text)
        f = fs.open("/f.txt")
        lines = split_lines(text)
        assert fs.read_text("/f.txt") == text
        assert f.lines == len(lines)
        got: dict[int, str] = {}
        for line, col, frag, ends in f.fragments(0, 0, piece):
            assert col == len(got.get(line, ""))
            assert ends or (col + len(frag)) % piece == 0
            got[line] = got.get(line, "") + frag
        assert [got[i] for i in range(len(lines))] == lines
        if lines:
            n = data.draw(st.integers(0, len(lines) - 1))
            assert f.line_length(n) == len(lines[n])
            col = data.draw(st.integers(0, max(0, len(lines[n]) - 1)))
            first = itertools.takewhile(lambda x: x[0] == n, f.fragments(n, col, piece))
            assert "".join(x[2] for x in first) == lines[n][col:]


def expected_hits(text: str, pattern: regex.Pattern[str]) -> list[tuple[int, int]]:
    """What grep should report, computed on whole lines: the first match of a short line,
    every match of a long one."""
    out = []
    for number, line in enumerate(split_lines(text), start=1):
        starts = [m.start() for m in pattern.finditer(line)]
        if len(line) <= file_search.LONG_LINE:
            starts = starts[:1]
        out += [(number, s) for s in starts]
    return out


@settings(max_examples=150, deadline=None)
@given(
    TEXT, st.sampled_from(["ab", "ba", "é", "aab", r"b$", r"^a", r"(?<=b)a", r"a\r?b", r"é{1,2}b"])
)
@example("ab" * 20 + "\n" + "é" * 30 + "ab" + "é" * 10, "ab")  # a match, then a long line
@example("aaébéba", r"é{1,2}b")  # two matches on one line just over LONG_LINE
def test_windowed_grep_finds_what_a_whole_line_search_finds(text: str, pattern: str) -> None:
    literal = pattern.isalpha()
    with tiny_chunks():
        fs = stored(text)
        compiled = regex.compile(regex.escape(pattern) if literal else pattern)
        hits = [(m.line_no, m.column) for m in fs.grep(pattern, regex=not literal)]
        assert hits == expected_hits(text, compiled)
        first = [(m.line_no, m.column) for m in fs.grep(pattern, regex=not literal, unit="line")]
        assert first == [h for i, h in enumerate(hits) if i == 0 or hits[i - 1][0] != h[0]]
        for m in fs.grep(pattern, regex=not literal):
            line = split_lines(text)[m.line_no - 1]
            if m.excerpt_start is None:
                assert m.line == line
            else:
                assert line[m.excerpt_start :].startswith(m.line)
                assert m.excerpt_start == max(0, m.column - file_search.CONTEXT)


def fetched_bytes(store: Store) -> list[int]:
    """Spy on `store.query`: the size of the text and blobs each query returned."""
    sizes: list[int] = []
    real = store.query

    def spy(sql: str, params: Any = None) -> list[dict[str, Any]]:
        rows = real(sql, params)
        sizes.append(sum(len(v) for r in rows for v in r.values() if isinstance(v, str | bytes)))
        return rows

    store.query = spy  # type: ignore[method-assign]
    return sizes


def test_a_page_read_fetches_its_chunks_not_the_whole_file() -> None:
    store = Store(":memory:")
    fs = FileSystem(store, "t")
    lines = [f"row {i:07d} " + "v" * 90 for i in range(100_000)]  # ~10 MB
    fs.write("/big.txt", "\n".join(lines) + "\n")
    sizes = fetched_bytes(store)
    f = fs.open("/big.txt")
    page = list(itertools.islice(f.fragments(73_210, 0, 5_000), 100))
    assert [frag for _, _, frag, _ in page] == lines[73_210:73_310]
    assert f.lines == 100_000
    assert sum(sizes) < 5 * file_storage.CHUNK_CHARS  # the file is 40 times that
    sizes.clear()
    assert next(fs.grep("row 0000001", unit="file")).line_no == 2
    assert sum(sizes) < 5 * file_storage.CHUNK_CHARS


def test_overwrite_and_delete_drop_the_old_chunks() -> None:
    store = Store(":memory:")
    fs = FileSystem(store, "t")
    fs.write("/big.txt", "x" * 1_000_000)
    first = store.scalar("SELECT count(*) FROM file_chunks")
    assert first == -(-1_000_000 // file_storage.CHUNK_CHARS)
    assert store.scalar("SELECT content FROM files") == b""
    fs.write("/big.txt", "y" * 600_000)
    second = store.scalar("SELECT count(*) FROM file_chunks")
    assert second == -(-600_000 // file_storage.CHUNK_CHARS)
    assert fs.read_text("/big.txt") == "y" * 600_000
    fs.write("/big.txt", "small")
    assert store.scalar("SELECT count(*) FROM file_chunks") == 0
    fs.write("/big.txt", "z" * 300_000)
    fs.delete("/big.txt")
    assert store.scalar("SELECT count(*) FROM file_chunks") == 0


def test_large_binary_and_non_ascii_files_round_trip() -> None:
    fs = FileSystem(Store(":memory:"), "t")
    blob = bytes(range(256)) * 3_000 + b"\xff"
    fs.write("/b.bin", blob)
    assert fs.read_bytes("/b.bin") == blob
    assert list(fs.grep("a", path="/b.bin")) == []
    text = "é\ud800\n" * 200_000  # a lone surrogate becomes U+FFFD, as for small files
    fs.write("/t.txt", text)
    assert fs.read_text("/t.txt") == text.replace("\ud800", "\ufffd")
    assert fs.open("/t.txt").lines == 200_000


def test_a_file_overwritten_while_open_is_reported_not_misread() -> None:
    fs = FileSystem(Store(":memory:"), "t")
    fs.write("/big.txt", "a\n" * 400_000)
    opened = fs.open("/big.txt")
    fs.write("/big.txt", "b\n" * 400_000)
    with pytest.raises(FileNotFoundError, match="changed while it was being read"):
        list(opened.fragments(300_000, 0, 5_000))


@pytest.mark.parametrize(("chunks", "queries"), [(1, 1), (7, 3), (6, 3)])
def test_a_blob_is_read_without_a_query_past_its_last_chunk(
    monkeypatch: pytest.MonkeyPatch, chunks: int, queries: int
) -> None:
    # Three chunks a query: 7 chunks take 3 queries; 6 take a third finding nothing.
    from harness.store import files as stored_files

    monkeypatch.setattr(stored_files, "READ_CHARS", 21)
    store = Store(":memory:")
    fs = FileSystem(store, "t")
    text = "".join(chr(ord("a") + i % 26) for i in range(7 * chunks))
    with tiny_chunks():
        fs.write_blob("/blob.txt", text)
        asked: list[str] = []
        query = store.query

        def spy(sql: str, params: Any = None) -> list[dict[str, Any]]:
            if "FROM file_chunks" in sql:
                asked.append(sql)
            return query(sql, params)

        store.query = spy  # type: ignore[method-assign]
        assert fs.read_text("/blob.txt") == text
    assert len(asked) == queries
