"""The availability audit's cheap pre-check never rules out a value the scorer's normalisation
would find: where `may_mention` says no, `mentions(normalize(text), value)` says no too."""

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.scoring.answers import mentions, normalize
from evals.scoring.availability import may_mention

# Pieces the normalisation rewrites: numbers with thousands, currencies, scales, punctuation,
# compatibility characters NFKC folds, case.
PIECES = ["1,234", "1234", ",", ".5", "$", "USD", "usd", "€", "m", "M", "mn", "bn", "k", "million",
          "thousand", "ﬁ", "fi", "①", "1", "Ｘ", "x", " ", "-", "/", "+", "'", '"', "*", "(", ")",
          "FX-52", "52", "Acme", "acme", "é", "É", "\u00a0", "9,474.58", "9474.58"]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=3000, deadline=None)
@given(text=texts, value=texts)
def test_a_no_is_never_wrong(text: str, value: str) -> None:
    if not may_mention(text, value):
        assert not mentions(normalize(text), value)


def test_it_rules_out_what_is_plainly_absent_and_keeps_respellings() -> None:
    assert not may_mention("Revenue was 12.5 million in 2024.", "9,474.58")
    assert may_mention("Revenue was $9,474.58M.", "9474.58 million")
    assert may_mention("ﬁnal: ACME", "final acme")
