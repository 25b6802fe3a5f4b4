"""From runs to numbers across seeds: means with bootstrap confidence intervals; the Pareto
front of accuracy against cost; a recommended setting (one run's numbers:
evals/scoring/results.py)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.analysis.stats import DEFAULT_SEEDS, Interval, bootstrap, paired_difference
from evals.scenarios.base import PROBE_KINDS
from evals.scoring.availability import VERDICTS
from evals.scoring.results import EvalResult, params_key


@dataclass(frozen=True)
class Aggregate:
    """One setting over its seeds."""

    scenario: str
    strategy: str
    params: dict[str, Any]
    scale: str
    model: str
    reader: str
    seeds: tuple[int, ...]
    accuracy: Interval
    input_tokens: Interval
    cost_usd: Interval
    accuracy_by_kind: dict[str, float | None]
    cached_input_tokens: float
    peak_context_tokens: float
    model_calls: float
    retrieval_calls: float
    summarizer_tokens: float
    subagent_tokens: float
    overflow_rate: float
    wrong: float
    simulated: bool
    lost_to_overflow: float = 0.0  # probes a run lost to overflow, mean over seeds
    reached_accuracy: Interval | None = None  # accuracy over the probes reached
    # mean cost with cache reads at other shares of the input price (EvalResult's)
    cost_by_cache_price: dict[str, float] = field(default_factory=dict)
    # Means over seeds of the accuracy on data-derived probes and on the rest (the data-free
    # floor, what passes without reading anything); None where a run had none of them.
    data_accuracy: float | None = None
    data_free_accuracy: float | None = None
    # Means over seeds of the availability shares (in_view, one_read, lost; None where no run
    # had a verdict), the carried probes scored apart, and the retrievals that found the value
    # (summed over seeds: found, of probes that retrieved).
    availability: dict[str, float | None] = field(default_factory=dict)
    carried_probes: float = 0.0
    carried_accuracy: float | None = None
    retrievals_found: tuple[int, int] = (0, 0)

    @property
    def label(self) -> str:
        if not self.params:
            return self.strategy
        settings = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.strategy} [{settings}]"


def aggregate(results: Iterable[EvalResult]) -> list[Aggregate]:
    """Group runs by setting (scenario, strategy, params, scale, model, reader), in first-seen
    order."""
    groups: dict[tuple, list[EvalResult]] = {}
    for r in results:
        groups.setdefault(r.config, []).append(r)
    out = []
    for runs in groups.values():
        first = runs[0]

        def mean(attr: str, rs: list[EvalResult] = runs) -> float:
            return statistics.fmean(getattr(r, attr) for r in rs)

        kinds: dict[str, float | None] = {}
        for kind in PROBE_KINDS:
            vals = [r.accuracy_by_kind.get(kind) for r in runs]
            present = [v for v in vals if v is not None]
            kinds[kind] = statistics.fmean(present) if present else None
        out.append(
            Aggregate(
                scenario=first.scenario, strategy=first.strategy, params=first.params,
                scale=first.scale, model=first.model, reader=first.reader,
                seeds=tuple(r.seed for r in runs),
                accuracy=bootstrap([r.accuracy for r in runs]),
                input_tokens=bootstrap([float(r.input_tokens) for r in runs]),
                cost_usd=bootstrap([r.cost_usd for r in runs]),
                accuracy_by_kind=kinds,
                cached_input_tokens=mean("cached_input_tokens"),
                peak_context_tokens=mean("peak_context_tokens"),
                model_calls=mean("model_calls"), retrieval_calls=mean("retrieval_calls"),
                summarizer_tokens=statistics.fmean(
                    r.summarizer_input_tokens + r.summarizer_output_tokens for r in runs),
                subagent_tokens=statistics.fmean(
                    r.subagent_input_tokens + r.subagent_output_tokens for r in runs),
                overflow_rate=statistics.fmean(float(r.overflowed) for r in runs),
                wrong=mean("wrong"),
                simulated=first.simulated,
                lost_to_overflow=mean("lost_to_overflow"),
                reached_accuracy=bootstrap([r.reached_accuracy for r in runs]),
                cost_by_cache_price=_mean_costs([r.cost_by_cache_price() for r in runs]),
                data_accuracy=_mean_of(r.data_accuracy for r in runs),
                data_free_accuracy=_mean_of(r.data_free_accuracy for r in runs),
                availability={v: _mean_of(getattr(r, v) for r in runs) for v in VERDICTS},
                carried_probes=mean("carried_probes"),
                carried_accuracy=_mean_of(r.carried_accuracy for r in runs),
                retrievals_found=(sum(r.retrieval_found for r in runs),
                                  sum(r.retrieved_probes for r in runs)),
            )
        )  # fmt: skip
    return out


def _mean_costs(costs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each cache share's cost over runs that all have it."""
    shares = [k for k in costs[0] if all(k in c for c in costs)] if costs else []
    return {k: statistics.fmean(c[k] for c in costs) for k in shares}


def _mean_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _aggregates(results: Sequence[EvalResult | Aggregate]) -> list[Aggregate]:
    runs = [r for r in results if isinstance(r, EvalResult)]
    return [r for r in results if isinstance(r, Aggregate)] + aggregate(runs)


