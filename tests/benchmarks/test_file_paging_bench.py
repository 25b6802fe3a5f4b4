"""Large offloaded results: writing, reading a page, grepping, offloading through an agent.

Run with `uv run pytest tests/benchmarks/test_file_paging_bench.py --benchmark-only`. A page
read should cost the same at any position of a file of any size (it fetches one or two
chunks); offloading streams the result in chunks. Measured numbers go in the notes.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from types import SimpleNamespace

import pytest

from harness import Store, tool
from harness.agent import Agent
from harness.files.filesystem import FileSystem
from harness.files.tools import file_tools
from harness.messages import ToolCall
from harness.middleware.offload import OffloadLargeResults
from harness.models import ScriptedModel, call, reply
from harness.models.base import ModelSettings
from harness.steps import InlineRunner
from harness.tools import ToolContext

ROW = '{"id":123456,"name":"widget","price":12.5,"tags":["a","b"]},'


def one_line_json(megabytes: int) -> str:
    return "[" + ROW * (megabytes * 1_000_000 // len(ROW)) + '{"needle":1}]'


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> FileSystem:
    store = Store(tmp_path_factory.mktemp("paging") / "files.duckdb")
    fs = FileSystem(store, "t")
    fs.write("/large_tool_results/c1", one_line_json(50))
    return fs


def run_tool(fs: FileSystem, name: str, **args: object) -> str:
    tools = {t.name: t for t in file_tools()}
    ctx = ToolContext(state=SimpleNamespace(files=fs), call=ToolCall("c", name, args))
    return asyncio.run(tools[name].run(args, ctx))


@pytest.mark.parametrize("char_offset", [0, 25_000_000, 49_900_000])
def test_read_file_page_of_a_50mb_line(benchmark, big_file, char_offset) -> None:
    out = benchmark(
        run_tool, big_file, "read_file", file_path="/large_tool_results/c1", char_offset=char_offset
    )
    assert "char_offset=" in out


def test_grep_to_the_end_of_a_50mb_line(benchmark, big_file) -> None:
    out = benchmark.pedantic(
        run_tool, (big_file, "grep"), {"pattern": "needle", "output_mode": "content"}, rounds=3
    )
    assert "needle" in out


@tool
def dump(q: str) -> str:
    """Dump everything.

    Args:
        q: Query.
    """
    return PAYLOAD


PAYLOAD = one_line_json(50)


def test_offload_a_50mb_result_through_an_agent(benchmark, tmp_path) -> None:
    rounds = iter(range(100))

    def setup():
        model = ScriptedModel([reply("", call("dump", "c1", q="x")), "done"])
        agent = Agent(
            model=model, tools=[dump], system_prompt="", middleware=[OffloadLargeResults()],
            store=Store(tmp_path / f"run{next(rounds)}.duckdb"), name="a", max_steps=3,
            settings=ModelSettings(), step_runner=InlineRunner(),
        )  # fmt: skip
        return (agent,), {}

    def run(agent):
        tracemalloc.start()
        result = agent.run_sync("go", thread_id="t")
        benchmark.extra_info["python_peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        assert result.status == "completed"
        agent.store.close()

    benchmark.pedantic(run, setup=setup, rounds=3, iterations=1)
