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
(`DEFAULT_TOLERANCES`: 2 pp of accuracy, 5% of tokens and cost). Peak context gets at least
half the spread of its seeds: a strategy that cuts at a threshold peaks anywhere between its
target and its trigger, and a shorter system prompt moves one seed across that range.
Tolerances are rounded up. `--update` rewrites the baseline from the current run (commit it
with the change that explains it).

The suite is built so that each class of regression moves some cell clearly (the mutation
test, tests/evals/gate/test_evals_gate.py, injects each one and checks the gate fails, and that
harmless paraphrases pass): see the comment on `SUITES`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.run.cell import Cell, run_cells
from evals.scoring.results import EvalResult

DEFAULT_BASELINE = Path(__file__).parents[1] / "baselines" / "ci.json"
DEFAULT_TOLERANCES = {
    "accuracy_drop": 0.02,  # absolute: 2 percentage points
    "input_tokens_rise": 0.05,  # relative: +5%
    "peak_context_tokens_rise": 0.05,
    "cost_usd_rise": 0.05,
}
GATED = ("accuracy", "input_tokens", "peak_context_tokens", "cost_usd")
CHECK_SEEDS = (0, 1, 2)


def _suite(*cells: tuple[str, str, dict[str, Any]]) -> list[Cell]:
    """Each (scenario, strategy, params) on the gate's seeds; a `window` key in params caps the
    model's window (a Cell field, not a strategy parameter)."""
    out = []
    for sc, st, p in cells:
        params = {k: v for k, v in p.items() if k != "window"}
        out += [Cell(sc, st, params, seed, "small", window=p.get("window")) for seed in CHECK_SEEDS]
    return out


