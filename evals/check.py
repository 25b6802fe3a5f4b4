"""The CI gate: run a small fixed suite and compare it with a committed baseline.

A cell fails when its accuracy drops, or its input tokens, peak context or cost rise, by more
than the baseline's tolerances; a cell missing from the run or from the baseline fails too.
Replays are deterministic, so tolerances only need to absorb deliberate small changes.
`--update` rewrites the baseline from the current run (commit it with the change that
explains it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.metrics import EvalResult
from evals.runner import Cell, run_cells

DEFAULT_BASELINE = Path(__file__).parent / "baselines" / "ci.json"
DEFAULT_TOLERANCES = {
    "accuracy_drop": 0.02,  # absolute: 2 percentage points
    "input_tokens_rise": 0.05,  # relative: +5%
    "peak_context_tokens_rise": 0.05,
    "cost_usd_rise": 0.05,
}
GATED = ("accuracy", "input_tokens", "peak_context_tokens", "cost_usd")

SUITES: dict[str, list[Cell]] = {
    "ci": [
        *(Cell("competitive-analysis", s, scale="small")
          for s in ("full", "truncate", "mask", "none")),
        Cell("support-transcript", "full", scale="small"),
        Cell("support-transcript", "none", scale="small"),
        Cell("long-horizon", "full", scale="small"),
        Cell("research-subagents", "full", scale="small"),
    ],
}  # fmt: skip


def cell_key(r: EvalResult) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.scenario}/{r.strategy}{f'[{params}]' if params else ''}/{r.scale}/seed={r.seed}"


def snapshot(results: Sequence[EvalResult], tolerances: dict[str, float] | None = None,
             suite: str = "ci") -> dict[str, Any]:  # fmt: skip
    """A baseline document for `results`."""
    return {
        "suite": suite,
        "note": "Written by `ctxlab check --update`; simulated model, deterministic replays.",
        "tolerances": dict(tolerances or DEFAULT_TOLERANCES),
        "cells": {
            cell_key(r): {**{k: getattr(r, k) for k in GATED}, "overflowed": r.overflowed}
            for r in results
        },
    }


@dataclass(frozen=True)
class Finding:
    cell: str
    metric: str
    before: Any
    after: Any
    verdict: str  # regression, improvement, missing, new

    def line(self) -> str:
        head = f"{self.verdict.upper():<11} {self.cell}:"
        if self.verdict in ("missing", "new"):
            return f"{head} not in {'the baseline' if self.verdict == 'new' else 'this run'}"
        if self.metric == "overflowed":
            return f"{head} now overflows the model's window"
        before, after = _show(self.metric, self.before), _show(self.metric, self.after)
        return f"{head} {self.metric} {before} -> {after} ({self._delta()})"

    def _delta(self) -> str:
        if self.metric == "accuracy":
            return f"{(self.after - self.before) * 100:+.1f} pp"
        return f"{(self.after - self.before) / self.before:+.1%}"


def _show(metric: str, value: Any) -> str:
    if metric == "accuracy":
        return f"{value:.1%}"
    if metric == "cost_usd":
        return f"${value:.4f}"
    return f"{value:,}"


def compare(results: Sequence[EvalResult], baseline: dict[str, Any]) -> list[Finding]:
    """What changed beyond the tolerances, cell by cell."""
    tol = {**DEFAULT_TOLERANCES, **baseline.get("tolerances", {})}
    cells = baseline.get("cells", {})
    findings = []
    seen = set()
    for r in results:
        key = cell_key(r)
        seen.add(key)
        old = cells.get(key)
        if old is None:
            findings.append(Finding(key, "", None, None, "new"))
            continue
        if r.overflowed and not old.get("overflowed", False):
            findings.append(Finding(key, "overflowed", False, True, "regression"))
        drop = old["accuracy"] - r.accuracy
        if abs(drop) > tol["accuracy_drop"] + 1e-9:
            verdict = "regression" if drop > 0 else "improvement"
            findings.append(Finding(key, "accuracy", old["accuracy"], r.accuracy, verdict))
        for metric in GATED[1:]:
            before, after = old[metric], getattr(r, metric)
            if not before:
                continue
            change = (after - before) / before
            if abs(change) > tol[f"{metric}_rise"] + 1e-9:
                verdict = "regression" if change > 0 else "improvement"
                findings.append(Finding(key, metric, before, after, verdict))
    findings += [Finding(k, "", None, None, "missing") for k in cells if k not in seen]
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
        return True, [f"baseline written: {path} ({len(results)} cells)"]
    if not path.exists():
        return False, [f"no baseline at {path}: run with --update to create it"]
    findings = compare(results, json.loads(path.read_text()))
    lines = [f.line() for f in findings]
    bad = failed(findings)
    lines.append(f"{'FAILED' if bad else 'passed'}: {len(results)} cells against {path}")
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
