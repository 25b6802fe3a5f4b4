"""The compaction audit of a suite of imported traces: how often each trace's harness
compacted, what each compaction dropped (the probes it made `lost`, with their values), what
it cost in cache rewrites, and, from a run of the `original` arm beside ctxlab's, how much of
what the agent later needed the harness kept at its tokens against ctxlab's arms.

A compaction rewrites the prompt from the summary on: the provider's cached prefix ends at the
system prompt, so the whole prompt after it (`tokens_after`, else nothing known) is written to
the cache again, priced at the model's cache-write rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evals.analysis.suite import ORIGINAL, suite_summary
from evals.scenarios.suite import Suite, SuiteFile
from evals.scoring.results import EvalResult


def compaction_rows(trace: SuiteFile, cache_write_usd_per_mtok: float) -> list[dict[str, Any]]:
    """Each compaction of `trace`'s scenario file, with the probes it lost and its rewrite."""
    from evals.scenarios.from_file import read_spec

    spec = read_spec(trace.file)
    probes = {p.id: p for p in spec.probes}
    rows = []
    for n, c in enumerate(spec.source.get("compactions") or [], 1):
        after = c.get("tokens_after")
        lost = [probes[i] for i in c.get("lost") or [] if i in probes]
        rows.append(
            {
                "number": n, "turn": c.get("turn", ""), "trigger": c.get("trigger"),
                "tokens_before": c.get("tokens_before"), "tokens_after": after,
                "cache_rewrite_tokens": after,
                "cache_rewrite_usd": None if after is None
                else round(after * cache_write_usd_per_mtok / 1_000_000, 6),
                "lost": [{"id": p.id, "question": p.question, "value": p.answer} for p in lost],
            }
        )  # fmt: skip
    return rows


MIN_BUDGET = 1_024  # a window below this leaves no room for a turn of any replay


def harness_budget(trace: SuiteFile) -> int | None:
    """The prompt size at which `trace`'s harness compacted (the largest `tokens_before`), the
    budget ctxlab's arms get beside it; None when it never compacted or did not say."""
    before = [c["tokens_before"] for c in compaction_rows(trace, 0.0) if c["tokens_before"]]
    return max(max(before), MIN_BUDGET) if before else None


def audit(
    suite: Suite,
    runs: Sequence[tuple[SuiteFile, EvalResult]],
    *,
    cache_write_usd_per_mtok: float,
    base: str = "full",
) -> dict[str, Any]:
    """The audit of `suite` (see the module docstring); `runs` are its eval runs, the
    `original` arm among them when the comparison is wanted."""
    traces = []
    for trace in suite.traces:
        rows = compaction_rows(trace, cache_write_usd_per_mtok)
        traces.append({"trace": trace.trace, "file": trace.file.name, "format": trace.format,
                       "compactions": rows})  # fmt: skip
    summary = suite_summary(suite, runs, {}, base=base)
    compactions = [c for t in traces for c in t["compactions"]]
    rewrites = [c["cache_rewrite_usd"] for c in compactions if c["cache_rewrite_usd"] is not None]
    return {
        "suite": str(suite.directory),
        "traces": traces,
        "traces_total": len(traces),
        "traces_compacted": sum(bool(t["compactions"]) for t in traces),
        "compactions_total": len(compactions),
        "probes_lost_total": sum(len(c["lost"]) for c in compactions),
        "cache_rewrite_tokens_total": sum(c["cache_rewrite_tokens"] or 0 for c in compactions),
        "cache_rewrite_usd_total": round(sum(rewrites), 6) if rewrites else None,
        "cache_write_usd_per_mtok": cache_write_usd_per_mtok,
        "arms": summary["arms"],
        "headline": summary["harness_vs_ctxlab"],
        "better": better_settings(summary["arms"]),
    }


def better_settings(arms: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """ctxlab's arms that kept at least as much as the harness for fewer input tokens, fewest
    tokens first ([] when none did, or without an `original` run)."""
    found = {a["strategy"]: a for a in arms}
    mine = found.get(ORIGINAL)
    if mine is None or mine["accuracy_mean"] is None:
        return []
    out = [
        {"arm": a["strategy"], "accuracy": a["accuracy_mean"],
         "input_tokens": a["input_tokens_total"]}
        for a in arms
        if a["strategy"] != ORIGINAL and a["accuracy_mean"] is not None
        and a["accuracy_mean"] >= mine["accuracy_mean"]
        and a["input_tokens_total"] < mine["input_tokens_total"]
    ]  # fmt: skip
    return sorted(out, key=lambda a: a["input_tokens"])
