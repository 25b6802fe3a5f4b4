"""grep's whole-text skip-ahead (harness/files/search.py) finds exactly what a line-by-line
search finds, with far fewer regex calls on a file whose lines mostly do not match."""

from __future__ import annotations

import pytest
from helpers.file_tools import count_regex_calls, grep_hits
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.files import search
from harness.files.filesystem import FileSystem
from harness.store import Store

PATTERNS = [r"b$", r"^a", r"a\s*b", r"\d+", r"x*", r"^$", r"(?s)a.b", r"(?=b)\w", r"\bab\b",
            r"(?<=a)b", r"a|^b", r"[^a]b", r"$", r"ab+", r"(?m)^b.*a$", r"(?!a)b",
            r"(?<!a)b", r"\Aa", r"a\Z", r"a*+b"]  # fmt: skip
_TEXT = st.text(alphabet="ab \n1\r", max_size=60)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=3), pattern=st.sampled_from(PATTERNS))
def test_skip_ahead_finds_what_the_line_search_finds(texts: list[str], pattern: str) -> None:
    with Store(":memory:") as store:
        fs = FileSystem(store, "t")
        for k, text in enumerate(texts):
            fs.write(f"/f{k}.txt", text)
        fast = grep_hits(fs, pattern)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(search, "WHOLE_CHARS", -1)  # every file searched line by line
            slow = grep_hits(fs, pattern)
    assert fast == slow


def test_a_file_of_few_matching_lines_costs_few_regex_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = count_regex_calls(monkeypatch)
    lines = [f"row {i} value {i * 7}" for i in range(5_000)]
    lines[4_000] = "limit = 85689"
    with Store(":memory:") as store:
        fs = FileSystem(store, "t")
        fs.write("/big.txt", "\n".join(lines) + "\n")
        found = [(m.line_no, m.line) for m in fs.grep(r"limit.*\d+", regex=True)]
    assert found == [(4_001, "limit = 85689")]
    assert calls[0] <= 3  # line by line: one call per line, 5,000
