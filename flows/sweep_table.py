"""The sweep's table on the terminal: one row per setting, fitted to the terminal's width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evals.scoring.results import CACHE_PRICE_SHARES


def print_sweep(rows: Sequence[dict[str, Any]], *, title: str) -> None:
    """The sweep table, one column per swept parameter (or, where those would not fit the
    terminal, the whole setting in one wrapped column), with the paired difference against
    `full` and the marks `recommended`, `tied` and `front`, fitted to the terminal (the
    cache-price costs, seeds, peak context and input tokens leave first)."""
    from evals.report.terminal import console, fits, print_fitted

    out = console()
    keys = sorted({k for r in rows for k in r.get("params") or {}})
    columns, cells = _sweep_cells(rows, keys)
    if keys and not fits(columns, cells, width=out.width):
        columns, cells = _sweep_cells(rows, [])
    print_fitted(columns, cells, title=title, caption=SWEEP_CAPTION, out=out)


def _sweep_cells(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> tuple[list, list]:
    from evals.report.markdown import availability_cell
    from evals.report.terminal import Column

    at_cache = [f"{share:g}" for share in CACHE_PRICE_SHARES]
    columns = [
        Column("strategy" if keys else "setting", "left"),
        *(Column(key) for key in keys),
        Column("seeds", drop=5), Column("accuracy (95% CI)"), Column("vs full (95% CI)", drop=1),
        Column("input tokens", drop=3), Column("peak context", drop=4), Column("cost $"),
        *(Column(f"cost $ cache {s}x", drop=6) for s in at_cache), Column("overflow", drop=2),
        Column("in view / one read / lost"), Column("", "left"),
    ]  # fmt: skip
    cells = []
    for r in rows:
        marks = [("recommended", r["recommended"]), ("unstable", r.get("unstable")),
                 ("tied", r.get("tied_with_best")), ("front", r["pareto"])]  # fmt: skip
        params = r.get("params") or {}
        # Without parameter columns, a setting wraps between its parameters.
        name = r.get("strategy", r["setting"]) if keys else r["setting"].replace(",", ", ")
        cells.append([
            str(name), *(str(params.get(k, "-")) for k in keys),
            str(r["seeds"]), f"{r['accuracy']:.1%} ({r['accuracy_ci']})", _vs_full(r),
            f"{r['input_tokens']:,}", f"{r['peak_context_tokens']:,}", f"{r['cost_usd']:.4f}",
            *(_cost(r, s) for s in at_cache), f"{r['overflow_rate']:.0%}",
            availability_cell(r.get("availability") or {}), " ".join(m for m, on in marks if on),
        ])  # fmt: skip
    return columns, cells


SWEEP_CAPTION = (
    "accuracy: mean (95% bootstrap interval over seeds); vs full: paired difference against "
    "`full` at its defaults on the same seeds and probes (- where the sweep did not run it); "
    "tied: paired difference with the best holds 0; front: Pareto front (accuracy vs cost, "
    "settings not overflowing on every run); unstable: a recommendation that some seeds left "
    "out would change; cost $ cache 0.1x/0.5x: cache reads at those shares of the input price "
    "(published range; the simulated profile charges 0.05x)"
)


def _cost(row: Mapping[str, Any], share: str) -> str:
    cost = (row.get("cost_by_cache_price") or {}).get(share)
    return "-" if cost is None else f"{cost:.4f}"


def _vs_full(row: Mapping[str, Any]) -> str:
    if row.get("vs_full") is None:
        return "-"
    low, high = row["vs_full_ci"]
    return f"{row['vs_full']:+.1%} ({low:+.1%} to {high:+.1%})"
