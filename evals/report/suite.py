"""A suite's report: its summary (evals/analysis/suite.py) as markdown, one row per arm beside the
original harness, then recall at retained tokens per arm, and the files `eval --out` writes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.report.markdown import availability_cell, carried_cell, found_cell

SUITE_NOTE = (
    "Accuracy pools every probe of every trace; its interval resamples traces, not probes (the "
    "probes of one trace are not independent). `vs full`: paired by probe within each trace. "
    "Tokens and cost: sums over the traces (the mean over seeds of each). original: what the "
    "harness that made the traces reported, over the traces that carry it. Carried probes (the "
    "recorded user or agent restated the value) are scored apart. in view / one read / lost: "
    "where each value was when it was asked, with no reader (evals/README.md, Availability)."
)


def render_suite(summary: Mapping[str, Any]) -> list[str]:
    """A suite's summary (evals/analysis/suite.py) as markdown: one row per arm beside the
    original harness, then recall at retained tokens per arm."""
    lines = [
        f"# Suite {summary['suite']}: {summary['traces']} traces", "", SUITE_NOTE, "",
        "| arm | traces | accuracy (95% CI over traces) | vs full (95% CI) | ideal reader "
        "| in view / one read / lost | retrievals that found it | carried (apart) "
        "| input tokens | output tokens | cached | cost $ | compactions | overflow |",
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    head = harness_line(summary.get("harness_vs_ctxlab"))
    if head:
        lines[4:4] = head
    for arm in summary["arms"]:
        lines.append(
            f"| {arm['strategy']} | {arm['traces']} "
            f"| {_pair(arm['accuracy_mean'], arm['accuracy_ci95'], '.1%')} "
            f"| {_pair(arm['accuracy_vs_full_mean'], arm['accuracy_vs_full_ci95'], '+.1%')} "
            f"| {_pair(arm['ideal_accuracy_mean'], arm['ideal_accuracy_ci95'], '.1%')} "
            f"| {availability_cell(arm.get('availability', {}))} "
            f"| {found_cell((arm.get('retrievals_found', 0), arm.get('retrievals', 0)))} "
            f"| {carried_cell(arm.get('carried_probes', 0), arm.get('carried_accuracy'))} "
            f"| {arm['input_tokens_total']:,.0f} | {arm['output_tokens_total']:,.0f} "
            f"| {arm['cached_input_tokens_total']:,.0f} | {arm['cost_usd_total']:.4f} "
            f"| {arm['compactions_total']:g} | {arm['overflow_rate']:.0%} |"
        )  # fmt: skip
    orig = summary["original"]
    if orig["traces_with_original"]:

        def num(key: str, spec: str = ",") -> str:
            value = orig.get(key)
            return "-" if value is None else f"{format(value, spec)} ({orig[key + '_traces']})"

        lines.append(
            f"| original harness | {orig['traces_with_original']} | - | - | - | - | - | - "
            f"| {num('input_tokens')} | {num('output_tokens')} | {num('cache_read_tokens')} "
            f"| {num('cost_usd', '.4f')} | {num('compactions')} | - |"
        )
        lines += ["", "original: (n) = the traces that reported it; cached = cache reads "
                  f"(cache writes: {num('cache_creation_tokens')})."]  # fmt: skip
    lines += ["", *summary.get("identical_replays", [])]
    judged = [a for a in summary["arms"] if a.get("judged")]
    if judged:
        lines += ["", "Judge agreement (the judge's verdict matches the scorer's on the same "
                  "answers): " + ", ".join(f"{a['strategy']} {a['judge_agreement']:.0%} of "
                                           f"{a['judged']}" for a in judged) + "."]  # fmt: skip
    compared = [a for a in summary["arms"] if a.get("reader_agreement_probes")]
    if compared:
        rates = ", ".join(f"{a['strategy']} {a['reader_agreement']:.0%} of "
                          f"{a['reader_agreement_probes']}" for a in compared)  # fmt: skip
        lines += [
            "",
            "Simulated reader against the real model (both right or both wrong on "
            f"the same probe; the model graded by the judge where one ran): {rates}.",
        ]
    lines += [
        "", "## Recall at retained tokens", "",
        "Each probe binned by the tokens in the window when it was asked; accuracy of the "
        "fallible reader beside the ideal reader on the same probes.", "",
        "| arm | window tokens (up to) | probes | accuracy | ideal reader |",
        "|---|---:|---:|---:|---:|",
    ]  # fmt: skip
    for arm in summary["arms"]:
        for row in arm["recall_at_retained_tokens"]:
            lines.append(
                f"| {arm['strategy']} | {row['window_tokens_up_to']:,} | {row['probes']} "
                f"| {row['accuracy']:.1%} | {_pct1(row['ideal_accuracy'])} |"
            )
    return lines


def harness_line(head: Mapping[str, Any] | None) -> list[str]:
    """The recorded harness (the `original` arm) beside ctxlab's, in a sentence (none without
    both arms)."""
    if head is None:
        return []
    return [
        f"Your harness kept {_pct_ci(head['harness_accuracy'], head['harness_ci95'])} of what the "
        f"agent later needed at {_tokens(head['harness_window_tokens'])} tokens in the window; "
        f"ctxlab `{head['ctxlab_arm']}` kept "
        f"{_pct_ci(head['ctxlab_accuracy'], head['ctxlab_ci95'])} at "
        f"{_tokens(head['ctxlab_window_tokens'])} tokens (difference "
        f"{_pct_ci(head['difference_mean'], head['difference_ci95'], '+.1%')}; 95% intervals "
        "resample traces).",
        "",
    ]


def _pct_ci(mean: float | None, ci: Sequence[float] | None, spec: str = ".1%") -> str:
    return _pair(mean, ci, spec)


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _pair(mean: float | None, ci: Sequence[float] | None, spec: str) -> str:
    if mean is None:
        return "-"
    text = format(mean, spec)
    if ci is None or ci[0] == ci[1]:
        return text
    return f"{text} ({format(ci[0], spec)} to {format(ci[1], spec)})"


def _pct1(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def write_suite_report(summary: Mapping[str, Any], out_dir: str | Path, name: str) -> list[Path]:
    """`<out>/<name>.md` (the suite table and recall at retained tokens) and
    `<name>-recall.png` and `.svg` (the recall chart)."""
    from evals.report.plot import recall_lines, svg_of

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name)
    png = recall_lines(
        [(a["strategy"], [(r["window_tokens_up_to"], r["accuracy"], r["ideal_accuracy"])
                          for r in a["recall_at_retained_tokens"]]) for a in summary["arms"]],
        out / f"{stem}-recall.png",
        title=f"Recall at retained tokens: {name} ({summary['traces']} traces)",
    )  # fmt: skip
    md = out / f"{stem}.md"
    text = [*render_suite(summary), "", f"![recall at retained tokens]({png.name})"]
    md.write_text("\n".join(text) + "\n", encoding="utf-8")
    return [md, png, svg_of(png)]
