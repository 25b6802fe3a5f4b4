"""The dictionary is read as its word lists come, lower-case entries of letters only
(evals/sources/hygiene.py): every word answers as it did against those entries filtered out
first, capitalised names (Seattle), entries with signs (don't) and other scripts included."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.sources import hygiene


@cache
def _filtered() -> frozenset[str]:
    return frozenset(w for w in hygiene._dictionary() if w.isalpha() and w.islower())


def _reference(word: str) -> bool:
    """`in_dictionary` as it read the entries filtered first."""
    listed, text = _filtered(), word.lower()
    if text in listed:
        return True
    for ending, back in hygiene._ENDINGS:
        stem = text[: -len(ending)] + back
        if (
            text.endswith(ending)
            and len(stem) >= 3
            and (stem in listed or stem[-1] == stem[-2] and stem[:-1] in listed)
        ):
            return True
    return False


WORDS = ["Seattle", "seattle", "don't", "x-ray", "records", "mapped", "Mapped", "studies",
         "followed", "sympify", "café", "naïve", "ǅ", "a1", "", "MAP", "biggest"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(word=st.one_of(st.sampled_from(WORDS), st.text("abcdeiltmnoprsSAE'-é1", max_size=9)))
def test_a_word_is_listed_as_against_the_filtered_entries(word: str) -> None:
    assert hygiene.in_dictionary(word) == _reference(word)


def test_a_capitalised_entry_is_a_name_and_an_entry_with_signs_no_word() -> None:
    entries = hygiene._dictionary()
    name = next(w for w in entries if w.isalpha() and w[0].isupper())
    assert not hygiene._listed(name, entries)
    assert all(hygiene._listed(w, entries) == (w in _filtered()) for w in entries if "'" in w)
