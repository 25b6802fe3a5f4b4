"""A suite run arm by arm, with the trace as the statistical unit.

Intervals resample traces, not probes (`stats.trace_bootstrap`); differences against `full` are
paired by probe within each trace. "Recall at retained tokens" bins each probe by the tokens in
the window when it was asked and sets the fallible reader's accuracy beside the ideal one's on
the same probes. A scenario file's `source.original` is shown beside ctxlab's. The suite's files
and index: scenarios/suite.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from evals.analysis.identical import identical_replays
from evals.analysis.stats import Interval, paired_trace_difference, trace_bootstrap
from evals.scenarios.suite import ORIGINAL_INTS, Suite, SuiteFile
from evals.scoring.availability import shares
from evals.scoring.records import ProbeResult
from evals.scoring.results import EvalResult

ORIGINAL = "original"  # the arm that replays the recorded harness's own context
# Bins of "recall at retained tokens": a probe counts in the first bin its window fits.
TOKEN_BINS = (2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 1_000_000)


def window_at_use(run: EvalResult) -> float | None:
    """Mean tokens in the window when the run's probes were asked (answered probes only)."""
    asked = [p.window_tokens for p in run.probe_results if p.status == "answered"]
    return round(statistics.fmean(asked), 1) if asked else None


def trace_line(
    run: EvalResult, trace: SuiteFile, ideal: EvalResult | None, *, probes: bool = False
) -> dict[str, Any]:
    """One run of one trace, as `ctxlab eval --json` prints it: the single scenario's fields,
    then the trace, the ideal reader's accuracy on the same arm, the window at the points of
    use, and the original harness's own numbers (empty when the trace has none)."""
    return {
        **run.to_dict(probes=probes),
        "trace": trace.trace,
        "scenario_file": trace.file.name,
        "trace_format": trace.format,
        "import_skipped": len(trace.skipped),
        "ideal_accuracy": None if ideal is None else ideal.accuracy,
        "window_tokens_at_use_mean": window_at_use(run),
        "original": trace.original,
    }


def scored(run: EvalResult) -> list[ProbeResult]:
    """The probes the headline scores: all but the carried ones (reported apart)."""
    return [p for p in run.probe_results if not p.carried]


def _correct(run: EvalResult) -> dict[tuple[int, str], float]:
    return {(run.seed, p.id): float(p.correct) for p in scored(run)}


def pooled(runs: Sequence[EvalResult]) -> dict[str, Any]:
    """Over every probe of `runs`: the availability shares of the scored probes, the carried
    probes and their accuracy (apart), the retrievals that found the value, and, where a
    judge graded answers, how often it agreed with the scorer."""
    mine = [p for r in runs for p in scored(r)]
    carried = [p for r in runs for p in r.probe_results if p.carried]
    retrieved = [p for p in mine if p.retrieval_found is not None]
    judged = [p for p in mine if p.judge_verdict in ("right", "wrong")]
    agree = sum((p.judge_verdict == "right") == p.correct for p in judged)
    return {
        "availability": shares([p.availability for p in mine]),
        "carried_probes": len(carried),
        "carried_accuracy": _round(statistics.fmean(p.correct for p in carried))
        if carried
        else None,
        "retrievals": len(retrieved),
        "retrievals_found": sum(bool(p.retrieval_found) for p in retrieved),
        "judged": len(judged),
        "judge_agreement": _round(agree / len(judged)) if judged else None,
    }


