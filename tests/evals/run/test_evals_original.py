"""The `original` arm: each call sees what the recorded harness sent after its compactions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from evals.errors import ScenarioFileError
from evals.run.arms import get_arm
from evals.run.original import OriginalContext
from evals.run.replay import replay
from evals.scenarios.format import CompactionSpec
from evals.scenarios.from_file import load_scenario_file
from evals.sources.formats import read_traces
from evals.sources.to_scenario import trace_to_scenario
from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest

SOURCES = Path(__file__).parents[1] / "sources" / "fixtures"


def _msgs(*pairs: tuple[str, str]) -> list[Message]:
    return [Message(role, text) for role, text in pairs]  # type: ignore[arg-type]


def test_the_newest_compaction_in_the_window_replaces_what_came_before_it() -> None:
    window = _msgs(("user", "find BK-1"), ("assistant", "ok"), ("tool", "BK-1 is on FJ-452"),
                   ("assistant", "noted"), ("user", "move it to 12 May"),
                   ("assistant", "moving"))  # fmt: skip
    spec = CompactionSpec(anchor="move it", offset=0, kept=1, summary="BK-1 on FJ-452.")
    mw = OriginalContext([spec])
    out = mw.rewrite(window)
    assert out is not None
    assert [m.content for m in out] == ["BK-1 on FJ-452.", "noted", "move it to 12 May", "moving"]
    assert out[0].kind == "summary" and mw.rewrite(window)[0] is out[0]  # type: ignore[index]
    assert mw.rewrite(window[:4]) is None  # before its anchor: the window is whole


def test_a_kept_tool_result_never_loses_its_call() -> None:
    window = _msgs(("user", "a"), ("assistant", "call"), ("tool", "result"), ("user", "next"))
    out = OriginalContext([CompactionSpec(anchor="next", kept=1, summary="s")]).rewrite(window)
    assert out is not None and [m.content for m in out] == ["s", "next"]


class _Windows(Middleware):
    name = "windows"

    def __init__(self, seen: list[list[Message]]) -> None:
        self.seen = seen

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        self.seen.append(list(request.messages))
        return await handler(request)


def test_a_langsmith_thread_replays_its_harness_summary_under_the_original_arm(
    tmp_path: Path,
) -> None:
    (trace,) = read_traces(SOURCES / "langsmith_runs.jsonl")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(trace_to_scenario(trace)))
    scenario = load_scenario_file(path)
    assert len(scenario.compactions) == 1
    arm = get_arm("original")
    seen: list[list[Message]] = []
    replayed = arm.scenario(scenario)
    factory = arm.with_middleware(replayed, lambda: [_Windows(seen)])
    result = asyncio.run(replay(replayed, arm.strategy, middleware=factory))
    later = [w for w in seen if any("I booked 12 May" in m.content for m in w)]
    assert later and all(w[0].kind == "summary" for w in later)
    assert all("My booking BK-88213" not in m.content for w in later for m in w)
    assert result.probes  # scored like any arm


def test_compactions_of_the_wrong_shape_are_refused_in_one_line(tmp_path: Path) -> None:
    (trace,) = read_traces(SOURCES / "langsmith_runs.jsonl")
    doc = trace_to_scenario(trace)
    doc["source"]["compactions"] = [{"anchor": "", "kept": -1}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioFileError, match="source.compactions") as exc:
        load_scenario_file(path)
    assert "\n" not in str(exc.value)
