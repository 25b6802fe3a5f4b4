"""The needles of a cue (grep's, harness/files/needles.py): the reader skips a text that holds
none of them, so one of them must be in every match the `regex` engine finds (the engine cues
and grep run on, not `re`, whose parser reads the pattern), whatever the pattern."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.reader as reader
from harness.files.needles import needles

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
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_every_match_holds_a_needle(pattern: str, text: str) -> None:
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error:
        return
    found = needles(pattern)
    if found is None:
        return
    for m in compiled.finditer(text):
        assert any(n in m.group(0) for n in found), (pattern, text, found)


def test_a_text_without_a_needle_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = reader.cue_regex.__wrapped__

    def counted(pattern: str) -> regex.Pattern[str]:
        compiled.append(pattern)
        return real(pattern)

    monkeypatch.setattr(reader, "cue_regex", counted)
    pattern = r"limit_7\.py:(\d+)"
    assert reader.cue_matches(pattern, "limit_8.py:12\n" * 100) == []
    assert compiled == []
    assert [m.group(1) for m in reader.cue_matches(pattern, "x\nlimit_7.py:42\n")] == ["42"]
    assert compiled == [pattern]
