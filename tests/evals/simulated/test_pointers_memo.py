"""The paths a text names are read off it once (evals/simulated/queries.py, `pointers`): the
same ranking as reading every text afresh, and each text its own paths."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.queries as queries
from evals.simulated.queries import pointers
from evals.simulated.reader import POINTER

PIECES = ["/large_tool_results/a", "/large_tool_results/b.", "/conversation_history/t.md)",
          " the Zeta export ", "Acme revenue ", "\n", "saved to ", "/notes/x.md "]  # fmt: skip
texts = st.lists(st.lists(st.sampled_from(PIECES), max_size=6).map("".join), max_size=6)


def fresh(texts: list[str], question: str) -> list[str]:
    wanted = queries.words(question)
    found: dict[str, tuple[int, int]] = {}
    for age, text in enumerate(reversed(texts)):
        paths = [p.rstrip(".,;:)") for p in POINTER.findall(text)]
        overlap = len(wanted & queries.words(text[:2_000])) if wanted and paths else 0
        for path in paths:
            best, newest = found.get(path, (0, age))
            found[path] = (min(best, -overlap), newest)
    return sorted(found, key=found.__getitem__)


@settings(max_examples=500, deadline=None)
@given(texts=texts, question=st.sampled_from(["", "what did the Zeta export say?", "Acme"]))
def test_pointers_from_memory_rank_as_read_afresh(texts: list[str], question: str) -> None:
    assert pointers(texts, question) == fresh(texts, question)
    assert pointers(texts, question) == fresh(texts, question)


def test_each_text_names_its_own_paths() -> None:
    one, other = "see /large_tool_results/one", "see /large_tool_results/two"
    assert pointers([one]) == ["/large_tool_results/one"]
    assert pointers([other]) == ["/large_tool_results/two"]
    assert pointers([one, other]) == ["/large_tool_results/two", "/large_tool_results/one"]
