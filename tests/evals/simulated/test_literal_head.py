"""A cue that begins with a literal is matched as the literal's occurrences each followed by a
match of the rest (evals/simulated/literal_head.py, reader.cue_hits): the same matches, at the
same places with the same values, as the `regex` engine finds for the whole cue, whatever the
rest holds (anchors, look-arounds, alternations, classes, quantifiers, flags)."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.reader as reader
from evals.errors import CueTooSlowError
from evals.simulated.literal_head import literal_head

HEADS = ["a", "ab", "aa", "a\\ b", "x\\.", ":", "b\\\t", "\\-a", "a\\:", "#", " ", "a\\_", "é"]
PIECES = ["a", "b", "ab", "x", "1", " ", ":", r"\.", r"\ ", r"\(", r"\)", r"\-", "\\\t", r"\d",
          r"\w", r"\s", r"\b", "[ab]", "[^a]", "[]a]", "[:=|]", "[[:alpha:]]", "(a|b)", "(a)",
          "(?:ab)", "(?=a)", "(?!b)", "(?<=a)", "(?<!a)", "(?i)", "(?i:a)", "*", "+", "?",
          "{2}", "{1,3}", "{e<=1}", "|", ".", "^", "$", r"\n", r"\G", r"\K", "(", ")", "(\\w+)",
          "([^\\n]*)", "(?P<n>a)", "(*SKIP)", "(?m)", "(?x)"]  # fmt: skip
TEXT = ["a", "b", "A", "B", "x", "1", " ", ":", ".", "(", ")", "-", "\t", "\n", "=", "|", "é"]

heads = st.lists(st.sampled_from(HEADS), min_size=1, max_size=3).map("".join)
rests = st.lists(st.sampled_from(PIECES), min_size=1, max_size=7).map("".join)
# A text of signs and letters, with the head's literal in it (where `None` stands).
texts = st.lists(st.sampled_from([*TEXT, None, None]), max_size=16)


def _whole(pattern: str, text: str) -> list[tuple[int, str | None]]:
    compiled = regex.compile(pattern, regex.MULTILINE)
    return [(m.start(), m.group(1)) for m in compiled.finditer(text)]


@settings(max_examples=4000, deadline=None)
@given(head=heads, rest=rests, pieces=texts)
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_a_split_cue_matches_as_the_whole_cue(
    head: str, rest: str, pieces: list[str | None]
) -> None:
    pattern = head + rest
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error:
        return
    if compiled.groups < 1 or literal_head(pattern) is None:
        return
    try:
        regex.compile(literal_head(pattern)[1], regex.MULTILINE)
    except regex.error:
        pytest.fail(f"{pattern!r} split into a rest that does not compile")
    literal = literal_head(pattern)[0]
    text = "".join(literal if p is None else p for p in pieces)
    assert reader.cue_hits(pattern, text) == _whole(pattern, text), pattern


@pytest.mark.parametrize(
    ("pattern", "head"),
    [
        (r"limit\ =\ (-?[0-9]+)", ("limit = ", "(-?[0-9]+)")),
        ("src/a\\.py[\"'`]?[:=|,\\t](\\w+)", ("src/a.py", "[\"'`]?[:=|,\\t](\\w+)")),
        (r"ab*(c)", None),  # the rest repeats the head's last character
        (r"ab|c(d)", None),  # the alternation takes the head with it
        (r"ab(?i)(c)", None),  # a flag applies to the head too
        (r"ab\K(c)", None),
        (r"ab[[:alpha:]](c)", None),
        (r"^ab(c)", None),
        (r"ab(?:c)", None),  # no capture group
    ],
)
def test_only_a_split_that_changes_no_match_is_made(
    pattern: str, head: tuple[str, str] | None
) -> None:
    assert literal_head(pattern) == head


def test_a_split_cue_too_slow_names_the_cue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CUE_SECONDS", 0.01)
    pattern = r"start(?:(a|aa)+)+(b)"
    with pytest.raises(CueTooSlowError, match="start"):
        reader.cue_hits(pattern, "start" + "a" * 40 + "c")
