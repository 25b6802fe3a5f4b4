"""A line-bound cue (evals/simulated/line_bound.py) is searched only on the lines that hold one
of its needles (reader.cue_matches): the same matches, at the same places with the same groups,
as the `regex` engine finds over the whole text, whatever the pattern holds; and a cue that may
match a newline is refused."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.reader as reader
from evals.errors import CueTooSlowError
from evals.simulated.line_bound import line_bound, needle_lines
from harness.files.needles import needles

NEEDLES = ["ab", "a\\.b", "b:a", "x\\ a", "limit"]
PIECES = ["a", "b", "x", "1", " ", ":", r"\.", r"\ ", r"\-", "\\\t", r"\d", r"\w", r"\s", r"\S",
          r"\W", r"\D", r"\b", r"\B", "[ab]", "[^a]", "[^\\n]", "[^\\s:]", "[]a]", "[ \\t]",
          "[\\t-~]", "[\\x00-z]", "[\\w.\\-]", "[[:alpha:]]", "(a|b)", "(a)", "(?:ab)", "(?=a)",
          "(?!b)", "(?<=a)", "(?<!\\S)", "(?<=\\n)", "(?=$)", "(?i)", "(?s)", "*", "+", "?",
          "*?", "{2}", "{0,3}?", "{e<=1}", "|", ".", "^", "$", r"\n", r"\A", r"\Z", r"\G", r"\K",
          "(\\w+)", "([^\\n]*)", "(.*)", "(?P<n>a)", "\\1", "\n"]  # fmt: skip
TEXT = ["a", "b", "A", "x", "1", " ", ":", ".", "-", "\t", "\n", "\n", "=", "é", "\r"]
TEMPLATE = r"^(?:[^\s:]+:)?[ \t]*((?=[\w.\-$#@]*[A-Za-z_])[\w$#@][\w.\-$#@]*\w)[:\t][^\n]{0,80}?"

parts = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)
texts = st.lists(st.sampled_from([*TEXT, None, None]), max_size=24)


def _whole(pattern: str, text: str) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    compiled = regex.compile(pattern, regex.MULTILINE)
    return [(m.span(), m.groups()) for m in compiled.finditer(text)]


def _lines(pattern: str, text: str) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in reader.cue_matches(pattern, text)]


@settings(max_examples=4000, deadline=None)
@given(before=parts, needle=st.sampled_from(NEEDLES), after=parts, pieces=texts)
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_a_line_bound_cue_matches_as_over_the_whole_text(
    before: str, needle: str, after: str, pieces: list[str | None]
) -> None:
    pattern = before + needle + after
    try:
        regex.compile(pattern, regex.MULTILINE)
    except regex.error:
        return
    literal = regex.sub(r"\\(.)", r"\1", needle)
    text = "".join(literal if p is None else p for p in pieces)
    assert _lines(pattern, text) == _whole(pattern, text), pattern


@settings(max_examples=500, deadline=None)
@given(needle=st.sampled_from(["src/a\\.py", "limit"]), pieces=texts)
def test_the_reader_template_matches_as_over_the_whole_text(
    needle: str, pieces: list[str | None]
) -> None:
    pattern = TEMPLATE + needle
    assert line_bound(pattern)
    text = "".join("src/a.py limit" if p is None else p for p in pieces)
    assert _lines(pattern, text) == _whole(pattern, text)


@pytest.mark.parametrize(
    ("pattern", "bound"),
    [
        (TEMPLATE + r"src/a\.py", True),
        ("(-?[0-9][0-9,]*(?:\\.[0-9]+)?)\\\t\\ \\ limit\\ =", True),
        (r"ab[^\n]*(c)", True),
        (r"ab\s(c)", False),  # \s matches a newline
        (r"ab[^x](c)", False),  # so does a negated class that does not name it
        (r"ab\W(c)", False),
        (r"ab[\t-~](c)", False),  # a range from an escape
        ("ab[\x00-z](c)", False),  # a range over the newline
        (r"(?s)ab.(c)", False),  # an inline flag
        (r"ab(c)\Z", False),
        (r"(a)b\1", False),  # a back-reference
        (r"ab(?:c){e<=1}", False),  # fuzzy: a newline may be inserted
        (r"ab[[:alpha:]](c)", False),
    ],
)
def test_only_a_cue_that_cannot_match_a_newline_is_line_bound(pattern: str, bound: bool) -> None:
    assert line_bound(pattern) is bound


def test_needle_lines_are_the_lines_holding_a_needle_with_their_newline() -> None:
    text = "ab x\nnone\nx cd ab\ncd"
    assert needle_lines(text, ("ab", "cd")) == [(0, 5), (10, 18), (18, 20)]


def test_a_slow_line_without_a_needle_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole text's search backtracks on the first line for seconds; the line has no
    needle, so it holds no match and is skipped."""
    monkeypatch.setattr(reader, "CUE_SECONDS", 0.2)
    pattern = r"(?:(a|aa)+)+bzz"
    assert line_bound(pattern) and needles(pattern) == ("bzz",)
    found = reader.cue_matches(pattern, "a" * 28 + "c\nabzz")
    assert [m.span() for m in found] == [(30, 34)]


def test_a_slow_needle_line_still_names_the_cue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CUE_SECONDS", 0.01)
    pattern = r"(?:(a|aa)+)+bzz"
    with pytest.raises(CueTooSlowError, match="bzz"):
        reader.cue_matches(pattern, "ok\n" + "a" * 40 + "c bzz\n")
