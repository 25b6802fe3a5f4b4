"""The long scripted trajectory of issues 12 and 21, and its measurements, with no pytest in
the process (the deepagents side has none; importing pytest alone adds ~24 MB of RSS).

Per company the model fetches a market export (`rows` CSV rows, ~95k characters at 3,000 rows:
offloaded) and then a news page (kept in the window). The `full` strategy runs with a window
large enough that only offloading acts. The scripted model counts its own usage, as in tests.

Run the file for one measurement in a fresh interpreter (peak RSS is per process and never goes
down): `uv run python tests/benchmarks/trajectory.py 200 3000 [memory|file]` prints one JSON
line; `shares` instead prints the share of each part (store, offload, tokens, tools, loop),
`tools` the cost of running a sync tool on the reused worker threads. The benchmarks are
`test_trajectory_bench.py`; the side-by-side with deepagents is
`test_trajectory_vs_deepagents.py`.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from trajectory_texts import peak_rss_mb, rss_by_mapping, tool_calls, tool_functions

from harness import Store, create_agent, tool
from harness.messages import ModelResponse, ToolCall
from harness.models import ScriptedModel
from harness.profiles import ModelProfile

# Only offloading acts: summarization never reaches its trigger in this window.
WINDOW = ModelProfile(name="bench-traj", context_window=100_000_000, encoding="cl100k_base")


def build_agent(companies: int, rows: int, store: Store) -> Any:
    tools = [tool(f) for f in tool_functions(rows)]
    script = [
        ModelResponse(tool_calls=(ToolCall(tid, name, {"company": company}),))
        for tid, name, company in tool_calls(companies)
    ]
    script.append(ModelResponse(text="Done: every company reviewed."))
    model = ScriptedModel(script, profile=WINDOW)
    return create_agent(
        model,
        tools,
        store=store,
        strategy="full",
        max_steps=len(script) + 1,
    )


def steps_for(companies: int) -> int:
    return 2 * companies + 1


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def measure(companies: int, rows: int, backend: str, db_dir: str) -> dict[str, Any]:
    """One run in this process: ms per step, peak RSS, RSS growth per step after step 100."""
    path = ":memory:" if backend == "memory" else str(Path(db_dir) / "traj.duckdb")
    if backend != "memory":
        # A file left by an earlier run would be opened, cached and grown: start empty.
        for leftover in (Path(path), Path(path + ".wal")):
            leftover.unlink(missing_ok=True)
    samples: dict[int, float] = {}
    store = Store(path)
    agent = build_agent(companies, rows, store)
    writes: list[float] = []
    write = store.write

    def timed_write(batch: Any) -> None:
        # CPU time: DuckDB works in the calling thread (threads=1), and the machine is shared.
        begin = time.process_time()
        write(batch)
        writes.append(time.process_time() - begin)

    store.write = timed_write  # type: ignore[method-assign]

    from harness.middleware.base import Middleware

    class Sampler(Middleware):
        name = "rss-sampler"

        async def after_model(self, state: Any, response: Any) -> None:
            samples[state.step] = _rss_mb()

    agent.middleware = (*agent.middleware, Sampler())
    start, cpu = time.perf_counter(), time.process_time()
    result = agent.run_sync("Review every company: export, then news.")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    # Read before the store closes: what DuckDB holds for the run (its tables' strings,
    # indexes), by its own accounting, beside the process's resident memory by mapping.
    duckdb_mb = {
        row["tag"]: round(row["mb"], 1)
        for row in agent.store.query(
            "SELECT tag, memory_usage_bytes / 2**20 AS mb FROM duckdb_memory() "
            "WHERE memory_usage_bytes > 0"
        )
    }
    by_mapping = rss_by_mapping()
    agent.store.close()
    steps = result.steps
    last = max(samples)
    growth = (samples[last] - samples[101]) / (last - 101) if last > 151 else None
    return {
        "steps": steps,
        "ms_per_step": elapsed * 1000 / steps,
        # CPU time is the steadier number on a machine shared with other work.
        "cpu_ms_per_step": cpu * 1000 / steps,
        # `Store.write`, the step's rows in one transaction, CPU ms per step.
        "store_write_ms_per_step": sum(writes) * 1000 / steps,
        "peak_rss_mb": peak_rss_mb(),
        "rss_growth_mb_per_step_after_100": growth,
        "rss_mb_at": {k: round(v) for k, v in samples.items() if k in (1, 11, 101, 201, 401, 1001)},
        "rss_mb_by_mapping": by_mapping,
        "duckdb_memory_mb": duckdb_mb,
    }


# Where the time of a run goes, by the cumulative time of these functions under cProfile
# (file, function name); `loop` is the rest: the loop, the middleware, the scripted model.
PARTS = {
    "store": [("harness/store/store.py", "write")],
    "offload": [("harness/middleware/offload.py", "_offload_tool_result")],
    "tokens": [("harness/middleware/offload.py", "_tokens_over"),
               ("harness/tokens.py", "count_message")],
    "tools": [("harness/loop.py", "_tool_step")],
}  # fmt: skip


def shares(companies: int, rows: int) -> dict[str, float]:
    """The share of each part of a run (see PARTS), from one run under cProfile (which slows
    it down, pure Python more than native code: read these as a guide, not as timings)."""
    import cProfile
    import pstats

    agent = build_agent(companies, rows, Store(":memory:"))
    profile = cProfile.Profile()
    profile.enable()
    agent.run_sync("Review every company: export, then news.")
    profile.disable()
    stats: Any = pstats.Stats(profile).stats
    total = max(ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "run_sync")
    cumulative: dict[tuple[str, str], float] = {}
    for (file, _, name), (_, _, _, ct, _) in stats.items():
        for part in PARTS.values():
            for suffix, fn in part:
                if name == fn and file.endswith(suffix):
                    cumulative[(suffix, fn)] = cumulative.get((suffix, fn), 0.0) + ct
    out = {k: sum(cumulative.get(key, 0.0) for key in keys) / total for k, keys in PARTS.items()}
    # Store writes of offloaded files happen inside the offload step, tokens inside offloading.
    out["loop"] = 1 - sum(out.values())
    return {k: round(v, 3) for k, v in out.items()}


def tool_overhead_us(calls: int = 2_000) -> dict[str, float]:
    """What running a sync tool costs beyond calling it: `Tool.run` of a tool that returns at
    once, on the reused worker threads (its time limit kept), against the same tool written
    async (no thread) and the bare function call; microseconds per call."""
    import asyncio

    from harness.tools import ToolContext

    def bare(n: int) -> str:
        return "ok"

    async def bare_async(n: int) -> str:
        return "ok"

    sync_tool, async_tool = tool(bare), tool(bare_async)
    ctx = ToolContext(state=None, call=ToolCall("c", "bare", {"n": 1}))  # type: ignore[arg-type]

    async def per_call(t: Any) -> float:
        for _ in range(50):  # warm the pool and pydantic
            await t.run({"n": 1}, ctx)
        begin = time.perf_counter()
        for _ in range(calls):
            await t.run({"n": 1}, ctx)
        return (time.perf_counter() - begin) * 1e6 / calls

    sync_us = asyncio.run(per_call(sync_tool))
    async_us = asyncio.run(per_call(async_tool))
    begin = time.perf_counter()
    for _ in range(calls):
        bare(1)
    direct_us = (time.perf_counter() - begin) * 1e6 / calls
    return {
        "sync_tool_run_us": round(sync_us, 1),
        "async_tool_run_us": round(async_us, 1),
        "bare_call_us": round(direct_us, 2),
        "sync_thread_overhead_us": round(sync_us - async_us, 1),
    }


if __name__ == "__main__":
    n_companies, n_rows = int(sys.argv[1]), int(sys.argv[2])
    where = sys.argv[3] if len(sys.argv) > 3 else "memory"
    folder = sys.argv[4] if len(sys.argv) > 4 else "/tmp"
    if where == "shares":
        print(json.dumps(shares(n_companies, n_rows)))
    elif where == "tools":
        print(json.dumps(tool_overhead_us()))
    else:
        print(json.dumps(measure(n_companies, n_rows, where, folder)))
