"""The label before a value (evals/sources/text_roles.py, `_inline_label`) is searched for only
near the end of the text before it: the same match as a search of the whole text, on
generated texts of labels, blanks, separators and long words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.sources.text_roles import _LABEL_BEFORE, _label_from

PIECES = ["status", "id", "x", "balance", "a" * 29, "b" * 31, "_", "-", ".", ":", "=", " ",
          "\t", "\n", "  ", "1", "é", "label_name", "\r"]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=5000, deadline=None)
@given(before=texts)
def test_searching_near_the_end_finds_what_the_whole_search_finds(before: str) -> None:
    whole = _LABEL_BEFORE.search(before)
    near = _LABEL_BEFORE.search(before, _label_from(before))
    assert (near and (near.span(), near[1])) == (whole and (whole.span(), whole[1]))
