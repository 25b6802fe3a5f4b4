"""`ctxlab report`: a markdown table per scenario and a figure (PNG and SVG) of accuracy
against cost, with the Pareto front marked, under `reports/`. Simulated results are labelled
as such, and results of each reader (fallible, ideal) are shown apart."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.analysis.metrics import Aggregate, aggregate, pareto_front, recommend, summaries
from evals.analysis.stability import stability
from evals.analysis.stats import Interval
from evals.report.plot import Point, scatter, svg_of, weeks_chart
from evals.scoring.results import CACHE_PRICE_SHARES, EvalResult
from harness.profiles import get_profile

SIMULATED_NOTE = (
    "Simulated results: the deterministic `simulated` model replays the recorded run and "
    "answers only from what the strategy left within reach (in view, or fetched back from "
    "offloaded files and saved history). They measure the strategy, not a model's skill, and "
    "are not comparable with published numbers."
)
READER_NOTES = {
    "fallible": (
        "Fallible reader (the default): a fact in view is missed with a chance that grows with "
        "the request's length (NoLiMa's GPT-4o curve) and is worst in the middle of the request "
        "(lost in the middle); a reader that misses may return a look-alike (scored wrong); "
        "retrieval greps with the question's own words, or with the role and the value's shape "
        'when a probe names one. See evals/README.md, "The reader".'
    ),
    "ideal": "Ideal reader: never misses a fact in view (for debugging; not a model).",
}


def write_plot(
    points: Sequence[EvalResult | Aggregate | Mapping[str, Any]], path: str | Path, *, title: str
) -> Path:
    """Accuracy against cost (a PNG at `path`, an SVG beside it): Pareto front joined,
    recommended setting ringed, overflowing settings crossed. Takes runs (ties then judged
    on paired differences), `Aggregate`s, or rows with `setting`, `accuracy`, `cost_usd`,
    `pareto`, `recommended` and `overflow_rate`."""
    if points and isinstance(points[0], EvalResult | Aggregate):
        given = [p for p in points if isinstance(p, EvalResult | Aggregate)]
        aggs = _aggregates(given)
        front = {p.label for p in pareto_front(aggs)}
        picked = recommend(given)
        chosen = set(picked.labels) if picked else set()
        drawn = [
            Point(p.label, p.cost_usd.mean, p.accuracy.mean, p.label in front, p.label in chosen,
                  p.overflow_rate)
            for p in aggs
        ]  # fmt: skip
    else:
        rows = [p for p in points if isinstance(p, Mapping)]
        drawn = [
            Point(str(r["setting"]), float(r["cost_usd"]), float(r["accuracy"]),
                  bool(r.get("pareto")), bool(r.get("recommended")),
                  float(r.get("overflow_rate") or 0.0))
            for r in rows
        ]  # fmt: skip
    return scatter(drawn, path, title=title, x_label="cost per run (USD)")


def _aggregates(given: Sequence[EvalResult | Aggregate]) -> list[Aggregate]:
    runs = [p for p in given if isinstance(p, EvalResult)]
    return [p for p in given if isinstance(p, Aggregate)] + aggregate(runs)


def render_table(settings: Sequence[Aggregate], runs: Sequence[EvalResult] = ()) -> list[str]:
    """The settings' table, best accuracy first; with their `runs`, a column of the paired
    accuracy difference against `full`."""
    front = {p.label for p in pareto_front(settings)}
    picked = recommend(runs or settings)
    steady = stability(runs) if runs and picked else None
    chosen = set(picked.labels) if picked else set()
    tied = {c.label for c in picked.candidates} if picked and len(picked.candidates) > 1 else set()
    vs_full = {row["setting"]: row for row in summaries(runs)} if runs else {}
    lines = [
        "| | setting | seeds | accuracy (95% CI) | data-derived | data-free floor "
        "| vs full (95% CI) | wrong | recall | artifact "
        "| continuation | decision | input tokens (95% CI) | cached | peak context | calls "
        "| retrievals | summarizer tok | subagent tok | cost $ (95% CI) | "
        + "".join(f"cost $, cache {share:g}x | " for share in CACHE_PRICE_SHARES)
        + "overflow | lost to overflow | reached accuracy | in view / one read / lost "
        "| retrievals that found it | carried (scored apart) |",
        "|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"
        + "---:|" * len(CACHE_PRICE_SHARES)
        + "---:|---:|---:|---:|---:|---:|",
    ]
    for s in sorted(settings, key=lambda s: (-s.accuracy.mean, s.cost_usd.mean, s.label)):
        marks = ("**rec.**" if s.label in chosen else "", "tied" if s.label in tied else "",
                 "front" if s.label in front else "")  # fmt: skip
        mark = " ".join(m for m in marks if m)
        kinds = " | ".join(pct(s.accuracy_by_kind.get(k)) for k in
                           ("recall", "artifact", "continuation", "decision"))  # fmt: skip
        lines.append(
            f"| {mark} | {s.label} | {len(s.seeds)} | {_ci(s.accuracy, '.1%')} | "
            f"{pct(s.data_accuracy, '.1%')} | {pct(s.data_free_accuracy, '.1%')} | "
            f"{_diff(vs_full.get(s.label))} | {s.wrong:.1f} | {kinds} | "
            f"{_ci(s.input_tokens, ',.0f')} | {s.cached_input_tokens:,.0f} | "
            f"{s.peak_context_tokens:,.0f} | {s.model_calls:,.0f} | {s.retrieval_calls:,.0f} | "
            f"{s.summarizer_tokens:,.0f} | {s.subagent_tokens:,.0f} | {_ci(s.cost_usd, '.4f')} | "
            f"{''.join(f'{at_cache(s, share)} | ' for share in CACHE_PRICE_SHARES)}"
            f"{s.overflow_rate:.0%} | {s.lost_to_overflow:.1f} | "
            f"{'-' if s.reached_accuracy is None else format(s.reached_accuracy.mean, '.1%')} | "
            f"{availability_cell(s.availability)} | {found_cell(s.retrievals_found)} | "
            f"{carried_cell(s.carried_probes, s.carried_accuracy)} |"
        )
    if picked is not None:
        lines += [
            "",
            picked.explain(unstable=steady is not None and not steady.stable),
            *(["", steady.explain()] if steady else []),
            "",
            "`tied`: the paired accuracy difference with the best setting holds 0 (the "
            "intervals overlap where they share no seed), so these are not ranked against "
            "each other; the recommendation is the cheapest of them. `vs full`: accuracy "
            "minus `full`'s on the same seeds and probes.",
        ]
    return lines


def at_cache(s: Aggregate, share: float) -> str:
    cost = s.cost_by_cache_price.get(f"{share:g}")
    return "-" if cost is None else f"{cost:.4f}"


def availability_cell(shares: Mapping[str, float | None]) -> str:
    """`92% / 4% / 4%`: the shares in view, one read away and lost (evals/scoring/
    availability.py); `-` when no probe had a verdict."""
    if not shares or shares.get("in_view") is None:
        return "-"
    return " / ".join(pct(shares.get(v)) for v in ("in_view", "one_read", "lost"))


def found_cell(found: tuple[int, int]) -> str:
    """`2 of 5`: probes whose retrievals brought the value back, of those that retrieved."""
    return f"{found[0]} of {found[1]}" if found[1] else "-"


def carried_cell(probes: float, accuracy: float | None) -> str:
    """The carried probes (mean a run) and their accuracy, reported apart from the headline."""
    return f"{probes:g} at {pct(accuracy, '.0%')}" if probes else "-"


def _ci(interval: Interval, spec: str) -> str:
    """The mean, and the interval when there is one (a single seed has none)."""
    mean = format(interval.mean, spec)
    if interval.low == interval.high:
        return mean
    return f"{mean} ({format(interval.low, spec)}-{format(interval.high, spec)})"


def _diff(row: Mapping[str, Any] | None) -> str:
    if row is None or row["accuracy_vs_full_mean"] is None:
        return "-"
    low, high = row["accuracy_vs_full_ci95"]
    return f"{row['accuracy_vs_full_mean']:+.1%} ({low:+.1%} to {high:+.1%})"


def pct(value: float | None, spec: str = ".0%") -> str:
    return "-" if value is None else format(value, spec)


def render_markdown(
    results: Sequence[EvalResult], *, scenario: str, plots: Mapping[str, str]
) -> str:
    """The report of one scenario's runs: one table per reader."""
    runs = [r for r in results if r.scenario == scenario]
    scales = sorted({r.scale for r in runs})
    models = sorted({r.model for r in runs})
    lines = [f"# {scenario}: accuracy against token cost", ""]
    if all(r.simulated for r in runs):
        lines += [SIMULATED_NOTE, ""]
    prices = ", ".join(f"{m} (prices as of {_prices_as_of(m)})" for m in models)
    lines += [f"Scale: {', '.join(scales)}. Model: {prices}.", ""]
    for reader in _readers(runs):
        mine = [r for r in runs if r.reader == reader]
        lines += [f"## {reader.capitalize()} reader", ""]
        if reader in READER_NOTES:
            lines += [READER_NOTES[reader], ""]
        lines += render_table(aggregate(mine), mine)
        if reader in plots:
            lines += ["", f"![accuracy against cost]({plots[reader]})"]
        lines.append("")
    lines += [
        "Columns: accuracy over all probes and per kind; data-derived = accuracy over the "
        "probes answered from data (tool results, pasted user data); data-free floor = "
        "accuracy over the others (the plan's own words, memory, a skill), which pass without "
        "any data; wrong = confident wrong answers per "
        'run (a look-alike returned; "I don\'t know" is not counted); tokens summed over every '
        "model call (the agent's, the summarizer's, the subagents'); cached = input tokens "
        "read from the prefix shared with the previous request; peak context = the largest "
        "request; retrievals = file-tool calls made to answer probes; overflow = runs that "
        "died on a request over the window; lost to overflow = probes a run never reached "
        "because it died (counted wrong in accuracy); reached accuracy = accuracy over the "
        "probes reached, what the strategy's retention explains; cost, cache 0.1x / 0.5x = "
        "the same runs with cache reads priced at 0.1 and 0.5 of the input price, the "
        "published range (the simulated profile charges 0.05x, below it, which favours "
        "strategies that keep one long stable prefix). `front`: on the Pareto front of "
        "accuracy against cost.",
    ]
    return "\n".join(lines) + "\n"


