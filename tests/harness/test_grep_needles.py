"""grep's needles (harness/files/needles.py): the literal texts one of which every match holds,
so lines without one are never given to the regex, and the hits stay exactly the same."""

from __future__ import annotations

import pytest
from helpers.file_tools import count_regex_calls, grep_hits
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.files import search
from harness.files.filesystem import FileSystem
from harness.files.needles import needles
from harness.store import Store


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"src/a_1\.py.*\w+|\w+.*src/a_1\.py", ("src/a_1.py",)),
        (r"limit.*\d+", ("limit",)),
        (r"ab|cd", ("ab", "cd")),
        (r"(abc)+d", ("abc",)),
        (r"(?x) a b c ", ("abc",)),
        (r"\bvalue\b", ("value",)),
        (r"(?>ab)c", ("ab",)),
    ],
)
def test_needles_every_match_holds(pattern: str, expected: tuple[str, ...]) -> None:
    assert needles(pattern) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        r"ab|c",  # one branch promises a single character: not worth a pass
        r"(abc)*d",  # the group may be absent
        r"(?=abc)x",  # a lookahead's text is not in the match
        r"(?i)abc",
        r"a(?i:bc)",  # case ignored somewhere
        r"foo{e<=1}",  # the regex engine reads fuzzy matching here, `re` reads literals
        r"[[:alpha:]]x",  # a POSIX class to the regex engine
        "ab\ncd",  # no line holds a newline
        r"abc|",
        r"x*",
    ],
)
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_no_needles_when_none_is_certain(pattern: str) -> None:
    assert needles(pattern) is None


PATTERNS = [r"ab.*\d|\d.*ab", r"ab", r"(?:ab)+1", r"^ab$", r"(?!1)ab", r"ab\Z", r"\Aab",
            r"b a|a b", r"(ab)\1", r"a+b+", r"1.*(?<!a)ab"]  # fmt: skip
_TEXT = st.text(alphabet="ab \n1\r", max_size=80)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=3), pattern=st.sampled_from(PATTERNS),
       whole=st.booleans())  # fmt: skip
def test_needles_find_what_the_regex_finds(texts: list[str], pattern: str, whole: bool) -> None:
    with Store(":memory:") as store:
        fs = FileSystem(store, "t")
        for k, text in enumerate(texts):
            fs.write(f"/f{k}.txt", text)
        with pytest.MonkeyPatch.context() as mp:
            if not whole:
                mp.setattr(search, "WHOLE_CHARS", -1)  # every file searched line by line
            fast = grep_hits(fs, pattern)
            mp.setattr(search, "needles", lambda _pattern: None)
            slow = grep_hits(fs, pattern)
    assert fast == slow


@pytest.mark.parametrize("whole", [True, False])
def test_lines_without_a_needle_cost_no_regex_call(
    monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    calls = count_regex_calls(monkeypatch)
    if not whole:
        monkeypatch.setattr(search, "WHOLE_CHARS", -1)
    lines = [f"row_{i} value {i * 7}" for i in range(2_000)]
    lines[1_500] = "see src/a_1.py for limit_9"
    pattern = r"src/a_1\.py.*\w+|\w+.*src/a_1\.py"
    with Store(":memory:") as store:
        fs = FileSystem(store, "t")
        fs.write("/big.txt", "\n".join(lines) + "\n")
        found = [(m.line_no, m.line) for m in fs.grep(pattern, regex=True)]
    assert found == [(1_501, "see src/a_1.py for limit_9")]
    assert calls[0] == 1  # the one line that holds the needle
