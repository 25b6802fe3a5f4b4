"""The statistics never contradict themselves: `tied` agrees with the paired difference, a
lone setting is not "recommended", a lead is not called settled when subsets of the seeds
disagree, an arm that always overflowed is off the front, and a sanity bound that cannot
fail is not counted as a pass."""

from helpers.evals import result

from evals import pareto_front, recommend
from evals.analysis.metrics import aggregate
from evals.analysis.stability import Stability
from evals.gate.sanity import SanityResult

FULL = (0.9, 0.7, 0.8, 0.6, 0.85)


def test_a_setting_whose_paired_difference_excludes_zero_is_not_tied(capsys, wide_terminal) -> None:
    # Seed to seed the spread is wide, so the intervals overlap; seed by seed `summarize` is
    # always 10 points under `full`: the paired difference (-10, -10 to -10) excludes 0.
    from evals.report.eval_table import print_table

    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate(FULL)),
        *(result("summarize", s, accuracy=a - 0.1, cost_usd=0.05) for s, a in enumerate(FULL)),
    ]
    picked = recommend(runs)
    assert picked is not None and picked.labels == ["full"]
    assert [c.label for c in picked.candidates] == ["full"]
    print_table(runs)
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("│ summarize")]
    assert "-10.0%" in row and "tied" not in row


def test_nothing_is_recommended_among_fewer_than_two_settings(capsys) -> None:
    from evals.report.eval_table import print_table

    runs = [result("full", s, accuracy=a) for s, a in enumerate(FULL)]
    assert recommend(runs) is None
    print_table(runs)
    out = capsys.readouterr().out
    assert "recommended" not in out.lower()


def test_an_unstable_lead_is_not_called_settled() -> None:
    runs = [
        *(result("full", s, accuracy=0.9, cost_usd=0.10) for s in range(5)),
        *(result("mask", s, accuracy=0.5, cost_usd=0.05) for s in range(5)),
    ]
    picked = recommend(runs)
    assert picked is not None and picked.labels == ["full"] and len(picked.candidates) == 1
    assert "no other setting ties with it" in picked.explain()
    unstable = Stability(("full",), 4, 5, 5, 3, {"mask": 2})
    text = f"{picked.explain(unstable=not unstable.stable)} {unstable.explain()}"
    assert "Unstable" in text and "no other setting" not in text


def test_the_sweep_says_the_same_as_its_stability() -> None:
    from flows.sweep import SweepResult, render_front

    runs = [
        *(result("full", s, accuracy=0.9, cost_usd=0.10) for s in range(5)),
        *(result("mask", s, accuracy=0.5, cost_usd=0.05) for s in range(5)),
    ]
    settings = aggregate(runs)
    unstable = Stability(("full",), 4, 5, 5, 3, {"mask": 2})
    outcome = SweepResult(runs, settings, pareto_front(settings), recommend(runs), "b", "db",
                          unstable)  # fmt: skip
    text = render_front(outcome)
    assert "Unstable" in text and "no other setting" not in text
    assert "no other setting" not in (outcome.explain() or "")


def test_an_arm_that_overflowed_on_every_run_is_never_on_the_front() -> None:
    runs = [
        *(result("full", s, accuracy=0.8, cost_usd=0.10) for s in range(3)),
        *(result("none", s, accuracy=0.1, cost_usd=0.01, overflowed=True) for s in range(3)),
        *(result("mask", s, accuracy=0.3, cost_usd=0.02, overflowed=s == 0) for s in range(3)),
    ]
    front = [s.label for s in pareto_front(runs)]
    assert "none" not in front
    assert front == ["mask", "full"]  # overflowing on some runs only still counts


def test_a_bound_that_cannot_fail_is_not_a_pass() -> None:
    vacuous = SanityResult("support-transcript", "empty-window", 1.0, 1.0, (), 10)
    real = SanityResult("support-transcript", "blank-tools", 0.2, 0.3, (), 10)
    assert vacuous.ok and not vacuous.checked  # not a failure, but not a pass either
    assert vacuous.line().startswith("n/a") and "nothing to check" in vacuous.line()
    assert vacuous.to_dict()["checked"] is False
    assert real.checked and real.line().startswith("ok")