# One cell per strategy, and each class of regression moves at least one cell clearly (the
# mutation test in tests/evals/gate/test_evals_gate.py injects each and checks the gate fails):
# - the summarizer: `full` with an early trigger summarizes often, so a summarizer that loses
#   facts, sees half its input or follows a two-sentence prompt costs accuracy on every seed;
#   `full` at the default trigger shows a late trigger as a higher peak;
# - the recent messages summarization keeps: the support call on a 12k window, summarized
#   with most of the window kept, so the pasted transcript stays verbatim; keeping none of it
#   loses the call's details;
# - offloading: the flagship's broad export (a tool result) and the support transcript (a
#   human message, answered only through its file). Not long-horizon with every ticket
#   offloaded: a preview without its path scores higher there (61.9% -> 97.6%): with no file
#   named, the reader re-runs the ticket lookup instead of grepping the file, so the cell
#   reads that regression as an improvement;
# - skills: the flagship's agent picks the report template by its description, so a menu
#   without descriptions loses the template's sections in every flagship cell;
# - mask at batch 1 and context-edit clearing all it may at once never overflow, so their
#   tolerances are a few points, and keeping fewer results than asked costs accuracy;
# - memory: week 2 of the flagship reads the remembered format on every call;
# - the baselines (`none`, `truncate`, `offload`) keep their ranks below `full`.
SUITES: dict[str, list[Cell]] = {
    "ci": _suite(
        *(("competitive-analysis", s, {}) for s in ("full", "truncate", "none", "summarize")),
        ("competitive-analysis", "offload", {}),
        ("competitive-analysis", "mask", {"mask.batch": 1}),
        (
            "competitive-analysis",
            "context-edit",
            {"context-edit.trigger": 9000, "context-edit.clear_at_least": 0},
        ),
        ("competitive-analysis", "full", {"summarize.trigger": 0.5}),
        ("support-transcript", "full", {}),
        ("support-transcript", "none", {}),
        (
            "support-transcript",
            "summarize",
            {"summarize.trigger": 0.7, "summarize.keep": 0.75, "window": 12_000},
        ),
        ("long-horizon", "full", {}),
        ("research-subagents", "full", {}),
    ),  # fmt: skip
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
    never below the floors; for peak context, at least half the spread of its seeds. Rounded
    up, so a tolerance never ends below the spread it stands for."""
    tol = {}
    for metric in GATED:
        name = "accuracy_drop" if metric == "accuracy" else f"{metric}_rise"
        values = [float(getattr(r, metric)) for r in runs]
        se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
        mean = statistics.fmean(values)
        spread = se if metric == "accuracy" else (se / mean if mean else 0.0)
        if metric == "peak_context_tokens" and mean:
            # A strategy that cuts at a threshold peaks wherever the last message before a cut
            # lands, anywhere between its target and its trigger: a few tokens more or less in
            # the system prompt move one seed's peak across that whole range (truncate's seed
            # 0 moved 19% for a shorter skill description). The seeds' spread is that range.
            spread = max(spread, (max(values) - min(values)) / mean / 2)
        tol[name] = _round_up(max(floors[name], spread))
    return tol


def _round_up(value: float, places: int = 4) -> float:
    # The rounding guard keeps a floor such as 0.02 from becoming 0.0201 through float noise.
    return math.ceil(round(value * 10**places, 6)) / 10**places


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
    results: Sequence[EvalResult],
    baseline: str | Path,
    *,
    update: bool = False,
    suite: str = "ci",
    width: int = 80,
) -> tuple[bool, list[str]]:
    """Compare `results` with the baseline file (or rewrite it with `update`): whether they
    pass, and the readable lines saying why."""
    path = Path(baseline)
    if update:
        old = json.loads(path.read_text()) if path.exists() else {}
        doc = snapshot(results, old.get("tolerances"), suite)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        written = f"baseline written: {_shown_path(path)}"
        return True, [f"{written} ({len(doc['cells'])} cells, {len(results)} runs)"]
    if not path.exists():
        return False, [f"no baseline at {path}: run with --update to create it"]
    findings = compare(results, json.loads(path.read_text()))
    lines = [f.line() for f in findings]
    bad = failed(findings)
    n_cells = len(group(results))
    lines += cell_table(results, width)
    lines.append(
        f"{'FAILED' if bad else 'passed'}: {n_cells} cells ({len(results)} runs) "
        f"against {_shown_path(path)}"
    )
    if bad:
        lines.append("If the change is intended, rerun with --update and commit the baseline.")
    return not bad, lines


def scenario_cells(
    scenarios: Sequence[str],
    strategies: Sequence[str],
    *,
    seeds: Sequence[int] = CHECK_SEEDS,
    window: int | None = None,
) -> list[Cell]:
    """A user's own gate: each scenario (a built-in name or a scenario file) under each
    strategy on `seeds`, on the gate's scale and reader."""
    return [
        Cell(scenario, strategy, {}, seed, "small", window=window)
        for scenario in scenarios
        for strategy in strategies
        for seed in seeds
    ]


def run_check(
    suite: str = "ci",
    baseline: str | Path = DEFAULT_BASELINE,
    *,
    update: bool = False,
    say: Callable[[str], None] = print,
    cells: Sequence[Cell] | None = None,
    width: int = 80,
    run: Callable[[list[Cell]], list[EvalResult]] = run_cells,
) -> int:
    """`ctxlab check`: run the suite (or `cells`, a user's scenarios gated under the label
    `suite`) and gate it with `run` (the command line's shows progress); 0 when it passes
    (or after `update`)."""
    if cells is None:
        if suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
        cells = SUITES[suite]
    ok, lines = gate(run(list(cells)), baseline, update=update, suite=suite, width=width)
    for line in lines:
        say(line)
    return 0 if ok else 1


def cell_table(results: Sequence[EvalResult], width: int = 80) -> list[str]:
    """Each cell's means over its seeds, numbers first so that no width cuts one; a cell name
    too long for the row goes on a line of its own above its numbers."""
    head = f"{'accuracy':>8} {'input':>10} {'peak':>8} {'cost':>9} {'overflow':>8}"
    lines = [f"{head}  cell" if len(head) + 6 <= width else head]
    for key, runs in group(results).items():
        numbers = (
            f"{_mean(runs, 'accuracy'):>8.1%} {round(_mean(runs, 'input_tokens')):>10,} "
            f"{round(_mean(runs, 'peak_context_tokens')):>8,} "
            f"{'$' + format(_mean(runs, 'cost_usd'), '.4f'):>9} "
            f"{f'{sum(r.overflowed for r in runs)}/{len(runs)}':>8}"
        )
        if len(numbers) + 2 + len(key) <= width:
            lines.append(f"{numbers}  {key}")
        else:
            lines += [key, numbers]
    return lines


def _shown_path(path: Path) -> str:
    """A path under the working directory relative to it: shorter, and the same on every
    machine that runs the gate."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
