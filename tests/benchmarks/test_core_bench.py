"""Harness core costs: per-step overhead, token counting, store appends.

Run with `uv run pytest tests/benchmarks --benchmark-only`. Numbers go in the notes, never in
asserts. The scripted model reports its own usage so the benchmark times only the harness:
loop, middleware plumbing, token accounting (each new ~2k-token result counted once) and one
store transaction per step.
"""

import random

import pytest

from harness import Store, create_agent, tool
from harness.messages import ModelResponse, ToolCall, Usage, user
from harness.models import ScriptedModel
from harness.profiles import ModelProfile
from harness.store import StepBatch, message_row
from harness.tokens import TokenCounter

# Large enough that no compaction fires: this measures plumbing, not summarization.
BIG = ModelProfile(name="bench", context_window=50_000_000, encoding="cl100k_base")


def _result_text(seed: int) -> str:
    rng = random.Random(seed)
    words = ["revenue", "Acme", "Q3", "growth", "12.5%", "market", "share", "EMEA", "units"]
    return "\n".join(" | ".join(rng.choice(words) for _ in range(10)) for _ in range(70))


@tool
def fetch(page: int) -> str:
    """Fetch one page of the market export."""
    return f"page {page}\n" + _result_text(page)


def _script(steps: int) -> list[ModelResponse]:
    usage = Usage(input_tokens=1, output_tokens=1, requests=1)
    turns = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "fetch", {"page": i}),), usage=usage)
        for i in range(steps - 1)
    ]
    return [*turns, ModelResponse(text="done", usage=usage)]


@pytest.mark.parametrize("steps", [10, 100, 1000])
@pytest.mark.parametrize("backend", ["memory", "file"])
def test_per_step_overhead(benchmark, steps, backend, tmp_path) -> None:
    counter = iter(range(1_000_000))

    def setup():
        path = ":memory:" if backend == "memory" else tmp_path / f"b{next(counter)}.duckdb"
        model = ScriptedModel(_script(steps), profile=BIG)
        agent = create_agent(model, [fetch], store=Store(path), max_steps=steps + 1)
        return (agent,), {}

    def run(agent):
        result = agent.run_sync("Go through the export page by page.")
        assert result.steps == steps
        agent.store.close()

    benchmark.extra_info["steps"] = steps
    benchmark.pedantic(run, setup=setup, rounds=3 if steps == 1000 else 5, iterations=1)


def test_token_counting_throughput(benchmark) -> None:
    counter = TokenCounter()
    texts = [_result_text(i) for i in range(50)]
    total = sum(counter.count_text(t) for t in texts)
    benchmark.extra_info["tokens_per_round"] = total
    benchmark(lambda: [counter.count_text(t) for t in texts])


@pytest.mark.parametrize("backend", ["memory", "file"])
def test_store_append_throughput(benchmark, backend, tmp_path) -> None:
    store = Store(":memory:" if backend == "memory" else tmp_path / "append.duckdb")
    text = _result_text(0)
    seq = iter(range(1, 10_000_000))

    def one_step():
        batch = StepBatch()
        for _ in range(5):
            batch.add(
                "messages",
                message_row(user(text), thread_id="t", seq=next(seq), run_id="r", step=0, tokens=1),
            )
        store.write(batch)

    benchmark.extra_info["rows_per_round"] = 5
    benchmark(one_step)
