"""The CI gate: run a small fixed suite over several seeds and compare it with a committed
baseline.

Runs are grouped into cells (scenario, strategy, parameters, scale, and the set of seeds); the
gate compares each cell's mean over its seeds. A cell fails when its mean accuracy drops, or
its mean input tokens, peak context or cost rise, by more than the cell's tolerance, or when
more of its seeds overflow the window; a cell missing from the run or from the baseline fails
too. Each line names the values per seed, so a drop that every seed shares reads apart from
one seed's flip.

Tolerances. Replays are deterministic, so a change in a cell always has a cause in the code; the
tolerance decides which changes need a human to look. A harmless change (a tool schema grows by
a few tokens, a cut lands one message later) moves a cell the way a different seed does: the
same trajectory with its content shifted. So `--update` sets each cell's tolerance to the
standard error of its mean over the seeds (the spread that the published number of that cell
carries anyway, and which no report can resolve), never below the floors in `tolerances`
(`DEFAULT_TOLERANCES`: 2 pp of accuracy, 5% of tokens and cost). `--update` rewrites the
baseline from the current run (commit it with the change that explains it).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.results import EvalResult
from evals.runner import Cell, run_cells

DEFAULT_BASELINE = Path(__file__).parent / "baselines" / "ci.json"
DEFAULT_TOLERANCES = {
    "accuracy_drop": 0.02,  # absolute: 2 percentage points
    "input_tokens_rise": 0.05,  # relative: +5%
    "peak_context_tokens_rise": 0.05,
    "cost_usd_rise": 0.05,
}
GATED = ("accuracy", "input_tokens", "peak_context_tokens", "cost_usd")
CHECK_SEEDS = (0, 1, 2)


def _suite(*cells: tuple[str, str, dict[str, Any]]) -> list[Cell]:
    return [Cell(sc, st, p, seed, "small") for sc, st, p in cells for seed in CHECK_SEEDS]


# Each cell is there because a class of regression shows in it: `full` with an early summary
# trigger summarizes often, so a summarizer that loses facts costs accuracy on every seed;
# `full` at the default trigger shows a late trigger as a higher peak; the support transcript
# is answered only through its offloaded file; the baselines keep their ranks below `full`.
SUITES: dict[str, list[Cell]] = {
    "ci": _suite(
        *(("competitive-analysis", s, {}) for s in ("full", "truncate", "mask", "none")),
        ("competitive-analysis", "full", {"summarize.trigger": 0.5}),
        ("support-transcript", "full", {}),
        ("support-transcript", "none", {}),
        ("long-horizon", "full", {}),
        ("research-subagents", "full", {}),
    ),
}


def cell_key(r: EvalResult) -> str:
    """One run: its cell and its seed."""
    return f"{_cell(r)}/seed={r.seed}"


def _cell(r: EvalResult) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.scenario}/{r.strategy}{f'[{params}]' if params else ''}/{r.scale}"


def group(results: Sequence[EvalResult]) -> dict[str, list[EvalResult]]:
    """Runs by cell, keyed by the cell and its seeds (`.../seed=0`, `.../seeds=0,1,2`)."""
    by_cell: dict[str, list[EvalResult]] = {}
    for r in results:
        by_cell.setdefault(_cell(r), []).append(r)
    keyed = {}
    for cell, runs in by_cell.items():
        runs = sorted(runs, key=lambda r: r.seed)
        seeds = ",".join(str(r.seed) for r in runs)
        keyed[f"{cell}/{'seeds' if len(runs) > 1 else 'seed'}={seeds}"] = runs
    return keyed


def _mean(runs: Sequence[EvalResult], metric: str) -> float:
    return statistics.fmean(float(getattr(r, metric)) for r in runs)


def _tolerances(runs: Sequence[EvalResult], floors: dict[str, float]) -> dict[str, float]:
    """The standard error of the cell's mean over its seeds, relative for tokens and cost,
    never below the floors."""
    tol = {}
    for metric in GATED:
        name = "accuracy_drop" if metric == "accuracy" else f"{metric}_rise"
        values = [float(getattr(r, metric)) for r in runs]
        se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
        mean = statistics.fmean(values)
        spread = se if metric == "accuracy" else (se / mean if mean else 0.0)
        tol[name] = round(max(floors[name], spread), 4)
    return tol


def snapshot(results: Sequence[EvalResult], tolerances: dict[str, float] | None = None,
             suite: str = "ci") -> dict[str, Any]:  # fmt: skip
    """A baseline document for `results`; `tolerances` are the floors."""
    floors = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    cells = {}
    for key, runs in group(results).items():
        cells[key] = {
            "accuracy": round(_mean(runs, "accuracy"), 6),
            "input_tokens": round(_mean(runs, "input_tokens")),
            "peak_context_tokens": round(_mean(runs, "peak_context_tokens")),
            "cost_usd": round(_mean(runs, "cost_usd"), 6),
            "overflowed": sum(r.overflowed for r in runs),
            "tolerances": _tolerances(runs, floors),
            "seeds": {str(r.seed): {k: getattr(r, k) for k in GATED} for r in runs},
        }
    return {
        "suite": suite,
        "note": "Written by `ctxlab check --update`; simulated model, deterministic replays. "
        "Values are means over the seeds; each cell's tolerance is the standard error of its "
        "mean, never below the floors in `tolerances`.",
        "tolerances": floors,
        "cells": cells,
    }


@dataclass(frozen=True)
class Finding:
    cell: str
    metric: str
    before: Any
    after: Any
    verdict: str  # regression, improvement, missing, new
    tolerance: float | None = None
    per_seed: tuple[tuple[Any, Any], ...] = ()

    def line(self) -> str:
        head = f"{self.verdict.upper():<11} {self.cell}:"
        if self.verdict in ("missing", "new"):
            return f"{head} not in {'the baseline' if self.verdict == 'new' else 'this run'}"
        if self.metric == "overflowed":
            return f"{head} now overflows the model's window ({self.before} -> {self.after} seeds)"
        before, after = _show(self.metric, self.before), _show(self.metric, self.after)
        return f"{head} {self.metric} {before} -> {after} ({self._delta()}){self._detail()}"

    def _delta(self) -> str:
        if self.metric == "accuracy":
            return f"{(self.after - self.before) * 100:+.1f} pp"
        return f"{(self.after - self.before) / self.before:+.1%}"

    def _detail(self) -> str:
        """Tolerance and per-seed values, shown when the cell has several seeds."""
        if len(self.per_seed) < 2:
            return ""
        tol = self.tolerance or 0.0
        shown = f"{tol * 100:.1f} pp" if self.metric == "accuracy" else f"{tol:.1%}"
        seeds = ", ".join(
            f"{_show(self.metric, b)} -> {_show(self.metric, a)}" for b, a in self.per_seed
        )
        return f"; tolerance {shown}; per seed: {seeds}"


def _show(metric: str, value: Any) -> str:
    if value is None:
        return "?"
    if metric == "accuracy":
        return f"{value:.1%}"
    if metric == "cost_usd":
        return f"${value:.4f}"
    return f"{round(value):,}"


def compare(results: Sequence[EvalResult], baseline: dict[str, Any]) -> list[Finding]:
    """What changed beyond the tolerances, cell by cell (means over each cell's seeds)."""
    floors = {**DEFAULT_TOLERANCES, **baseline.get("tolerances", {})}
    cells = baseline.get("cells", {})
    findings = []
    grouped = group(results)
    for key, runs in grouped.items():
        old = cells.get(key)
        if old is None:
            findings.append(Finding(key, "", None, None, "new"))
            continue
        tol = {**floors, **old.get("tolerances", {})}
        overflowed = sum(r.overflowed for r in runs)
        if overflowed > int(old.get("overflowed", 0)):
            findings.append(
                Finding(key, "overflowed", int(old.get("overflowed", 0)), overflowed, "regression")
            )
        old_seeds = old.get("seeds", {})
        for metric in GATED:
            before, after = old[metric], _mean(runs, metric)
            per_seed = tuple(
                (old_seeds.get(str(r.seed), {}).get(metric), getattr(r, metric)) for r in runs
            )
            if metric == "accuracy":
                change, limit = before - after, tol["accuracy_drop"]
            elif before:
                change, limit = (after - before) / before, tol[f"{metric}_rise"]
            else:
                continue
            if abs(change) > limit + 1e-9:
                worse = change > 0
                verdict = "regression" if worse else "improvement"
                findings.append(Finding(key, metric, before, after, verdict, limit, per_seed))
    findings += [Finding(k, "", None, None, "missing") for k in cells if k not in grouped]
    return findings


def failed(findings: Sequence[Finding]) -> bool:
    return any(f.verdict in ("regression", "missing", "new") for f in findings)


def gate(
    results: Sequence[EvalResult], baseline: str | Path, *, update: bool = False, suite: str = "ci"
) -> tuple[bool, list[str]]:
    """Compare `results` with the baseline file (or rewrite it with `update`): whether they
    pass, and the readable lines saying why."""
    path = Path(baseline)
    if update:
        old = json.loads(path.read_text()) if path.exists() else {}
        doc = snapshot(results, old.get("tolerances"), suite)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return True, [f"baseline written: {path} ({len(doc['cells'])} cells, {len(results)} runs)"]
    if not path.exists():
        return False, [f"no baseline at {path}: run with --update to create it"]
    findings = compare(results, json.loads(path.read_text()))
    lines = [f.line() for f in findings]
    bad = failed(findings)
    n_cells = len(group(results))
    lines.append(
        f"{'FAILED' if bad else 'passed'}: {n_cells} cells ({len(results)} runs) against {path}"
    )
    if bad:
        lines.append("If the change is intended, rerun with --update and commit the baseline.")
    return not bad, lines


def run_check(
    suite: str = "ci",
    baseline: str | Path = DEFAULT_BASELINE,
    *,
    update: bool = False,
    say: Callable[[str], None] = print,
) -> int:
    """`ctxlab check`: run the suite and gate it; 0 when it passes (or after `update`)."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
    ok, lines = gate(run_cells(SUITES[suite]), baseline, update=update, suite=suite)
    for line in lines:
        say(line)
    return 0 if ok else 1