def pareto_front(results: Sequence[EvalResult | Aggregate]) -> list[Aggregate]:
    """Settings no other beats on both accuracy (higher) and cost (lower), cheapest first,
    among those with at least one run that did not overflow. Runs of several seeds are
    aggregated first; compare settings of one scenario at a time."""
    # A setting that overflowed on every run never finished one: it is no trade-off.
    points = [p for p in _aggregates(results) if p.overflow_rate < 1.0]
    front = [
        p
        for p in points
        if not any(
            q.accuracy.mean >= p.accuracy.mean
            and q.cost_usd.mean <= p.cost_usd.mean
            and (q.accuracy.mean > p.accuracy.mean or q.cost_usd.mean < p.cost_usd.mean)
            for q in points
        )
    ]
    return sorted(front, key=lambda p: (p.cost_usd.mean, -p.accuracy.mean, p.label))


@dataclass(frozen=True)
class Recommendation:
    """The cheapest setting tied with the best one, and why. `picks` holds more than one
    setting only when they tie exactly (same mean accuracy and cost): they are reported
    together, never split by their names. `paired`: the ties were judged on paired
    differences (the runs were given), not on overlapping intervals."""

    picks: tuple[Aggregate, ...]
    best: Aggregate
    candidates: tuple[Aggregate, ...]
    paired: bool = False

    @property
    def labels(self) -> list[str]:
        return [p.label for p in self.picks]

    def explain(self, *, unstable: bool = False) -> str:
        """Why these picks. `unstable`: subsets of the seeds pick otherwise (stability.py), so
        a lead over the others is not claimed as settled."""
        pick = self.picks[0]
        names = " and ".join(self.labels)
        head = (
            f"Tied: {names} (each {_acc(pick)} at ${pick.cost_usd.mean:.4f} a run)"
            if len(self.picks) > 1
            else f"Recommended: {names}, {_acc(pick)} at ${pick.cost_usd.mean:.4f} a run "
            f"({pick.input_tokens.mean:,.0f} input tokens)"
        )
        tie = (
            "whose paired difference with it holds 0"
            if self.paired
            else ("whose intervals overlap it")
        )
        if self.best.label in self.labels and len(self.candidates) == 1:
            why = (
                "the best accuracy over all the seeds, a lead that does not hold on every "
                "subset of them"
                if unstable
                else "the best accuracy, and no other setting ties with it"
            )
        elif self.best.label in self.labels:
            why = (
                f"the best accuracy, and the cheapest of the {len(self.candidates)} settings {tie}"
            )
        else:
            link = (
                "its paired difference with the best holds 0"
                if self.paired
                else ("its interval overlaps the best")
            )
            why = (
                f"{link}, {self.best.label} at {_acc(self.best)} for "
                f"${self.best.cost_usd.mean:.4f}; cheapest of {len(self.candidates)} tied settings"
            )
        seeds = min(len(c.seeds) for c in self.candidates)
        note = ""
        if seeds < 2:
            note = "; one seed: intervals are points, run more seeds"
        elif seeds < DEFAULT_SEEDS:  # two or three values: the interval is their spread
            note = (
                f"; {seeds} seeds: an interval is little more than the spread of the values, "
                f"run {DEFAULT_SEEDS} or more"
            )
        return f"{head}: {why}{note}."


def _acc(s: Aggregate) -> str:
    a = s.accuracy
    return f"{a.mean:.1%} (95% CI {a.low:.1%}-{a.high:.1%})"


# Reference arms, not settings a user can run: the `oracle` reads the probes to choose what to
# keep, and `none-unbounded` needs a window the scenario's model does not have.
BOUNDS = frozenset({"oracle", "none-unbounded"})


def recommend(results: Sequence[EvalResult | Aggregate]) -> Recommendation | None:
    """The cheapest setting tied with the best one: with the runs given, a setting ties when
    its paired accuracy difference with the best holds 0 (intervals overlapping where they
    share no seed); with aggregates alone, when the intervals overlap. Settings whose cost,
    accuracy and tokens are all equal are all picked (an exact tie). `BOUNDS` are never
    recommended, and nothing is among fewer than two settings: there is no choice to make."""
    points = [p for p in _aggregates(results) if p.strategy not in BOUNDS]
    if len(points) < 2:
        return None
    runs: dict[tuple, list[EvalResult]] = {}
    for r in results:
        if isinstance(r, EvalResult) and r.strategy not in BOUNDS:
            runs.setdefault(r.config, []).append(r)
    top = max(p.accuracy.mean for p in points)
    leaders = [p for p in points if p.accuracy.mean == top]

    def ties(p: Aggregate, best: Aggregate) -> bool:
        mine, theirs = runs.get(_config(p), []), runs.get(_config(best), [])
        diff = paired_accuracy(mine, theirs) if _pairable(mine, theirs) else None
        return p.accuracy.overlaps(best.accuracy) if diff is None else diff.contains(0.0)

    candidates = [p for p in points if any(ties(p, b) for b in leaders)]

    def key(p: Aggregate) -> tuple[float, float, float]:
        return (p.cost_usd.mean, -p.accuracy.mean, p.input_tokens.mean)

    cheapest = min(key(p) for p in candidates)
    picks = tuple(p for p in candidates if key(p) == cheapest)
    best = min(leaders, key=key)
    return Recommendation(picks, best, tuple(candidates), paired=bool(runs))


