"""The trajectory of `trajectory.py` run on deepagents, for the side-by-side in
`test_trajectory_vs_deepagents.py`. Run it with an interpreter that has deepagents (never a
dependency of ctxlab): `python deepagents_trajectory.py COMPANIES ROWS`; prints one JSON line.

The fake chat model replays the same script (one market export, then one news page, per
company) with a window that holds the run, so only deepagents' offloading acts; its state is
in memory (no checkpointer) and so are its files.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from trajectory_texts import peak_rss_mb, rss_by_mapping, tool_calls, tool_functions


def measure(companies: int, rows: int) -> dict[str, Any]:
    from deepagents import create_deep_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    tools = [tool(f) for f in tool_functions(rows)]
    script = [
        AIMessage(content="", tool_calls=[{"id": tid, "name": name, "args": {"company": company}}])
        for tid, name, company in tool_calls(companies)
    ]
    script.append(AIMessage(content="Done: every company reviewed."))

    class Scripted(BaseChatModel):
        step: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
            reply = script[self.step]
            self.step += 1
            return ChatResult(generations=[ChatGeneration(message=reply)])

    model = Scripted(profile={"max_input_tokens": 100_000_000})
    agent = create_deep_agent(model=model, tools=tools)
    start, cpu = time.perf_counter(), time.process_time()
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "Review every company: export, then news."}]},
        {"recursion_limit": 10 * len(script) + 10},
    )
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    steps = model.step
    assert steps == len(script), steps
    offloaded = sum("/large_tool_results/" in str(m.content) for m in out["messages"])
    return {
        "steps": steps,
        "ms_per_step": elapsed * 1000 / steps,
        "cpu_ms_per_step": cpu * 1000 / steps,
        "peak_rss_mb": peak_rss_mb(),
        "rss_mb_by_mapping": rss_by_mapping(),
        "offloaded": offloaded,
    }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]), int(sys.argv[2]))))
