"""`ctxlab demo`: the whole product, offline, in under two minutes.

1. Finds (or starts) the local Prefect server, so every step stays visible in its UI.
2. Runs the competitive-analysis agent as a Prefect flow: week 1 (exports, news, articles, the
   market-researcher subagent, the qbr-report skill, feedback worth remembering), then week 2 on
   a new thread, where only memory carries the team's format preference over.
3. Compares `full`, `mask`, `truncate` and `none` on the flagship scenario (small scale) as an
   eval sweep, one Prefect task per cell.
4. Prints the results table and writes `reports/demo.md` and `reports/demo.png`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.server import ServerInfo, ensure_server, using_server

STRATEGIES = ["full", "mask", "truncate", "none"]
QUERIES = (
    "SELECT middleware, action, count(*) AS times FROM events GROUP BY ALL ORDER BY ALL",
    "SELECT strategy, accuracy, cost_usd FROM eval_runs",
)
SCENARIO = "competitive-analysis"


def run_demo(
    *, db: str | None = None, out: str = "reports", port: int | None = None, ephemeral: bool = False
) -> int:
    start = time.perf_counter()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = Path(db) if db else out_dir / "demo.duckdb"
    if db is None:  # the demo's own store, made fresh so that week 1 starts from no memory
        for stale in (db_path, db_path.with_name(db_path.name + ".wal")):
            stale.unlink(missing_ok=True)
    say("ctxlab demo: offline, with the deterministic simulated model (no API key needed).")
    info = None
    if not ephemeral:
        info = ensure_server(port)
        say(
            f"Prefect server at {info.ui_url}"
            + (f" (started in {info.start_seconds:.0f} s)." if info.started_now else ".")
        )
    hints = logging.getLogger("ctxlab.flows")
    level = hints.level
    hints.setLevel(logging.WARNING)  # no per-run resume hints in the demo's output
    log_path = out_dir / "demo.log"
    try:
        with using_server(info) if info else nullcontext(), task_log(log_path) as log:
            weeks = asyncio.run(_agent_weeks(str(db_path), log))
            sweep = asyncio.run(_compare(str(db_path)))
    finally:
        hints.setLevel(level)
    elapsed = time.perf_counter() - start
    demo = DemoOutcome(weeks=weeks, sweep=sweep, db=str(db_path), server=info, seconds=elapsed)
    _print_results(demo)
    md, png = write_reports(demo, out_dir)
    say(f"\nWrote {md} and {png}; every Prefect task, by name, in {log_path}.")
    _print_next_steps(demo)
    say(f"Done in {time.perf_counter() - start:.0f} s.")
    return 0


def say(text: str) -> None:
    """A line of the demo's story, wrapped to the terminal."""
    from evals.report.terminal import say as wrapped

    wrapped(text)


async def _agent_weeks(db: str, log: logging.FileHandler) -> list[dict[str, Any]]:
    from flows.agent_run import agent_run

    weeks = []
    for week in (1, 2):
        say(f"\nWeek {week}: running the competitive-analysis agent as a Prefect flow ...")
        t = time.perf_counter()
        with step_progress(f"week {week}", log):
            result = await agent_run(
                agent="competitive-analysis", db=db, params={"week": week, "scale": "small"}
            )
        result["seconds"] = time.perf_counter() - t
        weeks.append(result)
        runs = result["runs"]
        tasks = sum(r["tasks"] for r in runs)
        say(
            f"  {plural(len(runs), 'run')}, {plural(tasks, 'Prefect task')}, "
            f"{sum(r['input_tokens'] for r in runs):,} input tokens, "
            f"{sum(r['moved_out_tokens'] for r in runs):,} tokens moved out of the window, "
            f"${sum(r['cost_usd'] for r in runs):.4f} (simulated prices), "
            f"{result['seconds']:.1f} s"
        )
    return weeks


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class StepCounter(logging.Handler):
    """Counts the step tasks the Prefect runner starts and shows the count and the latest."""

    def __init__(self, show: Callable[[int, str], None]) -> None:
        super().__init__(logging.DEBUG)
        self.show, self.tasks = show, 0

    def emit(self, record: logging.LogRecord) -> None:
        self.tasks += 1
        self.show(self.tasks, record.getMessage())


@contextmanager
def task_log(path: Path) -> Iterator[logging.FileHandler]:
    """While the demo runs, each step task's name goes to `path` (and, as ever, to the Prefect
    UI), never to the terminal: one line per task would bury the demo's output."""
    from flows.runner import step_log

    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    level, propagate = step_log.level, step_log.propagate
    step_log.addHandler(handler)
    step_log.setLevel(logging.DEBUG)
    step_log.propagate = False  # the CLI's stderr handler sits on the parent logger
    try:
        yield handler
    finally:
        step_log.removeHandler(handler)
        handler.close()
        step_log.setLevel(level)
        step_log.propagate = propagate