def _prices_as_of(model: str) -> str:
    try:
        return get_profile(model).prices_as_of or "undated"
    except LookupError:
        return "unknown"


def write_report(
    results: Sequence[EvalResult], out_dir: str | Path = "reports", *, name: str | None = None
) -> list[Path]:
    """`<out>/<scenario>.md` and its figures (PNG and SVG) for each scenario in `results`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for scenario in dict.fromkeys(r.scenario for r in results):
        # A recorded scenario's name has a colon (`recorded:<run>`), which not every file
        # system takes.
        stem = name or re.sub(r"[^A-Za-z0-9._-]+", "-", scenario)
        runs = [r for r in results if r.scenario == scenario]
        plots: dict[str, str] = {}
        for reader in _readers(runs):
            mine = [r for r in runs if r.reader == reader]
            png = out / f"{stem}{'' if reader == 'fallible' else f'-{reader}'}.png"
            scale = "/".join(sorted({r.scale for r in mine}))
            title = f"{scenario} ({scale}, {reader} reader{_label(mine)})"
            written += [write_plot(mine, png, title=title), svg_of(png)]
            plots[reader] = png.name
        text = render_markdown(runs, scenario=scenario, plots=plots)
        if any(r.weeks for r in runs):
            png = write_weeks_plot(
                runs, out / f"{stem}-weeks.png", title=f"{scenario}, week by week"
            )
            written += [png, svg_of(png)]
            text += "\n" + "\n".join(render_weeks(runs, plot=png.name)) + "\n"
        md = out / f"{stem}.md"
        md.write_text(text, encoding="utf-8")
        written.insert(0, md)
    return written


# -- week by week (a recurring scenario: `--set weeks=N`) --------------------------------------


def week_setting(result: EvalResult) -> str:
    """What a recurring run's weeks are compared by: its arm and its parameters but `weeks`,
    the memory policy named even when it is the default."""
    from harness.middleware.memory import Memory

    params = {k: v for k, v in result.params.items() if k != "weeks"}
    policy = params.pop("memory.policy", Memory().policy)
    rest = "".join(f", {k}={v}" for k, v in sorted(params.items()))
    return f"{result.strategy}, memory.policy={policy}{rest}"


def weekly_means(results: Sequence[EvalResult]) -> dict[str, list[dict[str, Any]]]:
    """Per setting, each week's numbers averaged over its seeds (accuracy over the seeds that
    asked probes that week)."""
    by_setting: dict[str, list[EvalResult]] = {}
    for r in results:
        if r.weeks:
            by_setting.setdefault(week_setting(r), []).append(r)
    out: dict[str, list[dict[str, Any]]] = {}
    for setting, runs in by_setting.items():
        weeks = min(len(r.weeks) for r in runs)
        rows = []
        for k in range(weeks):
            cells = [r.weeks[k] for r in runs]
            asked = [c["accuracy"] for c in cells if c["accuracy"] is not None]
            prefs = [c["probes"]["pref"] for c in cells if c["probes"].get("pref") is not None]
            rows.append({
                "week": k + 1, "seeds": len(runs),
                "memory_tokens": sum(c["memory_tokens"] for c in cells) / len(cells),
                "input_tokens": sum(c["input_tokens"] for c in cells) / len(cells),
                "cost_usd": sum(c["cost_usd"] for c in cells) / len(cells),
                "accuracy": sum(asked) / len(asked) if asked else None,
                "pref": sum(prefs) / len(prefs) if prefs else None,
            })  # fmt: skip
        out[setting] = rows
    return out


def render_weeks(results: Sequence[EvalResult], *, plot: str | None = None) -> list[str]:
    """The week-by-week table: memory tokens injected, input tokens, cost and accuracy of each
    week, per setting (means over seeds)."""
    means = weekly_means(results)
    lines = ["## Week by week", ""]
    for setting, rows in means.items():
        seeds = rows[0]["seeds"]
        lines += [f"### {setting} ({seeds} seed{'s' * (seeds > 1)})", "",
                  "| week | memory tokens | input tokens | cost $ | accuracy | current pref. |",
                  "|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for row in rows:
            lines.append(
                f"| {row['week']} | {row['memory_tokens']:,.0f} | {row['input_tokens']:,.0f} | "
                f"{row['cost_usd']:.4f} | {pct(row['accuracy'])} | {pct(row['pref'])} |"
            )
        lines.append("")
    if plot:
        lines += [f"![tokens and accuracy per week]({plot})", ""]
    lines.append(
        "Memory tokens: what the memory blocks cost on every call of the week (at its start); "
        "input tokens and cost: every model call of the week, consolidation included; "
        "accuracy: the week's probes (current preference, latest value of a drifting fact, "
        "a decision, a wrong-if-stale check), asked from week 2 before the week's own news."
    )
    return lines


def write_weeks_plot(results: Sequence[EvalResult], path: str | Path, *, title: str) -> Path:
    """Memory tokens, input tokens and accuracy per week, one line per setting."""
    means = weekly_means(results)

    def series(key: str) -> dict[str, list[tuple[int, float]]]:
        return {s: [(r["week"], float(r[key])) for r in rows if r[key] is not None]
                for s, rows in means.items()}  # fmt: skip

    panels = [("memory tokens injected", series("memory_tokens"), False),
              ("input tokens of the week", series("input_tokens"), False),
              ("accuracy of the week's probes", series("accuracy"), True)]  # fmt: skip
    return weeks_chart(panels, path, title=title)


def _readers(runs: Sequence[EvalResult]) -> list[str]:
    """The readers of `runs`, the default first."""
    return sorted({str(r.reader) for r in runs}, key=lambda r: (r != "fallible", r))


def _label(runs: Sequence[EvalResult]) -> str:
    return ", simulated" if all(r.simulated for r in runs) else ""
