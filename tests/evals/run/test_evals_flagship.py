"""The flagship at full scale under `full` with the default (fallible) reader: every
technique acts, and accuracy is neither perfect nor the same on every seed. About a minute:
`uv run pytest -m slow tests/evals/run/test_evals_flagship.py`."""

import pytest

from evals import run_cell


@pytest.mark.slow
def test_the_flagship_at_full_scale_exercises_every_technique_and_can_be_wrong() -> None:
    runs = [run_cell("competitive-analysis", "full", {}, seed, "full") for seed in range(3)]
    for r in runs:
        assert r.reader == "fallible" and r.status == "completed"
        assert 0.60 <= r.accuracy <= 0.97, (r.seed, r.accuracy)
        assert r.offloads >= 3 and r.summaries >= 2 and r.skill_reads >= 1
        assert r.subagent_calls >= 3 and r.memory_writes >= 1
        assert r.wrong > 0 and r.dont_know > 0  # wrong is scored apart from "I don't know"
    by_probe = {p.id: p for p in runs[0].probe_results}
    assert by_probe["memory-format"].correct  # week 2 read what week 1 remembered
    assert len({r.accuracy for r in runs}) > 1
