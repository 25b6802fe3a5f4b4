"""Bootstrap intervals, paired differences and ties (pure functions on known data), and how
they reach the eval's summary objects, table and recommendation."""

import argparse
import json
import math
import random
from dataclasses import replace

import pytest
from helpers.evals import result

from evals import recommend
from evals.analysis.metrics import paired_accuracy, summaries
from evals.analysis.stats import (
    Interval,
    bootstrap,
    draws,
    no_difference,
    paired_difference,
    tied,
    trace_bootstrap,
)
from evals.scoring.records import ProbeResult
from flows.cli import add_eval_commands
from flows.cli.options import DEFAULT_SEEDS


def test_the_interval_holds_the_mean_and_stays_within_the_data() -> None:
    ci = bootstrap([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ci.mean == 3.0
    assert 1.0 <= ci.low < 3.0 < ci.high <= 5.0
    assert ci == bootstrap([1.0, 2.0, 3.0, 4.0, 5.0])  # seeded: the same data, the same bytes
    assert bootstrap([0.7]) == Interval(0.7, 0.7, 0.7)
    assert bootstrap([0.4, 0.4, 0.4]) == Interval(0.4, 0.4, 0.4)


def test_the_interval_narrows_as_seeds_are_added() -> None:
    few = bootstrap([0.6, 0.8, 1.0] * 2)
    many = bootstrap([0.6, 0.8, 1.0] * 20)
    assert few.mean == pytest.approx(many.mean)
    assert many.high - many.low < (few.high - few.low) / 2


def test_bad_input_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no values"):
        bootstrap([])
    with pytest.raises(ValueError, match="level"):
        bootstrap([1.0, 2.0], level=95)
    with pytest.raises(ValueError, match="in common"):
        paired_difference({0: 1.0}, {1: 1.0})


def test_identical_arms_tie_and_clearly_different_arms_do_not() -> None:
    base = {seed: 0.5 + 0.05 * (seed % 3) for seed in range(8)}
    same = paired_difference(dict(base), base)
    assert same == Interval(0.0, 0.0, 0.0) and no_difference(same)
    better = {k: v + 0.3 + 0.01 * (k % 2) for k, v in base.items()}
    diff = paired_difference(better, base)
    assert diff.low > 0.25 and not no_difference(diff)
    assert not tied(bootstrap(list(better.values())), bootstrap(list(base.values())))


def test_pairing_sees_a_steady_gain_that_seed_to_seed_spread_hides() -> None:
    base = {0: 0.3, 1: 0.9, 2: 0.5, 3: 0.7, 4: 0.4}
    arm = {k: v + 0.05 for k, v in base.items()}
    assert tied(bootstrap(list(arm.values())), bootstrap(list(base.values())))
    diff = paired_difference(arm, base)
    assert diff.mean == pytest.approx(0.05) and not no_difference(diff)


def test_a_paired_difference_uses_only_the_keys_both_arms_have() -> None:
    diff = paired_difference({0: 1.0, 1: 0.0, 2: 1.0}, {0: 0.0, 2: 0.0, 3: 1.0})
    assert diff == Interval(1.0, 1.0, 1.0)


def probes(*correct: bool) -> tuple[ProbeResult, ...]:
    return tuple(
        ProbeResult(
            id=f"p{i}",
            kind="recall",
            session=1,
            question="?",
            expected="x",
            answer="x" if ok else "y",
            correct=ok,
            status="answered",
        )  # fmt: skip
        for i, ok in enumerate(correct)
    )


def test_one_seed_is_compared_probe_by_probe_on_the_probes_both_asked() -> None:
    full = result("full", probe_results=probes(True, True, False, True))
    # `none` died early: its last probe was never asked, so it is left out of the pairing
    none = result("none", probe_results=probes(True, False, False))
    diff = paired_accuracy([none], [full])
    assert diff is not None and diff.mean == pytest.approx(-1 / 3)
    assert diff.low < diff.mean <= diff.high
    assert paired_accuracy([none], [result("full", seed=7)]) is None


def test_the_recommendation_is_the_cheapest_setting_tied_with_the_best() -> None:
    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate((0.9, 0.8, 0.85))),
        *(result("mask", s, accuracy=a, cost_usd=0.04) for s, a in enumerate((0.8, 0.85, 0.8))),
        *(result("none", s, accuracy=0.3, cost_usd=0.01) for s in range(3)),
    ]
    picked = recommend(runs)
    assert picked is not None and picked.labels == ["mask"]
    assert picked.best.label == "full"
    assert {c.label for c in picked.candidates} == {"full", "mask"}  # none is cheaper, not tied
    text = picked.explain()
    assert "mask" in text and "81.7%" in text and "$0.0400" in text and "full at 85.0%" in text


