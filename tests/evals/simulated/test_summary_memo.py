"""The simulated summarizer remembers the summaries it wrote (evals/simulated/summarizer.py): a
trace's two cells ask for mostly the same ones. From memory it answers what writing afresh
answers, for the same units, budget, prompt and tokenizer only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.summarizer as module
from evals.simulated.summarizer import (
    SUMMARY_MARKER,
    extractive_summary,
    instructions,
    summary_units,
)
from harness.messages import user
from harness.middleware.summarizer import DEFAULT_PROMPT
from harness.tokens import TokenCounter

LINES = ["Acme revenue = 10.5", "Wrote /notes/a.md.", "Checked the coverage.", "Ana Ruiz called",
         "row 1", "", "ok", "Zeta export: 900 rows\nrow 2\nrow 3"]  # fmt: skip
PROMPTS = [DEFAULT_PROMPT, "Summarize the conversation.", "Briefly summarize in two sentences."]
units_ = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "tool", "summary"]), st.sampled_from(LINES)),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(units=units_, budgets=st.lists(st.integers(5, 200), min_size=1, max_size=3),
       prompt=st.sampled_from(PROMPTS))  # fmt: skip
def test_a_summary_from_memory_is_the_one_written_afresh(
    units: list[tuple[str, str]], budgets: list[int], prompt: str
) -> None:
    counter = TokenCounter()
    asked = instructions(prompt)
    for budget in budgets:  # other budgets of the same units: each its own summary
        fresh = module._extractive(units, budget, counter, 2, asked)
        assert extractive_summary(units, budget, counter, asked=asked) == fresh
        assert extractive_summary(units, budget, counter, asked=asked) == fresh


def test_another_tokenizer_or_head_writes_its_own_summary() -> None:
    # 13 tokens in cl100k, 7 in o200k: within a budget of 10 in one only.
    units = [("assistant", "тест русский текст здесь"), ("tool", "head\nsecond\nthird")]
    counters = [TokenCounter("cl100k_base"), TokenCounter("o200k_base")]
    written = [extractive_summary(units, 10, c) for c in counters]
    assert written == [module._extractive(units, 10, c, 2, module.DEFAULT) for c in counters]
    assert "русский" not in written[0] and "русский" in written[1]
    three = extractive_summary(units, 400, counters[0], head_lines=3)
    assert "third" in three and "third" not in extractive_summary(units, 400, counters[0])


def test_a_requests_units_from_memory_are_a_copy() -> None:
    text = f"{SUMMARY_MARKER}\n<conversation>\n### User\nStudy Acme.\n</conversation>"
    first = summary_units([user(text)])
    first.append(("user", "changed by the caller"))
    assert summary_units([user(text)]) == [("user", "Study Acme.")]
    assert summary_units([user(text.replace("Acme", "Zeta"))]) == [("user", "Study Zeta.")]
