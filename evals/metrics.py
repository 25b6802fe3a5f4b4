"""From a replay to numbers: one `EvalResult` per run; across seeds, means with bootstrap
confidence intervals; the Pareto front of accuracy against cost; a recommended setting."""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.replay import ProbeResult, Replay
from evals.scenarios.base import PROBE_KINDS


@dataclass(frozen=True)
class EvalResult:
    """One run: a scenario under one strategy, parameter setting and seed.

    Tokens are summed over every model call of the run: the main agent's, the summarizer's
    and the subagents' (also reported apart). `cached_input_tokens` are the prefix each
    request shares with the previous one of its conversation. `simulated` labels results of
    the simulated model, which must never be set beside published numbers as if comparable;
    `reader` says how it read ("fallible" by default, "ideal" never misses what is in view).
    `wrong` counts confident wrong answers, `dont_know` the "I don't know"s. `offloads`,
    `summaries`, `skill_reads`, `subagent_calls`, `memory_writes`: how often each technique
    acted.
    In live mode `cost_usd` prices every call at the real model's rates (replayed steps as if
    sent) and `live_cost_usd` is what the real model's own calls cost (with a judge, its calls
    too). A capped window (`--window`) is recorded in `params` as "window"."""

    scenario: str
    strategy: str
    params: dict[str, Any]
    seed: int
    scale: str
    model: str
    reader: str
    accuracy: float
    probes: int
    correct: int
    wrong: int
    dont_know: int
    accuracy_by_kind: dict[str, float | None]
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    peak_context_tokens: int
    model_calls: int
    retrieval_calls: int
    main_input_tokens: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    subagent_input_tokens: int
    subagent_output_tokens: int
    summaries: int
    offloads: int
    skill_reads: int
    subagent_calls: int
    memory_writes: int
    overflowed: bool
    overflow_step: int | None
    overflow_turn: int | None
    subagent_overflows: int
    cost_usd: float
    live_cost_usd: float
    status: str
    simulated: bool
    wall_s: float
    probe_results: tuple[ProbeResult, ...] = field(default=(), repr=False)

    def to_dict(self, *, probes: bool = False, wall: bool = True) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "probe_results"}
        if not wall:
            out.pop("wall_s")
        if probes:
            out["probe_results"] = [p.to_dict() for p in self.probe_results]
        return out

    def to_json(self, *, probes: bool = False, wall: bool = True) -> str:
        """Stable JSON: the same run gives the same bytes (with `wall=False`)."""
        return json.dumps(self.to_dict(probes=probes, wall=wall), sort_keys=True)

    @property
    def config(self) -> tuple[str, str, str, str, str, str]:
        """What identifies a setting across seeds."""
        return (self.scenario, self.strategy, params_key(self.params), self.scale, self.model,
                self.reader)  # fmt: skip


def params_key(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, default=str)


def from_replay(
    replay: Replay,
    *,
    scenario: str,
    strategy: str,
    params: Mapping[str, Any],
    seed: int,
    scale: str,
    model: str,
    reader: str,
    wall_s: float,
) -> EvalResult:
    probes = replay.probes
    correct = sum(p.correct for p in probes)
    by_kind: dict[str, float | None] = {}
    for kind in PROBE_KINDS:
        mine = [p for p in probes if p.kind == kind]
        by_kind[kind] = round(sum(p.correct for p in mine) / len(mine), 6) if mine else None

    def total(attr: str, *roles: str) -> int:
        return int(sum(u[attr] or 0 for r, u in replay.usage.items() if not roles or r in roles))

    cost = math.fsum(float(u["cost_usd"]) for u in replay.usage.values())
    live = math.fsum(c.cost_usd for c in replay.ledger if c.role == "delegate")
    main = replay.usage.get("main", {})
    if replay.error:
        status = "budget_exceeded"
    elif replay.overflow_turn is not None:
        status = "overflow"
    else:
        status = "completed" if set(replay.statuses) <= {"completed"} else "max_steps"
    return EvalResult(
        scenario=scenario, strategy=strategy, params=dict(sorted(params.items())), seed=seed,
        scale=scale, model=model, reader=reader,
        accuracy=round(correct / len(probes), 6) if probes else 0.0,
        probes=len(probes), correct=correct,
        wrong=sum(p.outcome == "wrong" for p in probes),
        dont_know=sum(p.outcome == "unknown" for p in probes), accuracy_by_kind=by_kind,
        input_tokens=total("input_tokens"), output_tokens=total("output_tokens"),
        cached_input_tokens=total("cached_tokens"),
        cache_write_tokens=total("cache_write_tokens"),
        peak_context_tokens=int(main.get("peak_context_tokens") or 0),
        model_calls=total("calls"),
        retrieval_calls=sum(c.retrieval_calls for c in replay.ledger),
        main_input_tokens=total("input_tokens", "main"),
        summarizer_input_tokens=total("input_tokens", "summarizer"),
        summarizer_output_tokens=total("output_tokens", "summarizer"),
        subagent_input_tokens=total("input_tokens", "subagent"),
        subagent_output_tokens=total("output_tokens", "subagent"),
        summaries=replay.summaries, offloads=replay.offloads, skill_reads=replay.skill_reads,
        subagent_calls=replay.subagent_calls, memory_writes=replay.memory_writes,
        overflowed=replay.overflow_turn is not None, overflow_step=replay.overflow_step,
        overflow_turn=replay.overflow_turn, subagent_overflows=replay.subagent_overflows,
        cost_usd=round(cost, 6),
        live_cost_usd=round(live, 6),
        status=status,
        simulated=model == "simulated", wall_s=round(wall_s, 3),
        probe_results=tuple(probes),
    )  # fmt: skip


# -- across seeds --------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float


def bootstrap(values: Sequence[float], *, resamples: int = 2_000, level: float = 0.95) -> Interval:
    """Mean and percentile bootstrap interval over seeds (a fixed resampling seed, so the
    interval is as reproducible as the runs)."""
    if not values:
        raise ValueError("no values to bootstrap")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Interval(mean, mean, mean)
    r = random.Random(0)
    n = len(values)
    means = sorted(statistics.fmean(r.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - level) / 2
    return Interval(mean, means[int(tail * resamples)], means[int((1 - tail) * resamples) - 1])


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
            )
        )  # fmt: skip
    return out


def _aggregates(results: Sequence[EvalResult | Aggregate]) -> list[Aggregate]:
    runs = [r for r in results if isinstance(r, EvalResult)]
    return [r for r in results if isinstance(r, Aggregate)] + aggregate(runs)


def pareto_front(results: Sequence[EvalResult | Aggregate]) -> list[Aggregate]:
    """Settings no other beats on both accuracy (higher) and cost (lower), cheapest first.
    Runs of several seeds are aggregated first; compare settings of one scenario at a time."""
    points = _aggregates(results)
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


def recommend(
    results: Sequence[EvalResult | Aggregate], *, tolerance: float = 0.01
) -> Aggregate | None:
    """The cheapest setting whose accuracy is within `tolerance` (1 pp) of the best."""
    points = _aggregates(results)
    if not points:
        return None
    best = max(p.accuracy.mean for p in points)
    close = [p for p in points if p.accuracy.mean >= best - tolerance - 1e-12]
    return min(close, key=lambda p: (p.cost_usd.mean, p.input_tokens.mean, p.label))