@contextmanager
def step_progress(phase: str, log: logging.FileHandler | None = None) -> Iterator[StepCounter]:
    """A progress bar on stderr while a phase runs, counting its Prefect tasks (drawn only on a
    terminal, and cleared at the end: the phase's summary line follows on stdout). The log
    file's lines name the phase."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from flows.runner import step_log

    console = Console(stderr=True)
    bar = Progress(
        TextColumn(f"[bold]{phase}"), BarColumn(), TextColumn("{task.fields[tasks]}"),
        TimeElapsedColumn(), TextColumn("{task.description}"), console=console, transient=True,
    )  # fmt: skip
    if log is not None:
        log.setFormatter(logging.Formatter(f"%(asctime)s {phase}: %(message)s"))
    with bar if console.is_terminal else nullcontext():  # piped, even a cleared bar leaves a line
        # No total: how many steps a session takes is known only once it has run.
        job = bar.add_task("starting ...", total=None, tasks=plural(0, "Prefect task"))

        def show(tasks: int, latest: str) -> None:
            bar.update(job, description=f"now {latest}", tasks=plural(tasks, "Prefect task"))

        counter = StepCounter(show)
        step_log.addHandler(counter)
        try:
            yield counter
        finally:
            step_log.removeHandler(counter)


async def _compare(db: str) -> dict[str, Any]:
    from flows.sweep import eval_sweep, task_runner

    say(f"\nComparing {', '.join(STRATEGIES)} on the {SCENARIO} scenario (small scale) ...")
    return await eval_sweep.with_options(task_runner=task_runner("thread"))(
        scenario=SCENARIO, strategies=STRATEGIES, seeds=1, db=db, show_progress=True
    )


@dataclass(frozen=True)
class DemoOutcome:
    weeks: list[dict[str, Any]]
    sweep: dict[str, Any]
    db: str
    server: ServerInfo | None
    seconds: float

    def moved_out(self) -> list[tuple[str, str, int, int]]:
        """(middleware, action, times, tokens moved out) over both weeks' runs."""
        from flows.report import run_report
        from harness.store import Store

        store = Store(self.db, hold=False)
        totals: dict[tuple[str, str], list[int]] = {}
        for week in self.weeks:
            for run in week["runs"]:
                for line in run_report(store, run["run_id"]).middleware:
                    entry = totals.setdefault((line.middleware, line.action), [0, 0])
                    entry[0] += line.times
                    entry[1] += line.moved_out
        return [(mw, action, n, moved) for (mw, action), (n, moved) in sorted(totals.items())]

    def report_text(self, week: int) -> str:
        from harness.files.filesystem import FileSystem
        from harness.store import Store

        thread = self.weeks[week - 1]["thread_id"]
        files = FileSystem(Store(self.db, hold=False), thread)
        reports = [f.path for f in files.glob("/reports/*.md")]
        return files.read_text(reports[-1]) if reports else ""


def _print_results(demo: DemoOutcome) -> None:
    from flows.sweep import print_sweep

    say("")
    print_sweep(demo.sweep["rows"], title=f"{SCENARIO}, small scale, simulated model")
    if demo.sweep["recommendation"]:
        say(demo.sweep["recommendation"])
    bullets = _uses_bullets(demo.report_text(2))
    say(f"Week 2 report follows the remembered format (bullets): {'yes' if bullets else 'no'}")


def _uses_bullets(report: str) -> bool:
    body = [line for line in report.splitlines() if line.strip() and not line.startswith("#")]
    return bool(body) and all(line.startswith("- ") for line in body)


def _print_next_steps(demo: DemoOutcome) -> None:
    if demo.server is not None:
        say(f"\nSee each middleware step as a task in the Prefect UI: {demo.server.ui_url}/runs")
        for week in demo.weeks:
            say(f"  {demo.server.flow_run_url(week['flow_run_id'])}")
        say("  (the server keeps running; `ctxlab server stop` stops it)")
    say(f"\nQuery the store (DuckDB): {demo.db}")
    for query in QUERIES:
        say(f'  ctxlab sql --db {demo.db} "{query}"')


def write_reports(demo: DemoOutcome, out_dir: Path) -> tuple[Path, Path]:
    """`demo.md` (what ran, the comparison, where to look) and `demo.png` (accuracy against
    cost, Pareto front marked)."""
    from evals.report.markdown import write_plot

    md_path, png_path = out_dir / "demo.md", out_dir / "demo.png"
    write_plot(demo.sweep["rows"], png_path, title=f"{SCENARIO} (small scale, simulated)")
    md_path.write_text(render_markdown(demo, png_path.name))
    return md_path, png_path


