"""What one agent run did, read back from the store: the Prefect artifact of each run and the
summary `ctxlab run` prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.store import Store

_TREE = """
WITH RECURSIVE tree(run_id) AS (
    SELECT run_id FROM runs WHERE run_id = ?
    UNION ALL
    SELECT r.run_id FROM runs r JOIN tree t ON r.parent_run_id = t.run_id
)
"""


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
    run = store.run(run_id)
    if run is None:
        raise LookupError(f"no run {run_id!r} in {store.path}")
    subagents = store.query(
        _TREE + "SELECT count(*) AS runs, coalesce(sum(input_tokens), 0) AS input_tokens, "
        "coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost_usd), 0) AS cost_usd "
        "FROM runs WHERE run_id IN (SELECT run_id FROM tree) AND run_id <> ?",
        [run_id, run_id],
    )[0]
    peak = store.scalar(
        "SELECT coalesce(max(context_tokens), 0) FROM model_calls WHERE run_id = ?", [run_id]
    )
    lines = [
        MiddlewareLine(r["middleware"], r["action"], r["times"], r["before"], r["after"])
        for r in store.query(
            _TREE + "SELECT middleware, action, count(*) AS times, "
            "coalesce(sum(tokens_before), 0) AS before, coalesce(sum(tokens_after), 0) AS after "
            "FROM events WHERE run_id IN (SELECT run_id FROM tree) "
            "GROUP BY ALL ORDER BY middleware, action",
            [run_id],
        )
    ]
    files = store.query(
        _TREE + "SELECT path, size, namespace FROM files "
        "WHERE run_id IN (SELECT run_id FROM tree) ORDER BY path",
        [run_id],
    )
    return RunReport(run=run, subagents=subagents, peak_context_tokens=int(peak), middleware=lines,
                     files=files)  # fmt: skip


def subagent_runs(store: Store, run_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(subagent run, the run that started it) under `run_ids`, at any depth, in start order."""
    if not run_ids:
        return []
    marks = ", ".join("?" for _ in run_ids)
    rows = store.query(
        "WITH RECURSIVE tree(run_id, parent_run_id, started_at) AS ("
        f"SELECT run_id, parent_run_id, started_at FROM runs WHERE parent_run_id IN ({marks}) "
        "UNION ALL SELECT r.run_id, r.parent_run_id, r.started_at FROM runs r "
        "JOIN tree t ON r.parent_run_id = t.run_id) "
        "SELECT run_id, parent_run_id FROM tree ORDER BY started_at",
        list(run_ids),
    )
    return [(str(r["run_id"]), str(r["parent_run_id"])) for r in rows]


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