def test_a_setting_alone_at_the_top_is_explained_without_a_plural() -> None:
    runs = [result("full", 0, accuracy=0.9), result("none", 0, accuracy=0.2, cost_usd=0.01)]
    picked = recommend(runs)
    assert picked is not None and picked.labels == ["full"]
    assert "no other setting ties with it" in picked.explain()
    assert "setting(s)" not in picked.explain()


@pytest.mark.parametrize("order", [("a-arm", "b-arm"), ("b-arm", "a-arm")])
def test_an_exact_tie_is_reported_as_a_tie_whatever_the_names(order: tuple[str, str]) -> None:
    runs = [result(name, s, accuracy=0.8, cost_usd=0.05) for name in order for s in range(2)]
    picked = recommend(runs)
    assert picked is not None and sorted(picked.labels) == ["a-arm", "b-arm"]
    assert picked.explain().startswith("Tied: ")


def test_one_summary_per_arm_with_means_intervals_and_the_paired_difference() -> None:
    runs = [
        *(result("full", s, accuracy=a, cost_usd=c)
          for s, a, c in ((0, 0.9, 0.10), (1, 0.8, 0.12), (2, 0.7, 0.11))),
        *(result("mask", s, accuracy=a, cost_usd=0.05)
          for s, a in ((0, 0.9, ), (1, 0.8), (2, 0.7))),
        *(result("none", s, accuracy=0.2, cost_usd=0.01) for s in range(3)),
    ]  # fmt: skip
    rows = {r["setting"]: r for r in summaries(runs)}
    full = rows["full"]
    assert full["seeds"] == [0, 1, 2] and full["accuracy_mean"] == pytest.approx(0.8)
    lo, hi = full["accuracy_ci95"]
    assert lo < 0.8 < hi
    assert full["cost_usd_mean"] == pytest.approx(0.11)
    assert full["cost_usd_ci95"][0] <= 0.11 <= full["cost_usd_ci95"][1]
    assert full["input_tokens_mean"] == 100_000
    assert rows["mask"]["accuracy_vs_full_ci95"] == [0.0, 0.0] and rows["mask"]["tied_with_full"]
    assert rows["none"]["accuracy_vs_full_mean"] == pytest.approx(-0.6)
    assert not rows["none"]["tied_with_full"]
    assert [r for r, v in rows.items() if v["recommended"]] == ["mask"]
    assert json.dumps(list(rows.values()))  # plain JSON


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    return parser.parse_args(argv)


def test_eval_defaults_to_several_seeds(monkeypatch) -> None:
    asked: dict[str, list[int]] = {}

    def grid(*args, seeds, **kwargs):
        asked["seeds"] = list(seeds)
        raise SystemExit(0)

    monkeypatch.setattr("evals.run.cell.grid", grid)
    args = parse("eval", "--scenario", "support-transcript", "--no-save")
    with pytest.raises(SystemExit):
        args.handler(args)
    assert asked["seeds"] == list(range(DEFAULT_SEEDS)) and DEFAULT_SEEDS >= 5