def _pairable(arm: Sequence[EvalResult], base: Sequence[EvalResult]) -> bool:
    """Whether a paired difference has a spread to judge: two shared seeds, or one whose
    probes both runs hold (one seed's accuracies alone give a single difference)."""
    shared = {r.seed for r in arm} & {r.seed for r in base}
    if len(shared) > 1:
        return True
    ids = [{p.id for p in r.probe_results} for r in (*arm, *base) if r.seed in shared]
    return len(ids) == 2 and bool(ids[0] & ids[1])


def _config(s: Aggregate) -> tuple:
    """The `EvalResult.config` of the runs behind `s`."""
    return (s.scenario, s.strategy, params_key(s.params), s.scale, s.model, s.reader)


def paired_accuracy(arm: Sequence[EvalResult], base: Sequence[EvalResult]) -> Interval | None:
    """Accuracy of `arm` minus `base` on the same seeds and the same probes, with the
    interval of the difference: per seed when both share two or more seeds, per probe on a
    single shared seed. None when they share no seed."""
    by_seed = {r.seed: r for r in base}
    pairs = [(r, by_seed[r.seed]) for r in arm if r.seed in by_seed]
    if not pairs:
        return None
    if len(pairs) == 1:
        a, b = pairs[0]
        mine = {p.id: float(p.correct) for p in a.probe_results}
        theirs = {p.id: float(p.correct) for p in b.probe_results}
        if mine.keys() & theirs.keys():
            return paired_difference(mine, theirs)
    return paired_difference(
        {a.seed: _accuracy_on(a, b) for a, b in pairs},
        {a.seed: _accuracy_on(b, a) for a, b in pairs},
    )


def _accuracy_on(run: EvalResult, other: EvalResult) -> float:
    """`run`'s accuracy on the probes both runs hold (all of them when probe rows are
    missing, as for runs loaded back from the store)."""
    shared = {p.id for p in other.probe_results}
    mine = [p for p in run.probe_results if p.id in shared]
    if not mine:
        return run.accuracy
    return sum(p.correct for p in mine) / len(mine)


def summaries(
    results: Sequence[EvalResult],
    *,
    base: str = "full",
    base_params: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One object per setting: means and 95% intervals over seeds, the paired accuracy
    difference against `base` (its setting `base_params`, by default its default setting;
    same scenario, scale, model and reader), and whether the two tie."""
    groups: dict[tuple, list[EvalResult]] = {}
    for r in results:
        groups.setdefault(r.config, []).append(r)
    settings = aggregate(results)
    picked = recommend(settings)
    out = []
    for s, runs in zip(settings, groups.values(), strict=True):
        base_key = (s.scenario, base, params_key(base_params or {}), s.scale, s.model, s.reader)
        diff = paired_accuracy(runs, groups[base_key]) if base_key in groups else None
        out.append(
            {
                "scenario": s.scenario, "setting": s.label, "strategy": s.strategy,
                "params": s.params, "scale": s.scale, "model": s.model, "reader": s.reader,
                "seeds": list(s.seeds),
                "accuracy_mean": round(s.accuracy.mean, 6),
                "data_accuracy_mean": _round(s.data_accuracy),
                "data_free_accuracy_mean": _round(s.data_free_accuracy),
                "accuracy_ci95": _rounded(s.accuracy, 6),
                "input_tokens_mean": round(s.input_tokens.mean, 1),
                "input_tokens_ci95": _rounded(s.input_tokens, 1),
                "cost_usd_mean": round(s.cost_usd.mean, 6),
                "cost_usd_ci95": _rounded(s.cost_usd, 6),
                "cost_by_cache_price_mean": {
                    k: round(v, 6) for k, v in s.cost_by_cache_price.items()
                },
                "overflow_rate": round(s.overflow_rate, 6),
                "lost_to_overflow_mean": round(s.lost_to_overflow, 6),
                "reached_accuracy_mean": None if s.reached_accuracy is None
                else round(s.reached_accuracy.mean, 6),
                "reached_accuracy_ci95": None if s.reached_accuracy is None
                else _rounded(s.reached_accuracy, 6),
                f"accuracy_vs_{base}_mean": None if diff is None else round(diff.mean, 6),
                f"accuracy_vs_{base}_ci95": None if diff is None else _rounded(diff, 6),
                f"tied_with_{base}": None if diff is None else diff.contains(0.0),
                "recommended": picked is not None and s.label in picked.labels,
                "availability_mean": {k: _round(v) for k, v in s.availability.items()},
                "carried_probes_mean": round(s.carried_probes, 6),
                "carried_accuracy_mean": _round(s.carried_accuracy),
            }
        )  # fmt: skip
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _rounded(interval: Interval, digits: int) -> list[float]:
    return [round(v, digits) for v in interval.as_list()]
