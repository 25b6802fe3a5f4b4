"""`normalize` and `mentions` (evals/scoring/answers.py) are written for speed: the thousands
pass opens on a digit, currency signs and words go in two passes, the three scales in one, a
value's pattern is compiled once and searched from where the value first stands. Each gives
exactly what the plain form of its rule gives (kept here as the reference) on generated
texts."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.scoring.answers import _LOOSE_PUNCT, mentions, normalize

_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")
_CURRENCY = re.compile(r"[$€£¥]|\b(?:usd|eur|gbp|jpy|dollars?|euros?|pounds?)\b")
_SCALES = (
    (re.compile(r"(\d)\s*(?:m|mn|mio|mln|millions?)\b"), r"\1 million"),
    (re.compile(r"(\d)\s*(?:b|bn|billions?)\b"), r"\1 billion"),
    (re.compile(r"(\d)\s*(?:k|thousands?)\b"), r"\1 thousand"),
)


def reference(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
    text = _CURRENCY.sub(" ", text)
    for pattern, spelled in _SCALES:
        text = pattern.sub(spelled, text)
    text = _LOOSE_PUNCT.sub(" ", text)
    return " ".join(text.split())


def reference_mentions(text: str, value: str) -> bool:
    wanted = reference(value)
    if not wanted:
        return False
    return re.search(r"(?<![\w.])" + re.escape(wanted) + r"(?![\w]|\.\d)", text) is not None


# Digits, separators, signs, currency words inside and outside words, scale letters and words
# after spaces or not, letters and punctuation around them.
PIECES = ["1", "12", "123", "1,234", ",", ",000", ".", ".5", "0", " ", "\t", "\n", "$", "€",
          "£", "¥", "usd", "USD", "eur", "euros", "dollar", "dollars", "pounds", "gbp", "jpy",
          "x", "_", "a", "é", "m", "mn", "mio", "mln", "million", "millions", "b", "bn",
          "billion", "k", "thousand", "thousands", "t", "-", "/", "(", ")", "ms", "kb", "Σ",
          "ｍ", "①"]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@settings(max_examples=5000, deadline=None)
@given(text=texts)
def test_normalize_is_its_rules_applied_one_by_one(text: str) -> None:
    assert normalize(text) == reference(text)


@settings(max_examples=3000, deadline=None)
@given(text=texts, value=texts)
def test_mentions_is_a_whole_match_anywhere(text: str, value: str) -> None:
    normal = reference(text)
    assert mentions(normal, value) == reference_mentions(normal, value)