def render_markdown(demo: DemoOutcome, png_name: str) -> str:
    lines = [
        "# ctxlab demo",
        "",
        f"Offline, with the deterministic simulated model; {demo.seconds:.0f} s on this machine. "
        "Costs use the simulated profile's prices: they compare strategies, not providers.",
        "",
        "## 1. The competitive-analysis agent as a Prefect flow",
        "",
        "Each week is one session on its own thread, one run per user input. A run that hands "
        "work to the market-researcher subagent starts subagent runs, linked to it in the store "
        "(`runs.parent_run_id`); they are counted in its row (`subagent runs`) and their cost "
        "is in its cost, while the token columns are the run's own.",
        "",
        "| week | input | run | status | model calls | input tokens | output tokens | moved out "
        "| files | subagent runs | cost $ | Prefect tasks |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for week, result in enumerate(demo.weeks, start=1):
        runs = result["runs"]
        for n, r in enumerate(runs, start=1):
            lines.append(
                f"| {week} | {n} of {len(runs)} | `{r['run_id']}` | {r['status']} | "
                f"{r['steps']} | {r['input_tokens']:,} | {r['output_tokens']:,} | "
                f"{r['moved_out_tokens']:,} | {r['files_written']} | {r['subagent_runs']} | "
                f"{r['cost_usd']:.4f} | {r['tasks']} |"
            )
    lines += [
        "",
        "What each middleware moved out of the window (nothing is deleted: offloaded results, "
        "summarized history and subagent transcripts stay in the store and the files):",
        "",
        "| middleware | action | times | tokens moved out |",
        "|---|---|---:|---:|",
    ]
    lines += [
        f"| {mw} | {action} | {n} | {moved:,} |"
        for mw, action, n, moved in demo.moved_out()
        if moved
    ]
    report = demo.report_text(2)
    lines += [
        "",
        "Week 2 ran on a new thread: only long-term memory (`/memories/AGENTS.md`) carried over, "
        f"and its report {'uses' if _uses_bullets(report) else 'does not use'} bullets, as the "
        "user asked in week 1:",
        "",
        "```markdown",
        report.strip(),
        "```",
        "",
        f"## 2. Strategies compared on `{SCENARIO}` (small scale, seed 0)",
        "",
        "| | setting | accuracy | vs full | input tokens | peak context | cost $ | overflow |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in demo.sweep["rows"]:
        marks = [("recommended", r["recommended"]), ("tied", r.get("tied_with_best")),
                 ("front", r["pareto"])]  # fmt: skip
        vs_full = "-" if r.get("vs_full") is None else f"{r['vs_full']:+.1%}"
        lines.append(
            f"| {', '.join(m for m, on in marks if on)} | {r['setting']} | {r['accuracy']:.1%} | "
            f"{vs_full} | {r['input_tokens']:,} | {r['peak_context_tokens']:,} | "
            f"{r['cost_usd']:.4f} | {r['overflow_rate']:.0%} |"
        )
    lines += ["", *overflow_notes(demo.sweep["rows"])]
    lines += [
        f"Pareto front (accuracy against cost): {', '.join(demo.sweep['front'])}. "
        f"{emphasised(demo.sweep['recommendation'], demo.sweep['recommended'])}",
        "",
        f"![accuracy against cost]({png_name})",
        "",
        "Simulated results measure what each strategy keeps within the model's reach; they are "
        "not a real model's scores and are not comparable with published numbers.",
        "",
        "## 3. Look for yourself",
        "",
    ]
    if demo.server is not None:
        lines += [f"- Prefect UI: {demo.server.ui_url}/runs: each middleware step is a task"]
        lines += [f"  - {demo.server.flow_run_url(w['flow_run_id'])}" for w in demo.weeks]
    lines += [
        f'- The store: `ctxlab sql --db {demo.db} "{QUERIES[0]}"`',
        f"- Eval results: `eval_runs` and `eval_probes` in `{demo.db}` (batch "
        f"`{demo.sweep['batch']}`)",
    ]
    return "\n".join(lines) + "\n"


def overflow_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line per setting whose runs overflowed the window: its accuracy is low for that
    reason (the session ends at the overflow; the probes after it are misses)."""
    notes = []
    for r in rows:
        rate = float(r.get("overflow_rate") or 0)
        if rate:
            runs = "every run" if rate >= 1 else f"{rate:.0%} of its runs"
            notes.append(
                f"`{r['setting']}` overflowed the model's window on {runs} (crossed out on the "
                "plot): the session ends there and every probe after it counts as a miss."
            )
    return [*notes, ""] if notes else []


def emphasised(recommendation: str | None, names: Sequence[str]) -> str:
    """The recommendation sentence with the recommended settings in bold (said once)."""
    if not recommendation:
        return "Nothing recommended."
    joined = " and ".join(names)
    return recommendation.replace(joined, f"**{joined}**", 1) if joined else recommendation
