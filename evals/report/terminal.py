"""The terminal table of `ctxlab eval` (one scenario): one row per setting with the fallible
reader's accuracy beside the availability of what it was asked (evals/scoring/
availability.py), then the recommendation, the arms that replayed identically, and, with
`--probes`, every probe's verdict and the window text around its value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.analysis.identical import identical_replays
from evals.analysis.metrics import aggregate, pareto_front, recommend, summaries
from evals.report.markdown import at_cache, availability_cell, carried_cell, found_cell, pct
from evals.scoring.results import CACHE_PRICE_SHARES, EvalResult

AVAILABILITY_NOTE = (
    "in view / one read / lost: where each probe's value was when it was asked, with no "
    "reader (in the request; in a saved file the request names; neither), beside the fallible "
    "reader's accuracy. Carried probes (the recorded user or agent restated the value) are "
    "scored apart from every accuracy shown."
)


def print_table(
    results: Sequence[EvalResult], *, base_params: dict[str, Any] | None = None, note: str = ""
) -> None:
    """The terminal table of `ctxlab eval`: one row per setting with its marks (recommended,
    tied, front), then the recommendation."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    settings = aggregate(results)
    rows = summaries(results, base_params=base_params)
    front = {p.label for p in pareto_front(settings)}
    picked = recommend(settings)
    candidates = {c.label for c in picked.candidates} if picked else set()
    simulated = all(r.simulated for r in results)
    readers = "/".join(sorted({r.reader for r in results}))
    label = f", simulated, {readers} reader" if simulated else ""
    title = f"{results[0].scenario} ({results[0].scale}{label}{note})"
    table = Table(
        title=escape(title),
        caption="accuracy: mean (95% bootstrap interval over seeds); vs full: paired "
        "difference on the same seeds and probes; tied: interval overlaps the best's",
    )
    for col in (
        "setting",
        "seeds",
        "accuracy (95% CI)",
        "data acc.",
        "floor",
        "vs full (95% CI)",
        "input tok (95% CI)",
        "cached",
        "peak ctx",
        "calls",
        "retrievals",
        "cost $ (95% CI)",
        *(f"cost $ cache {share:g}x" for share in CACHE_PRICE_SHARES),
        "overflow",
        "lost to overflow",
        "reached acc.",
        "in view / one read / lost",
        "retrievals found it",
        "carried (apart)",
        "",
    ):
        # A setting folds rather than losing the parameter that varies behind an ellipsis.
        overflow = "fold" if col == "setting" else "ellipsis"
        table.add_column(
            col, justify="left" if col in ("setting", "") else "right", overflow=overflow
        )
    for s, row in zip(settings, rows, strict=True):
        marks = [
            "recommended" if picked and s.label in picked.labels else "",
            "tied" if s.label in candidates and len(candidates) > 1 else "",
            "front" if s.label in front else "",
        ]
        diff = row["accuracy_vs_full_ci95"]
        vs_full = (
            "-"
            if diff is None
            else f"{row['accuracy_vs_full_mean']:+.1%} ({diff[0]:+.0%} to {diff[1]:+.0%})"
        )
        table.add_row(
            escape(s.label),
            str(len(s.seeds)),
            f"{s.accuracy.mean:.1%} ({s.accuracy.low:.0%}-{s.accuracy.high:.0%})",
            pct(s.data_accuracy, ".1%"),
            pct(s.data_free_accuracy, ".1%"),
            vs_full,
            f"{s.input_tokens.mean:,.0f} ({s.input_tokens.low:,.0f}-{s.input_tokens.high:,.0f})",
            f"{s.cached_input_tokens:,.0f}",
            f"{s.peak_context_tokens:,.0f}",
            f"{s.model_calls:,.0f}",
            f"{s.retrieval_calls:,.0f}",
            f"{s.cost_usd.mean:.4f} ({s.cost_usd.low:.4f}-{s.cost_usd.high:.4f})",
            *(at_cache(s, share) for share in CACHE_PRICE_SHARES),
            f"{s.overflow_rate:.0%}",
            f"{s.lost_to_overflow:.1f}",
            "-" if s.reached_accuracy is None else f"{s.reached_accuracy.mean:.1%}",
            availability_cell(s.availability),
            found_cell(s.retrievals_found),
            carried_cell(s.carried_probes, s.carried_accuracy),
            " ".join(m for m in marks if m),
        )
    console = Console()
    if not console.is_terminal:  # piped: print the whole table rather than squeeze it
        console = Console(width=400)
    console.print(table)
    if picked is not None:
        print(picked.explain())
    for line in identical_replays(results):
        print(line)
    print(AVAILABILITY_NOTE)
    if simulated:
        print(
            "Simulated results: they compare strategies, not models; not comparable with "
            "published numbers. Cache reads cost 0.05x input in the simulated profile, below "
            "the published 0.1-0.5x: see the cache 0.1x and 0.5x cost columns."
        )


def print_probes(results: Sequence[EvalResult]) -> None:
    """Every probe of every run: its outcome, its availability verdict and the window text
    (or saved file) around its value, so a user can audit the verdict probe by probe."""
    for r in results:
        print(f"\n{r.scenario} / {r.strategy} / seed {r.seed}:")
        for p in r.probe_results:
            mark = " [carried]" if p.carried else ""
            print(f"  {p.id}{mark}: {p.outcome}, {p.availability or '-'}: expected "
                  f"{p.expected!r}, answered {p.answer[:80]!r}")  # fmt: skip
            if p.evidence:
                print(f"      {p.evidence}")
