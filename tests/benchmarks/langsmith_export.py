"""A synthetic LangSmith run export of many megabytes, for the streaming benchmark: threads of
an agent whose every `llm` run's `inputs.messages` repeats the thread's whole history (as a
LangChain agent's do), with the chain and tool runs around them, one run a line (JSONL), and a
deepagents summary replacing the history once in each long thread. Seeded, so the same on
every machine."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any


def _lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind],
            "kwargs": kwargs}  # fmt: skip


def _result(rng: random.Random, n: int) -> str:
    rows = [f"{rng.randrange(10**6):06d},INV-{rng.randrange(10**5):05d},{rng.random():.4f}"
            for _ in range(n)]  # fmt: skip
    return "id,invoice,score\n" + "\n".join(rows)


def write_export(path: Path, mb: float, seed: int = 34) -> Path:
    """At least `mb` megabytes of runs in `path`."""
    rng = random.Random(seed)
    limit = int(mb * 2**20)
    written = 0
    thread = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < limit:
            thread += 1
            history: list[dict[str, Any]] = [
                _lc("SystemMessage", content="You reconcile invoices."),
                _lc("HumanMessage", content=f"Reconcile batch B-{thread:05d}."),
            ]
            for call in range(24):
                cid = f"call-{thread}-{call}"
                reply = _lc("AIMessage", content="", tool_calls=[
                    {"name": "query", "args": {"batch": f"B-{thread:05d}", "page": call},
                     "id": cid, "type": "tool_call"}],
                    usage_metadata={"input_tokens": 400 * (call + 1), "output_tokens": 20,
                                    "total_tokens": 400 * (call + 1) + 20})  # fmt: skip
                run = {"id": f"r-{thread}-{call}", "run_type": "llm", "trace_id": f"t-{thread}",
                       "dotted_order": f"20260101T000000Z{thread:06d}.{call:04d}",
                       "extra": {"metadata": {"thread_id": f"th-{thread}"}},
                       "inputs": {"messages": [history]},
                       "outputs": {"generations": [[{"text": "", "message": reply}]]}}  # fmt: skip
                line = json.dumps(run) + "\n"
                out.write(line)
                written += len(line)
                tool = {"id": f"tool-{thread}-{call}", "run_type": "tool",
                        "trace_id": f"t-{thread}", "inputs": {"page": call},
                        "outputs": {"output": "ok"}}  # fmt: skip
                out.write(json.dumps(tool) + "\n")
                history = [
                    *history,
                    reply,
                    _lc("ToolMessage", content=_result(rng, 40), tool_call_id=cid),
                ]
                if call == 15:  # the harness summarizes: the history is replaced
                    summary = _lc(
                        "HumanMessage",
                        content=f"Summary of batch B-{thread:05d}.",
                        additional_kwargs={"lc_source": "summarization"},
                    )
                    history = [history[0], summary, *history[-2:]]
    return path
