"""The literal text a cue's every match holds (evals/simulated/literal.py): the reader skips a
text without it, so it must be in every match the `regex` engine finds, whatever the pattern;
and where the reading is unsure, there is none."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.reader as reader
from evals.simulated.literal import required_literal

# Pattern pieces: literals, escapes, sets, groups, look-arounds, quantifiers, anchors, braces.
PIECES = ["a", "b", "ab", "x", "1", " ", ":", r"\.", r"\ ", r"\(", r"\)", r"\-", "\\\t", r"\d",
          r"\w", r"\s", r"\b", "[ab]", "[^a]", "[]a]", "[:=|]", "[[:alpha:]]", "(a|b)",
          "(?:ab)", "(?=a)", "(?!b)", "(?<=a)", "(?i)", "(?i:a)", "*", "+", "?", "{2}",
          "{1,3}", "{0,}", "{e<=1}", "|", ".", "^", "$", r"\n", r"\t", r"\x61", "(", ")",
          "a)", "]", "{", "}"]  # fmt: skip
TEXT = ["a", "b", "A", "B", "x", "1", " ", ":", ".", "(", ")", "-", "\t", "\n", "=", "|", "]"]

patterns = st.lists(st.sampled_from(PIECES), min_size=1, max_size=10).map("".join)
texts = st.lists(st.sampled_from(TEXT), max_size=24).map("".join)


@settings(max_examples=3000, deadline=None)
@given(pattern=patterns, text=texts)
def test_every_match_holds_the_literal(pattern: str, text: str) -> None:
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error:
        return
    literal = required_literal(pattern)
    if literal is None:
        return
    for m in compiled.finditer(text):
        assert literal in m.group(0), (pattern, text, literal)


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (r"src/app\.py:(\d+)", "src/app.py:"),
        (r"(-?[0-9]+)\	\ \ limit\ =", "\t  limit ="),  # an escaped tab is a tab
        (r"ab?cde", "cde"),  # a character a quantifier follows is not required
        (r"(\w+) of (x|y) is", " of "),  # the longest run
        (r"a|bcd", None),  # either side matches alone
        (r"(?i)total: (\d+)", None),  # a flag the whole pattern is read under
        (r"total\n(\d+)", None),  # `\n` is not decoded: no literal
        (r"\p{L}+ total", None),  # a letter escape this reading does not decode
        (r"abc{e<=1}", None),  # fuzzy matching
        (r"x[[:digit:]]+", None),
        (r"(\d+)", None),
    ],
)
def test_the_literal_of_known_patterns(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal


def test_a_text_without_the_literal_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = reader._regex.__wrapped__

    def counted(pattern: str) -> regex.Pattern[str]:
        compiled.append(pattern)
        return real(pattern)

    monkeypatch.setattr(reader, "_regex", counted)
    pattern = r"limit_7\.py:(\d+)"
    assert reader.cue_matches(pattern, "limit_8.py:12\n" * 100) == []
    assert compiled == []
    assert [m.group(1) for m in reader.cue_matches(pattern, "x\nlimit_7.py:42\n")] == ["42"]
    assert compiled == [pattern]