def suite_summary(
    suite: Suite,
    runs: Sequence[tuple[SuiteFile, EvalResult]],
    ideal: Mapping[tuple[str, str], EvalResult],
    *,
    base: str = "full",
    simulated: Mapping[tuple[str, str], EvalResult] | None = None,
) -> dict[str, Any]:
    """The suite's one summary: per arm, accuracy with an interval over traces, the paired
    difference against `base`, the ideal reader beside it, ctxlab's tokens and cost beside the
    original harness's, and recall at retained tokens. With a real model's `runs`,
    `simulated` holds the simulated reader's run of each (trace, arm): how often the two
    agree is reported per arm (`reader_agreement`)."""
    arms: dict[str, dict[str, dict[tuple[int, str], float]]] = {}
    by_arm: dict[str, list[tuple[SuiteFile, EvalResult]]] = {}
    for trace, run in runs:
        arms.setdefault(run.strategy, {}).setdefault(trace.trace, {}).update(_correct(run))
        by_arm.setdefault(run.strategy, []).append((trace, run))
    out = []
    for arm, mine in by_arm.items():
        per_trace = {t: list(v.values()) for t, v in arms[arm].items()}
        accuracy = _interval(per_trace)
        ideal_runs = {t.trace: ideal[(t.trace, arm)] for t, _ in mine if (t.trace, arm) in ideal}
        ideal_acc = _interval({t: [float(p.correct) for p in scored(r)]
                               for t, r in ideal_runs.items()})  # fmt: skip
        diff = None
        if base in arms and arm != base:
            try:
                diff = paired_trace_difference(arms[arm], arms[base])
            except ValueError:
                diff = None
        elif arm == base:
            diff = Interval(0.0, 0.0, 0.0)
        by_trace: dict[str, list[EvalResult]] = {}
        for t, r in mine:
            by_trace.setdefault(t.trace, []).append(r)
        groups = list(by_trace.values())
        out.append(
            {
                "strategy": arm, "traces": len(by_trace), "runs": len(mine),
                "accuracy_mean": None if accuracy is None else _round(accuracy.mean),
                "accuracy_ci95": _ci(accuracy),
                "ideal_accuracy_mean": None if ideal_acc is None else _round(ideal_acc.mean),
                "ideal_accuracy_ci95": None if ideal_acc is None else _ci(ideal_acc),
                f"accuracy_vs_{base}_mean": None if diff is None else _round(diff.mean),
                f"accuracy_vs_{base}_ci95": None if diff is None else _ci(diff),
                f"tied_with_{base}": None if diff is None else diff.contains(0.0),
                "input_tokens_total": round(_trace_sum(groups, "input_tokens"), 1),
                "output_tokens_total": round(_trace_sum(groups, "output_tokens"), 1),
                "cached_input_tokens_total": round(_trace_sum(groups, "cached_input_tokens"), 1),
                "cost_usd_total": round(_trace_sum(groups, "cost_usd"), 6),
                "compactions_total": round(_trace_sum(groups, "summaries"), 1),
                "overflow_rate": _round(statistics.fmean(float(r.overflowed) for _, r in mine)),
                "window_tokens_at_use_mean": _mean_window(mine),
                **pooled([r for _, r in mine]),
                **agreement([(r, (simulated or {}).get((t.trace, arm))) for t, r in mine]),
                "recall_at_retained_tokens": recall_at_tokens(
                    [r for _, r in mine], ideal_runs, {r.scenario: t.trace for t, r in mine}
                ),
            }
        )  # fmt: skip
    return {
        "suite_summary": True,
        "suite": str(suite.directory),
        "traces": len(suite.traces),
        "import_skipped": len(suite.skipped),
        "original": original_totals(suite.traces),
        "arms": out,
        "harness_vs_ctxlab": headline(out, base),
        "identical_replays": identical_replays([r for _, r in runs]),
    }


def _trace_sum(groups: Sequence[Sequence[EvalResult]], attr: str) -> float:
    """Summed over traces (`groups`: each trace's runs), each trace's mean over its seeds."""
    return math.fsum(statistics.fmean(float(getattr(r, attr)) for r in runs) for runs in groups)


def _mean_window(runs: Sequence[tuple[SuiteFile, EvalResult]]) -> float | None:
    """The mean over runs of the tokens in the window when their probes were asked."""
    used = [w for _, r in runs if (w := window_at_use(r)) is not None]
    return round(statistics.fmean(used), 1) if used else None


