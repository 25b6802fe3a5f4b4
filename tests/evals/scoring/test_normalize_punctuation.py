"""The scorer's normalisation drops punctuation outside a token and keeps it inside one,
character by character as the rule says, and skipping the scans a text cannot match changes
nothing (`answers.normalize`)."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from evals.scoring.answers import _LOOSE_PUNCT, normalize

KEPT = set("/+#@%")


def loose_by_hand(text: str) -> str:
    """Each punctuation character (not a word character, space or one of `/+#@%`) becomes a
    space unless a letter or digit is on both sides of it."""

    def alnum(i: int) -> bool:
        return 0 <= i < len(text) and text[i].isalnum() and text[i] != "_"

    out = []
    for i, c in enumerate(text):
        punct = not (c.isalnum() or c == "_" or c.isspace() or c in KEPT)
        out.append(" " if punct and not (alnum(i - 1) and alnum(i + 1)) else c)
    return "".join(out)


chars = st.sampled_from(list("ab1é_ .,-'\"()/+#@%\n\t$€") + ["\u00a0", "x"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(chars, max_size=14).map("".join))
@example("a.b")
@example(".a.")
@example("a..b")
@example("_._")
def test_loose_punctuation_follows_the_rule(text: str) -> None:
    assert _LOOSE_PUNCT.sub(" ", text) == loose_by_hand(text)


def test_amounts_and_currencies_normalise_as_before() -> None:
    assert normalize("Revenue: $1,234.5M, up 9,474.58 USD.") == "revenue 1234.5 million up 9474.58"
    assert normalize("Paid 1,200 euros") == "paid 1200"
    assert normalize("no amounts here, just words.") == "no amounts here just words"
