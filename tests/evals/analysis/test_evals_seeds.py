"""Seeds (issue 20, item 8): `--seeds` takes a count, a list or a range; a recommendation
re-made on subsets of the seeds is flagged unstable when a single seed decides it, stable when
every subset agrees; too few seeds are said to be few."""

from __future__ import annotations

import argparse

import pytest
from helpers.evals import result

from evals.analysis.metrics import recommend
from evals.analysis.stability import stability
from flows.cli import add_eval_commands
from flows.cli.options import seeds_arg


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("3", (0, 1, 2)), ("10,11,12", (10, 11, 12)), ("10-14", (10, 11, 12, 13, 14)),
     ("0-2,7", (0, 1, 2, 7)), ("5-5", (5,))],
)  # fmt: skip
def test_seeds_are_a_count_a_list_or_ranges(text: str, seeds: tuple[int, ...]) -> None:
    assert seeds_arg(text).resolve() == seeds
    assert str(seeds_arg(text)) == text


def test_a_count_starts_where_the_command_says_and_a_list_stays_put() -> None:
    assert seeds_arg("2").resolve(start=5) == (5, 6)
    assert seeds_arg("1,3").resolve(start=5) == (1, 3)


def test_eval_runs_the_seeds_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def grid(*args: object, seeds: list[int], **kwargs: object) -> None:
        asked.extend(seeds)
        raise SystemExit(0)

    monkeypatch.setattr("evals.run.cell.grid", grid)
    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    args = parser.parse_args(["eval", "--scenario", "support-transcript", "--seeds", "10-12,20"])
    with pytest.raises(SystemExit):
        args.handler(args)
    assert asked == [10, 11, 12, 20]


def runs(cheap: list[float], dear: list[float]) -> list:
    return [
        *(result("mask", s, accuracy=a, cost_usd=0.04) for s, a in enumerate(cheap)),
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate(dear)),
    ]


def test_a_recommendation_one_seed_decides_is_unstable() -> None:
    # `full` beats `mask` on four seeds and falls on the fifth: with all five their intervals
    # overlap, so the cheaper `mask` is recommended; without seed 4, `full` wins outright.
    results = runs([0.8] * 5, [1.0, 1.0, 1.0, 1.0, 0.2])
    assert recommend(results).labels == ["mask"]
    verdict = stability(results)
    assert verdict is not None and not verdict.stable
    assert (verdict.agree, verdict.subsets, verdict.others) == (4, 5, {"full": 1})
    assert verdict.explain().startswith("Unstable: leaving one seed out, the recommendation is")
    assert verdict.to_dict()["stable"] is False


def test_a_recommendation_every_subset_agrees_on_is_stable() -> None:
    verdict = stability(runs([0.5, 0.55, 0.5, 0.45, 0.5], [0.9] * 5))
    assert verdict is not None and verdict.stable and verdict.picked == ("full",)
    assert verdict.explain().startswith("Stable:")


def test_subsets_of_any_size_and_the_measured_two_seed_split() -> None:
    results = runs([0.8] * 5, [1.0, 1.0, 1.0, 1.0, 0.2])
    verdict = stability(results, size=2)
    assert verdict is not None and verdict.subsets == 10  # every pair of the five seeds
    assert "subsets of 2 of the 5 seeds" in verdict.explain()
    with pytest.raises(ValueError, match="subset size must be 1 to 4, got 5"):
        stability(results, size=5)


def test_one_seed_has_no_subsets_to_compare() -> None:
    assert stability(runs([0.8], [0.9])) is None


def test_few_seeds_say_an_interval_is_their_spread() -> None:
    three = recommend(runs([0.8, 0.7, 0.8], [0.9, 0.9, 0.8]))
    assert "3 seeds: an interval is little more than the spread of the values" in three.explain()
    five = recommend(runs([0.8] * 5, [0.9] * 5))
    assert "spread" not in five.explain()
