"""The compaction audit (evals/analysis/audit.py) as markdown: did the harness compact, what
each compaction dropped and what it cost, the harness beside ctxlab, and which ctxlab setting
would have kept more for fewer tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evals.report.suite import harness_line

NOTE = (
    "A probe is a value the agent used later in the recorded run; `lost` means the compaction "
    "took it out of the context (it was there before, and neither in the summary nor in what "
    "the compaction kept). Cache rewrite: the prompt after the compaction is written to the "
    "provider's cache again, priced at {price:g} $ per million tokens (the eval model's "
    "cache-write rate). ctxlab's arms other than none-unbounded ran at the harness's budget: "
    "each trace's largest prompt before a compaction (the provider's token count, so close, "
    "not exact, to ctxlab's), or the scenario's window where the harness never compacted."
)


def render_audit(audit: Mapping[str, Any]) -> list[str]:
    lines = [
        f"# Compaction audit: {audit['suite']}", "",
        f"{audit['traces_compacted']} of {audit['traces_total']} traces compacted "
        f"({audit['compactions_total']} compactions); they lost "
        f"{audit['probes_lost_total']} probe(s) and rewrote "
        f"{audit['cache_rewrite_tokens_total']:,} cached tokens"
        + (f" ({_usd(audit['cache_rewrite_usd_total'])})." if audit["cache_rewrite_usd_total"]
           is not None else "."),
        "", NOTE.format(price=audit["cache_write_usd_per_mtok"]), "",
    ]  # fmt: skip
    lines += harness_line(audit["headline"])
    lines += [
        "## Compactions", "",
        "| trace | format | # | turn | trigger | tokens before | tokens after | probes lost "
        "| cache rewrite |",
        "|---|---|---:|---|---|---:|---:|---:|---:|",
    ]  # fmt: skip
    for trace in audit["traces"]:
        if not trace["compactions"]:
            lines.append(f"| {trace['trace']} | {trace['format'] or '-'} | 0 | - | - | - | - "
                         "| - | - |")  # fmt: skip
        for c in trace["compactions"]:
            lines.append(
                f"| {trace['trace']} | {trace['format'] or '-'} | {c['number']} "
                f"| {c['turn'] or '-'} | {c['trigger'] or '-'} | {_int(c['tokens_before'])} "
                f"| {_int(c['tokens_after'])} | {len(c['lost'])} "
                f"| {_int(c['cache_rewrite_tokens'])} ({_usd(c['cache_rewrite_usd'])}) |"
            )
    dropped = [(t, c) for t in audit["traces"] for c in t["compactions"] if c["lost"]]
    if dropped:
        lines += ["", "## What each compaction dropped", ""]
        for trace, c in dropped:
            lines.append(f"- {trace['trace']}, compaction {c['number']}:")
            lines += [f"  - `{p['id']}` {_cut(p['value'])}: {_cut(p['question'], 120)}"
                      for p in c["lost"]]  # fmt: skip
    lines += _arms(audit["arms"])
    lines += ["", "## Which ctxlab setting would have kept more for fewer tokens", ""]
    if audit["headline"] is None:
        lines.append("No `original` run: run the audit with the `original` arm to compare.")
    elif not audit["better"]:
        lines.append("None of the arms run kept as much as the harness for fewer input tokens.")
    else:
        lines += [f"- `{b['arm']}`: {b['accuracy']:.1%} at {b['input_tokens']:,.0f} input tokens"
                  for b in audit["better"]]  # fmt: skip
    return lines


def _arms(arms: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "", "## Arms", "",
        "| arm | accuracy (95% CI) | window tokens at use | input tokens | cached | cost $ |",
        "|---|---|---:|---:|---:|---:|",
    ]  # fmt: skip
    for a in arms:
        lines.append(
            f"| {a['strategy']} | {_pct(a['accuracy_mean'], a['accuracy_ci95'])} "
            f"| {_int(a.get('window_tokens_at_use_mean'))} | {a['input_tokens_total']:,.0f} "
            f"| {a['cached_input_tokens_total']:,.0f} | {a['cost_usd_total']:.4f} |"
        )
    return lines


def _pct(mean: float | None, ci: Sequence[float] | None, spec: str = ".1%") -> str:
    if mean is None:
        return "-"
    if not ci or ci[0] == ci[1]:
        return format(mean, spec)
    return f"{format(mean, spec)} ({format(ci[0], spec)} to {format(ci[1], spec)})"


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _cut(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
