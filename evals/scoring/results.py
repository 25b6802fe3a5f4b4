"""One run's numbers: `EvalResult`, read from a replay by `from_replay` (across seeds, see
evals/analysis/metrics.py)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.scenarios.base import PROBE_KINDS, data_derived
from evals.scoring.availability import shares
from evals.scoring.records import ProbeResult, Replay
from harness.errors import UnknownModelError
from harness.profiles import get_profile

# Cached-read prices as a share of the input price, at which every cost is also reported: the
# published figures run from 0.1x to 0.5x, and the simulated profile's 0.05x is below them all.
# The cheaper a cache read, the better a strategy that keeps one long stable prefix looks
# against one that rewrites it (masking at batch=1 is +126% against raw at 0.05x, -43% at 0.5x).
CACHE_PRICE_SHARES = (0.1, 0.5)


@dataclass(frozen=True)
class EvalResult:
    """One run: a scenario under one strategy, parameter setting and seed.

    Tokens are summed over every model call of the run: the main agent's, the summarizer's
    and the subagents' (also reported apart). `cached_input_tokens` are the prefix each
    request shares with the previous one of its conversation. `simulated` labels results of
    the simulated model, which must never be set beside published numbers as if comparable;
    `reader` says how it read ("fallible" by default, "ideal" never misses what is in view).
    `wrong` counts confident wrong answers, `dont_know` the "I don't know"s.
    `retrieval_calls`: the calls made to find an answer not in view; `tool_recalls`: those
    of them that ran a domain tool again (re-read an article, re-queried an export). `offloads`,
    `summaries`, `skill_reads`, `subagent_calls`, `memory_writes`: how often each technique
    acted.
    `lost_to_overflow`: probes never asked because the run died on a request over the window
    (they count as wrong in `accuracy`); `reached_accuracy`: accuracy over the probes the run
    did reach, what the strategy's retention explains. A strategy that only avoids dying
    shows in the first; one that keeps more of what it read, in the second.
    In live mode `cost_usd` prices every call at the real model's rates (replayed steps as if
    sent) and `live_cost_usd` is what the real model's own calls cost (with a judge, its calls
    too). A capped window (`--window`) is recorded in `params` as "window".
    `data_accuracy` is the accuracy over the `data_probes`, those answered from data (a tool
    result or pasted user data); the others (the plan's own words, memory, a skill) pass with
    no data at all, and `data_free_accuracy` is theirs: the floor a run scores without reading
    anything. Quote `data_accuracy` beside `accuracy`, so that floor does not blend in.
    Carried probes (the recorded user or agent restated the value between its source and its
    use, so it stays in view whatever the strategy did) are scored apart: every accuracy and
    count above is over the others; `carried_probes` and `carried_accuracy` are theirs.
    `in_view`, `one_read`, `lost`: the shares of those probes whose value was, at the point of
    use, in the request, one read away in a saved file the request names, or neither
    (evals/scoring/availability.py; no reader involved; file checks have no verdict).
    `retrieved_probes`: probes whose answer made retrieval calls; `retrieval_found`: those
    whose retrievals brought the value back. `replay_digest` fingerprints every model call's
    tokens and every answer: two arms with the same digest replayed identically.
    `thresholds`: the absolute-token thresholds the arm ran with where `--window` scaled them
    (evals/run/thresholds.py), else empty.
    `train_seeds`: for a run of `ctxlab eval --tuned`, the seeds its setting was chosen on
    (never the run's own); empty for a setting that was given, not tuned. `to_dict` adds
    `tuned`, whether it was, and `cost_by_cache_price` (see `cost_by_cache_price`). `weeks`:
    for a recurring scenario (`--set weeks=N`), one entry a week:
    `{week, memory_tokens, input_tokens, cost_usd, accuracy, probes}`."""

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
    tool_recalls: int
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
    lost_to_overflow: int = 0
    reached_accuracy: float = 0.0
    train_seeds: tuple[int, ...] = ()
    data_probes: int = 0
    data_accuracy: float | None = None
    data_free_accuracy: float | None = None
    carried_probes: int = 0
    carried_accuracy: float | None = None
    in_view: float | None = None
    one_read: float | None = None
    lost: float | None = None
    retrieved_probes: int = 0
    retrieval_found: int = 0
    replay_digest: str = ""
    thresholds: dict[str, Any] = field(default_factory=dict)
    probe_results: tuple[ProbeResult, ...] = field(default=(), repr=False)
    # A recurring scenario's numbers week by week (evals/run/replay.py `week_numbers`).
    weeks: tuple[dict[str, Any], ...] = ()

    def to_dict(self, *, probes: bool = False, wall: bool = True) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("probe_results", "weeks")}
        if self.weeks:  # only a recurring scenario's lines carry them
            out["weeks"] = list(self.weeks)
        out["train_seeds"] = list(self.train_seeds)
        out["tuned"] = bool(self.train_seeds)
        out["cost_by_cache_price"] = self.cost_by_cache_price()
        if not wall:
            out.pop("wall_s")
        if probes:
            out["probe_results"] = [p.to_dict() for p in self.probe_results]
        return out

    def to_json(self, *, probes: bool = False, wall: bool = True) -> str:
        """Stable JSON: the same run gives the same bytes (with `wall=False`)."""
        return json.dumps(self.to_dict(probes=probes, wall=wall), sort_keys=True)

    def cost_by_cache_price(self) -> dict[str, float]:
        """`cost_usd` with the cached input tokens priced at each of `CACHE_PRICE_SHARES` of the
        model's input price, and at the profile's own share, keyed by the share ("0.05",
        "0.1", "0.5"). Empty when the model has no known profile or no input price."""
        try:
            profile = get_profile(self.model)
        except UnknownModelError:
            return {}
        if profile.input <= 0:
            return {}
        own = round(profile.cached_input / profile.input, 6)
        out = {f"{own:g}": self.cost_usd}
        for share in CACHE_PRICE_SHARES:
            delta = self.cached_input_tokens * (share * profile.input - profile.cached_input)
            out[f"{share:g}"] = round(self.cost_usd + delta / 1_000_000, 6)
        return out

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
    thresholds: Mapping[str, Any] | None = None,
) -> EvalResult:
    probes = [p for p in replay.probes if not p.carried]
    carried = [p for p in replay.probes if p.carried]
    available = shares([p.availability for p in probes])
    retrieved = [p for p in probes if p.retrieval_found is not None]
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
    reached = [p for p in probes if p.status != "not_reached"]
    data = [p for p in probes if data_derived(p.source)]
    free = [p for p in probes if not data_derived(p.source)]
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
        tool_recalls=sum(c.tool_recalls for c in replay.ledger),
        main_input_tokens=total("input_tokens", "main"),
        summarizer_input_tokens=total("input_tokens", "summarizer"),
        summarizer_output_tokens=total("output_tokens", "summarizer"),
        subagent_input_tokens=total("input_tokens", "subagent"),
        subagent_output_tokens=total("output_tokens", "subagent"),
        summaries=replay.summaries, offloads=replay.offloads, skill_reads=replay.skill_reads,
        subagent_calls=replay.subagent_calls, memory_writes=replay.memory_writes,
        overflowed=replay.overflow_turn is not None, overflow_step=replay.overflow_step,
        overflow_turn=replay.overflow_turn, subagent_overflows=replay.subagent_overflows,
        lost_to_overflow=len(probes) - len(reached) if status == "overflow" else 0,
        reached_accuracy=round(sum(p.correct for p in reached) / len(reached), 6)
        if reached else 0.0,
        cost_usd=round(cost, 6),
        live_cost_usd=round(live, 6),
        status=status,
        simulated=model == "simulated", wall_s=round(wall_s, 3),
        data_probes=len(data), data_accuracy=_share(data), data_free_accuracy=_share(free),
        carried_probes=len(carried), carried_accuracy=_share(carried), **available,
        retrieved_probes=len(retrieved),
        retrieval_found=sum(bool(p.retrieval_found) for p in retrieved),
        replay_digest=digest(replay), thresholds=dict(thresholds or {}),
        probe_results=tuple(replay.probes), weeks=tuple(replay.weeks),
    )  # fmt: skip


def digest(replay: Replay) -> str:
    """A fingerprint of what a replay did: every model call's role, stream and tokens, and
    every probe's answer. Two arms with the same digest sent the same requests."""
    calls = [(c.role, c.stream, c.input_tokens, c.cached_tokens, c.output_tokens, c.tool_calls)
             for c in replay.ledger]  # fmt: skip
    answers = [(p.id, p.answer) for p in replay.probes]
    text = json.dumps([calls, answers], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _share(probes: list[ProbeResult]) -> float | None:
    return round(sum(p.correct for p in probes) / len(probes), 6) if probes else None
