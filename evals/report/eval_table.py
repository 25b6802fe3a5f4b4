"""The terminal table of `ctxlab eval`: one row per setting with its marks (recommended, tied,
front) and the fallible reader's accuracy beside the availability of what it was asked
(evals/scoring/availability.py), fitted to the terminal (evals/report/terminal.py); then the
recommendation, the arms that replayed identically, and, with `--probes`, every probe's
verdict and the window text around its value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.analysis.identical import identical_replays
from evals.analysis.metrics import Aggregate, aggregate, pareto_front, recommend, summaries
from evals.report.markdown import availability_cell, carried_cell, found_cell
from evals.report.terminal import Column, console, print_fitted, say
from evals.scoring.results import CACHE_PRICE_SHARES, EvalResult

# Left out first when the terminal is narrow (highest rank first): what repeats another
# column or matters only to some readers goes before accuracy, its difference and cost.
COLUMNS = (
    Column("setting", "left"),
    Column("seeds", drop=7),
    Column("accuracy (95% CI)"),
    Column("data acc.", drop=5),
    Column("floor", drop=5),
    Column("vs full (95% CI)", drop=1),
    Column("input tok (95% CI)", drop=3),
    Column("cached", drop=9),
    Column("peak ctx", drop=6),
    Column("calls", drop=8),
    Column("retrievals", drop=8),
    Column("cost $ (95% CI)"),
    *(Column(f"cost $ cache {share:g}x", drop=10) for share in CACHE_PRICE_SHARES),
    Column("overflow", drop=2),
    Column("lost to overflow", drop=6),
    Column("reached acc.", drop=4),
    Column("in view / one read / lost"),
    Column("retrievals found it", drop=8),
    Column("carried (apart)", drop=7),
    Column("", "left"),
)
AVAILABILITY_NOTE = (
    "in view / one read / lost: where each probe's value was when it was asked, with no "
    "reader (in the request; in a saved file the request names; neither), beside the fallible "
    "reader's accuracy. Carried probes (the recorded user or agent restated the value) are "
    "scored apart from every accuracy shown."
)
CAPTION = (
    "accuracy: mean (95% bootstrap interval over seeds); vs full: paired difference on the "
    "same seeds and probes; tied: paired difference with the best holds 0"
)
SIMULATED = (
    "Simulated results: they compare strategies, not models; not comparable with published "
    "numbers. Cache reads cost 0.05x input in the simulated profile, below the published "
    "0.1-0.5x: see the cache 0.1x and 0.5x cost columns."
)


def print_table(
    results: Sequence[EvalResult], *, base_params: dict[str, Any] | None = None, note: str = ""
) -> None:
    """The settings of `results`, fitted to the terminal, then why the recommendation."""
    settings = aggregate(results)
    rows = summaries(results, base_params=base_params)
    front = {p.label for p in pareto_front(settings)}
    picked = recommend(results)
    candidates = {c.label for c in picked.candidates} if picked else set()
    simulated = all(r.simulated for r in results)
    readers = "/".join(sorted({r.reader for r in results}))
    label = f", simulated, {readers} reader" if simulated else ""
    title = f"{results[0].scenario} ({results[0].scale}{label}{note})"
    cells = []
    for s, row in zip(settings, rows, strict=True):
        marks = [
            "recommended" if picked and s.label in picked.labels else "",
            "tied" if s.label in candidates and len(candidates) > 1 else "",
            "front" if s.label in front else "",
        ]
        cells.append(_row(s, row, " ".join(m for m in marks if m)))
    out = console()
    print_fitted(COLUMNS, cells, title=title, caption=CAPTION, out=out)
    if picked is not None:
        say(picked.explain(), out=out)
    for line in identical_replays(results):
        say(line, out=out)
    say(AVAILABILITY_NOTE, out=out)
    if simulated:
        say(SIMULATED, out=out)


def print_probes(results: Sequence[EvalResult]) -> None:
    """Every probe of every run: its outcome, its availability verdict and the window text
    (or saved file) around its value, so a user can audit the verdict probe by probe."""
    from harness.terminal import printable

    for r in results:
        print(f"\n{r.scenario} / {r.strategy} / seed {r.seed}:")
        for p in r.probe_results:
            mark = " [carried]" if p.carried else ""
            print(printable(f"  {p.id}{mark}: {p.outcome}, {p.availability or '-'}: expected "
                            f"{p.expected!r}, answered {p.answer[:80]!r}"))  # fmt: skip
            if p.evidence:
                print(f"      {printable(p.evidence)}")


def _row(s: Aggregate, row: dict[str, Any], marks: str) -> list[str]:
    diff = row["accuracy_vs_full_ci95"]
    vs_full = (
        "-"
        if diff is None
        else f"{row['accuracy_vs_full_mean']:+.1%} ({diff[0]:+.0%} to {diff[1]:+.0%})"
    )
    return [
        s.label.replace(",", ", "),  # a long setting wraps between its parameters
        str(len(s.seeds)),
        f"{s.accuracy.mean:.1%} ({s.accuracy.low:.0%}-{s.accuracy.high:.0%})",
        _pct(s.data_accuracy),
        _pct(s.data_free_accuracy),
        vs_full,
        f"{s.input_tokens.mean:,.0f} ({s.input_tokens.low:,.0f}-{s.input_tokens.high:,.0f})",
        f"{s.cached_input_tokens:,.0f}",
        f"{s.peak_context_tokens:,.0f}",
        f"{s.model_calls:,.0f}",
        f"{s.retrieval_calls:,.0f}",
        f"{s.cost_usd.mean:.4f} ({s.cost_usd.low:.4f}-{s.cost_usd.high:.4f})",
        *(_at_cache(s, share) for share in CACHE_PRICE_SHARES),
        f"{s.overflow_rate:.0%}",
        f"{s.lost_to_overflow:.1f}",
        "-" if s.reached_accuracy is None else f"{s.reached_accuracy.mean:.1%}",
        availability_cell(s.availability),
        found_cell(s.retrievals_found),
        carried_cell(s.carried_probes, s.carried_accuracy),
        marks,
    ]


def _at_cache(s: Aggregate, share: float) -> str:
    cost = s.cost_by_cache_price.get(f"{share:g}")
    return "-" if cost is None else f"{cost:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
