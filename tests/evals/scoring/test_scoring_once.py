"""Scoring a replay's answers does each piece of work once: the user's own words are
normalised once per scenario, not once per answer, and a probe's outcome takes the verdict
the replay already has."""

from __future__ import annotations

import pytest

import evals.scoring.answers as answers
from evals.scenarios.base import Probe
from evals.scoring.answers import is_correct, outcome
from evals.simulated import DONT_KNOW, Cue


def _probe(answer: str, *distractors: str) -> Probe:
    return Probe("p", "recall", "?", answer, Cue(patterns=()), distractors=distractors)


def test_the_users_words_are_normalised_once_for_every_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = ("Please use the figure 41.2, not 38.9, in the memo.", "Thanks.")
    seen: list[str] = []
    monkeypatch.setattr(answers, "normalize", lambda t: seen.append(t) or normalize(t))
    probe = _probe("41.2", "38.9")
    verdicts = [is_correct(probe, f"You said: use the figure 41.2, not 38.9 ({n})", said)
                for n in range(5)]  # fmt: skip
    assert verdicts == [True] * 5  # the distractor is inside the user's words quoted back
    assert seen.count(said[0]) == 1


@pytest.mark.parametrize(
    "answer", ["41.2", "either 41.2 or 38.9", "141.2", DONT_KNOW, "", "I'm not sure, 38.9?"]
)
def test_an_outcome_given_the_verdict_is_the_outcome_found_afresh(answer: str) -> None:
    probe = _probe("41.2", "38.9")
    said = ("Use 41.2.",)
    assert outcome(probe, answer, said, is_correct(probe, answer, said)) == outcome(
        probe, answer, said
    )


normalize = answers.normalize
