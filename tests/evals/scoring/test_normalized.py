"""The availability audit's memo of normal forms: cut at line-opening headings, each piece
normalised once, its answers exactly `normalize`'s, and a growing history file costs only
what it gained."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.scoring.normalized as normalized
from evals.scoring.answers import mentions, normalize
from evals.scoring.availability import _runs, availability, may_mention, mentioned
from evals.scoring.normalized import NormalMemo

# What `normalize` rewrites, and what sits at a cut: headings, newlines, spaces, numbers that
# end a line, scale words that open one, a final sigma, a combining mark after `#`.
PIECES = ["\n", "#", "\n#", "## Cycle 2", "### User", " ", "\t", "1,234", "5", ",", ".", ".5",
          "$", "usd", "m", "M", "mn", "bn", "k", "million", "ﬁ", "①", "Ｘ", "Σ", "ΑΣ", "\u0301",
          "-", "/", "+", "'", '"', "*", "(", ")", "FX-52", "Acme", "é", "\u00a0", "9,474.58",
          "\u2028", "\x1c"]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@settings(max_examples=4000, deadline=None)
@given(text=texts)
def test_the_pieces_normal_forms_joined_are_the_text_normal_form(text: str) -> None:
    memo = NormalMemo()
    assert memo(text) == normalize(text)
    assert memo(text) == normalize(text)  # and again, from the memo


def test_it_keeps_at_most_its_budget_and_still_answers() -> None:
    memo = NormalMemo(chars=100)
    texts = [f"### User\nRevenue was $1,{i:03d}M.\n" * 3 for i in range(20)]
    assert [memo(t) for t in texts] == [normalize(t) for t in texts]
    assert memo._normal.held <= 100 and memo._whole.held <= 100


def test_a_whole_text_from_memory_is_its_own() -> None:
    memo = NormalMemo()
    one = "## Cycle 1\nRevenue $1,200M.\n## Cycle 2\nZeta"
    other = one.replace("Zeta", "Acme")  # the same first pieces, another text
    assert memo(one) == normalize(one) and memo(one) == normalize(one)
    assert memo(other) == normalize(other) != memo(one)


def test_a_growing_history_file_is_normalised_once_per_section(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each probe after a summary finds its value one read away, in the history file the
    # summary names, one section longer than at the probe before.
    seen: list[int] = []
    monkeypatch.setattr(normalized, "normalize", lambda t: seen.append(len(t)) or normalize(t))
    memo, history = NormalMemo(), ""
    prompt = "Earlier messages are saved in /conversation_history/t.md"
    for cycle in range(1, 31):
        line = f"ticket TCK-{cycle:04d} shipped, {cycle},000 units\n"
        history += f"## Cycle {cycle}: 2 messages summarized\n\n### Tool\n" + line * 20 + "\n"
        found = availability(f"TCK-{cycle:04d}", prompt, [], lambda path, h=history: h, "", memo)
        assert found.verdict == "one_read", found
    assert sum(seen) <= 2 * len(history) + 1_000  # the whole file about once, not 15 times


@settings(max_examples=1000, deadline=None)
@given(text=texts, value=st.sampled_from(["1,234", "Acme", "5 million", "FX-52", "Σ", "x"]))
def test_may_mention_from_memory_is_its_fresh_answer(text: str, value: str) -> None:
    folded = unicodedata.normalize("NFKC", text).lower().replace(",", "")
    fresh = all(r in folded for r in _runs(value)) if _runs(value) else True
    assert may_mention(text, value) == fresh
    assert may_mention(text, value) == fresh  # and again, from the memo


@settings(max_examples=3000, deadline=None)
@given(
    text=texts,
    value=st.sampled_from(["1,234", "Acme", "5 million", "FX-52", "# Cycle 2", "user 5", "x #"]),
)
def test_a_text_mentions_a_value_where_one_of_its_pieces_does(text: str, value: str) -> None:
    assert mentioned(text, value, NormalMemo()) == mentions(normalize(text), value)


def test_a_history_file_is_normalised_only_where_the_value_may_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    monkeypatch.setattr(normalized, "normalize", lambda t: seen.append(t) or normalize(t))
    sections = [f"## Cycle {n}: 1 messages\n\n### Tool\nticket TCK-{n:04d}\n" for n in range(40)]
    history = "\n".join(sections)
    found = availability("TCK-0007", "see /conversation_history/t.md", [],
                         lambda path: history, "", NormalMemo())  # fmt: skip
    assert found.verdict == "one_read"
    assert len(seen) <= 2 and sum(map(len, seen)) < 2 * len(sections[7])


def test_a_text_audited_again_is_not_cut_again() -> None:
    history = "".join(f"## Cycle {n}\n\n### Tool\nticket TCK-{n:04d}\n" for n in range(30))
    assert normalized.pieces(history) is normalized.pieces(str(history + " ")[:-1])
    assert "".join(normalized.pieces(history)) == history
