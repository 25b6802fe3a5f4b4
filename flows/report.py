"""What one agent run did, read back from the store: the Prefect artifact of each run and the
summary `ctxlab run` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.store import Store


@dataclass(frozen=True)
class MiddlewareLine:
    middleware: str
    action: str
    times: int
    tokens_before: int
    tokens_after: int

    @property
    def moved_out(self) -> int:
        return max(self.tokens_before - self.tokens_after, 0)


@dataclass(frozen=True)
class RunReport:
    """Totals of a run and of the subagent runs under it."""

    run: dict[str, Any]
    subagents: dict[str, Any]
    peak_context_tokens: int
    middleware: list[MiddlewareLine] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    @property
    def cost_usd(self) -> float:
        return float(self.run["cost_usd"] or 0) + float(self.subagents["cost_usd"] or 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "thread_id": self.run["thread_id"],
            "status": self.run["status"],
            "steps": self.run["steps"],
            "input_tokens": int(self.run["input_tokens"] or 0),
            "output_tokens": int(self.run["output_tokens"] or 0),
            "cached_tokens": int(self.run["cached_tokens"] or 0),
            "peak_context_tokens": self.peak_context_tokens,
            "subagent_runs": int(self.subagents["runs"]),
            "cost_usd": round(self.cost_usd, 6),
            "moved_out_tokens": sum(m.moved_out for m in self.middleware),
            "files_written": len(self.files),
        }


def run_report(store: Store, run_id: str) -> RunReport:
    run = store.runs.get(run_id)
    if run is None:
        raise LookupError(f"no run {run_id!r} in {store.path}")
    subagents = store.runs.subagent_totals(run_id)
    _, peak = store.usage.of_run(run_id)
    lines = [
        MiddlewareLine(r["middleware"], r["action"], r["times"], r["before"], r["after"])
        for r in store.events.tree_totals(run_id)
    ]
    files = store.files.of_run_tree(run_id)
    return RunReport(run=run, subagents=subagents, peak_context_tokens=int(peak), middleware=lines,
                     files=files)  # fmt: skip


def render_markdown(report: RunReport, *, extra: dict[str, Any] | None = None) -> str:
    """The run as a markdown page (the Prefect artifact of the run)."""
    r, s = report.run, report.subagents
    out = [
        f"# {r['agent']} run `{report.run_id}`",
        "",
        f"**{r['status']}** after {r['steps']} model calls on thread `{r['thread_id']}`, "
        f"model `{r['model']}`, strategy `{r['strategy'] or 'default'}`.",
        "",
        "| | this run | subagents |",
        "|---|---:|---:|",
        f"| input tokens | {_n(r['input_tokens'])} | {_n(s['input_tokens'])} |",
        f"| cached input tokens | {_n(r['cached_tokens'])} | |",
        f"| output tokens | {_n(r['output_tokens'])} | {_n(s['output_tokens'])} |",
        f"| peak context tokens | {_n(report.peak_context_tokens)} | |",
        f"| cost (USD) | {r['cost_usd'] or 0:.4f} | {s['cost_usd'] or 0:.4f} |",
        f"| runs | 1 | {s['runs']} |",
        "",
        "## What the middleware moved out of the window",
        "",
    ]
    moved = [m for m in report.middleware if m.tokens_before or m.tokens_after]
    if moved:
        out += [
            "| middleware | action | times | tokens before | tokens after | moved out |",
            "|---|---|---:|---:|---:|---:|",
        ]
        out += [
            f"| {m.middleware} | {m.action} | {m.times} | {_n(m.tokens_before)} | "
            f"{_n(m.tokens_after)} | {_n(m.moved_out)} |"
            for m in moved
        ]
        total = sum(m.moved_out for m in moved)
        out += ["", f"In all, {_n(total)} tokens were kept out of the window (nothing deleted)."]
    else:
        out.append("Nothing: the window never needed compaction.")
    out += ["", "## Files written", ""]
    if report.files:
        out += ["| path | bytes |", "|---|---:|"]
        out += [f"| `{f['path']}` | {_n(f['size'])} |" for f in report.files]
    else:
        out.append("None.")
    if extra:
        out += ["", "## Orchestration", ""]
        out += [f"- {key}: {value}" for key, value in extra.items()]
    return "\n".join(out) + "\n"


def _n(value: Any) -> str:
    return f"{int(value or 0):,}"