def test_summary_without_json_is_refused(capsys) -> None:
    from flows.cli import main

    assert main(["eval", "--scenario", "support-transcript", "--summary"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--summary" in err[0]


def test_eval_json_summary_adds_one_object_per_arm(capsys) -> None:
    args = parse("eval", "--scenario", "support-transcript", "--strategy", "full", "--strategy",
                 "none", "--seeds", "2", "--json", "--summary", "--no-save")  # fmt: skip
    assert args.handler(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    runs = [x for x in lines if not x.get("summary")]
    arms = {x["strategy"]: x for x in lines if x.get("summary")}
    assert len(runs) == 4 and set(arms) == {"full", "none"}
    for arm in arms.values():
        assert arm["seeds"] == [0, 1]
        lo, hi = arm["accuracy_ci95"]
        assert lo <= arm["accuracy_mean"] <= hi
        lo, hi = arm["cost_usd_ci95"]
        assert lo <= arm["cost_usd_mean"] <= hi
        assert arm["input_tokens_mean"] > 0
    assert arms["full"]["accuracy_vs_full_ci95"] == [0.0, 0.0]


def test_the_table_shows_intervals_marks_ties_and_says_why(capsys, wide_terminal) -> None:
    from evals.report.eval_table import print_table

    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate((0.9, 0.8, 0.85))),
        *(result("mask", s, accuracy=a, cost_usd=0.04) for s, a in enumerate((0.8, 0.85, 0.8))),
        *(replace(result("none", s), accuracy=0.3, cost_usd=0.01) for s in range(3)),
    ]
    print_table(runs)
    out = capsys.readouterr().out
    (mask,) = [line for line in out.splitlines() if line.startswith("│ mask")]
    assert "recommended tied" in mask and "81.7% (80%-85%)" in mask
    (none,) = [line for line in out.splitlines() if line.startswith("│ none")]
    assert "tied" not in none and "-55.0%" in none
    assert "Recommended: mask" in out


def test_the_report_shows_intervals_the_paired_difference_and_ties() -> None:
    from evals.report.markdown import render_markdown

    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10 + s / 100)
          for s, a in enumerate((0.9, 0.8, 0.85))),
        *(result("mask", s, accuracy=a, cost_usd=0.04) for s, a in enumerate((0.8, 0.85, 0.8))),
        *(result("none", s, accuracy=0.3, cost_usd=0.01) for s in range(3)),
    ]  # fmt: skip
    text = render_markdown(runs, scenario="competitive-analysis", plots={})
    (mask,) = [line for line in text.splitlines() if line.startswith("| **rec.** tied")]
    assert "| mask | 3 | 81.7% (80.0%-85.0%) | - | - | -3.3% (" in mask
    (full,) = [line for line in text.splitlines() if "| full |" in line]
    assert "| tied front | full |" in full and "+0.0% (+0.0% to +0.0%)" in full
    assert "0.1100 (0.1000-0.1200)" in full  # cost with its interval
    (none,) = [line for line in text.splitlines() if "| none |" in line]
    assert "tied" not in none and "-55.0% (" in none
    assert "Recommended: mask" in text


@pytest.mark.parametrize(("bound", "cost"), [("oracle", 0.01), ("none-unbounded", 0.5)])
def test_reference_arms_are_never_recommended(bound: str, cost: float) -> None:
    # The oracle reads the probes to choose what to keep; none-unbounded needs a window the
    # model does not have: bounds to quote against, not settings.
    runs = [
        *(result(bound, s, accuracy=1.0, cost_usd=cost) for s in range(3)),
        *(result("full", s, accuracy=0.9, cost_usd=0.02) for s in range(3)),
        *(result("mask", s, accuracy=0.4, cost_usd=0.01) for s in range(3)),
    ]
    picked = recommend(runs)
    assert picked is not None and picked.labels == ["full"]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 101, 1000, 2**31 + 5, 2**40 + 3])
def test_draws_are_randrange_s_numbers_in_randrange_s_order(n: int) -> None:
    expected = random.Random(n)
    assert draws(random.Random(n), n, 5_000) == [expected.randrange(n) for _ in range(5_000)]
    assert draws(random.Random(0), n, 0) == []


def test_a_trace_interval_is_the_one_one_randrange_call_per_pick_gave() -> None:
    traces = {f"t{i}": [float((i * j) % 3 == 0) for j in range(1 + i % 5)] for i in range(37)}
    traces["odd"] = [0.25, 0.5]
    groups = list(traces.values())
    sums, sizes = [math.fsum(g) for g in groups], [len(g) for g in groups]
    rng, n = random.Random(3), len(groups)
    means = []
    for _ in range(500):
        picks = [rng.randrange(n) for _ in range(n)]
        means.append(math.fsum(sums[i] for i in picks) / sum(sizes[i] for i in picks))
    means.sort()
    mean = math.fsum(sums) / sum(sizes)
    got = trace_bootstrap(traces, resamples=500, seed=3)
    assert got == Interval(mean, min(means[12], mean), max(means[487 - 1], mean))