def headline(arms: Sequence[Mapping[str, Any]], base: str = "full") -> dict[str, Any] | None:
    """The harness (`original` arm) beside ctxlab's `base` arm: accuracy with its interval and
    the tokens in the window at each probe; None without both arms."""
    found = {a["strategy"]: a for a in arms}
    if ORIGINAL not in found or base not in found:
        return None
    mine, theirs = found[ORIGINAL], found[base]
    return {
        "harness_accuracy": mine["accuracy_mean"], "harness_ci95": mine["accuracy_ci95"],
        "harness_window_tokens": mine.get("window_tokens_at_use_mean"),
        "ctxlab_arm": base,
        "ctxlab_accuracy": theirs["accuracy_mean"], "ctxlab_ci95": theirs["accuracy_ci95"],
        "ctxlab_window_tokens": theirs.get("window_tokens_at_use_mean"),
        "difference_mean": mine.get(f"accuracy_vs_{base}_mean"),
        "difference_ci95": mine.get(f"accuracy_vs_{base}_ci95"),
    }  # fmt: skip


def agreement(pairs: Sequence[tuple[EvalResult, EvalResult | None]]) -> dict[str, Any]:
    """How often the simulated reader and a real model are both right or both wrong on the
    same probe (uncarried, asked in both runs). The model's side is the judge's verdict where
    one graded the answer, else the scorer's; None without a simulated run to compare."""
    same = total = 0
    for live, offline in pairs:
        if offline is None:
            continue
        theirs = {p.id: p.correct for p in scored(offline) if p.status == "answered"}
        for p in scored(live):
            if p.status != "answered" or p.id not in theirs:
                continue
            right = (
                p.judge_verdict == "right" if p.judge_verdict in ("right", "wrong") else p.correct
            )
            same += right == theirs[p.id]
            total += 1
    return {"reader_agreement": _round(same / total) if total else None,
            "reader_agreement_probes": total}  # fmt: skip


def original_totals(traces: Sequence[SuiteFile]) -> dict[str, Any]:
    """The original harness's numbers summed over the traces that carry each (with how many
    do), so a total is never read as covering traces that did not report it."""
    out: dict[str, Any] = {"traces_with_original": sum(bool(t.original) for t in traces)}
    for key in (*ORIGINAL_INTS, "cost_usd"):
        have = [t.original[key] for t in traces if key in t.original]
        out[key] = (round(math.fsum(have), 6) if key == "cost_usd" else sum(have)) if have else None
        out[f"{key}_traces"] = len(have)
    return out


def recall_at_tokens(
    runs: Sequence[EvalResult],
    ideal: Mapping[str, EvalResult],
    trace_of: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Probes binned by the tokens in the window when they were asked (`TOKEN_BINS`): per
    bin, how many, the fallible reader's accuracy and the ideal reader's on the same probes
    (of the same trace and arm). Probes never asked (overflow) or scored from a file have no
    point of use and are left out."""
    bins: dict[int, list[tuple[float, float | None]]] = {}
    for run in runs:
        other = ideal.get(trace_of.get(run.scenario, ""))
        ideal_by_id = {p.id: float(p.correct) for p in scored(other)} if other else {}
        for p in scored(run):
            if p.status != "answered":
                continue
            edge = next((b for b in TOKEN_BINS if p.window_tokens <= b), TOKEN_BINS[-1])
            bins.setdefault(edge, []).append((float(p.correct), ideal_by_id.get(p.id)))
    rows = []
    for edge in sorted(bins):
        got = bins[edge]
        ideal_vals = [i for _, i in got if i is not None]
        rows.append(
            {
                "window_tokens_up_to": edge, "probes": len(got),
                "accuracy": _round(statistics.fmean(c for c, _ in got)),
                "ideal_accuracy": _round(statistics.fmean(ideal_vals)) if ideal_vals else None,
            }
        )  # fmt: skip
    return rows


def _interval(per_trace: Mapping[str, list[float]]) -> Interval | None:
    if not any(per_trace.values()):
        return None
    return trace_bootstrap(per_trace)


def _round(value: float) -> float:
    return round(value, 6)


def _ci(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [_round(v) for v in interval.as_list()]


__all__ = ["headline", "recall_at_tokens", "suite_summary", "trace_line"]
