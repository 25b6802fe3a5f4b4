"""What an agent's setup builds once and reuses: a tool's argument model and schema (the same
definition again, e.g. each subagents middleware's `task`), and a run's recorded config (the
same agent run again). Each is the answer building it afresh gives, and a changed input is
never answered from an earlier one."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import harness.tokens as tokens
from harness import Store, create_agent, tool
from harness.messages import new_id
from harness.middleware.subagents import SubAgents
from harness.models import ScriptedModel
from harness.run import _recorded_config, _recorded_json
from harness.tokens import TokenCounter
from harness.tools import Tool


def _with_default(default: Any) -> Tool:
    def pick(x: int = default) -> str:
        """Pick one.

        Args:
            x: Which one.
        """
        return str(x)

    return tool(pick)


def test_a_tool_defined_again_gets_the_same_schema_its_own_copy() -> None:
    first, second = SubAgents().tools[0], SubAgents().tools[0]
    assert first.args_model is second.args_model  # built once
    assert first.parameters == second.parameters and first.parameters is not second.parameters
    first.parameters["properties"]["description"]["description"] = "changed"
    assert SubAgents().tools[0].parameters == second.parameters  # the change stays in `first`
    assert second.validate({"description": "d", "subagent_type": "t"}) == {
        "description": "d",
        "subagent_type": "t",
    }


def test_a_changed_default_or_description_is_a_new_schema() -> None:
    schemas = [_with_default(d).parameters for d in (0, False, 3, 0)]
    defaults = [s["properties"]["x"]["default"] for s in schemas]
    assert defaults == [0, False, 3, 0] and [type(d) for d in defaults] == [int, bool, int, int]

    def pick(x: int) -> str:
        """Pick.

        Args:
            x: Another description.
        """
        return str(x)

    assert tool(pick).parameters["properties"]["x"]["description"] == "Another description."
    assert _with_default([1]).parameters["properties"]["x"]["default"] == [1]  # not hashable


def _configs(agent: Any) -> list[dict[str, Any]]:
    return [json.loads(r["config"]) for r in agent.store.runs.all()]


def test_every_run_records_its_agents_config_as_written_afresh() -> None:
    store = Store(":memory:")
    shown: list[dict[str, Any]] = []
    for prompt, trigger in (("Be brief.", 0.7), ("Be brief.", 0.7), ("Be thorough.", 0.6)):
        agent = create_agent(
            ScriptedModel(["ok", "ok"]),
            [_with_default(1)],
            system_prompt=prompt,
            store=store,
            strategy="summarize",
            strategy_params={"summarize.trigger": trigger},
        )
        agent.run_sync("hi")
        agent.run_sync("again")
        fresh = _recorded_config(agent.config(), agent.middleware, agent.tools)
        written = _recorded_json(agent.config(), agent.middleware, agent.tools)
        assert written is _recorded_json(agent.config(), agent.middleware, agent.tools)  # once
        shown.append(json.loads(json.dumps(fresh, default=str)))
    configs = _configs(agent)
    assert configs == [shown[0]] * 4 + [shown[2]] * 2
    assert [c["system_prompt"] for c in configs[::2]] == ["Be brief.", "Be brief.", "Be thorough."]
    assert configs[-1]["strategy_params"] == {"summarize.trigger": 0.6}


def test_ids_read_as_the_head_of_a_random_uuid4() -> None:
    ids = {new_id("run") for _ in range(2_000)}
    assert len(ids) == 2_000
    for i in ids:
        prefix, digits = i.split("_")
        head = uuid.UUID(digits + "0" * 12)
        assert prefix == "run" and len(digits) == 20 and head.version == 4
        assert head.variant == uuid.RFC_4122


def test_a_subagents_counter_finds_the_parents_schemas_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = _with_default(2).schema()
    first = TokenCounter().count_tools([schema])
    dumped: list[object] = []
    monkeypatch.setattr(tokens.json, "dumps", lambda *a, **k: dumped.append(a) or "{}")
    assert TokenCounter().count_tools([schema]) == first and dumped == []
    TokenCounter().count_tools([_with_default(3).schema()])  # another tool: counted afresh
    assert len(dumped) == 1


def test_a_tool_list_is_counted_afresh_once_any_schema_in_it_changes() -> None:
    counter = TokenCounter()
    a, b = _with_default(4).schema(), _with_default("long default").schema()
    one = {s: TokenCounter().count_tools([x]) for s, x in (("a", a), ("b", b))}
    assert one["a"] != one["b"]
    listed = [a, b]
    assert counter.count_tools(listed) == one["a"] + one["b"]
    listed[1] = a  # the same list, changed in place: not the total it had
    assert counter.count_tools(listed) == 2 * one["a"]
    assert counter.count_tools([a]) == one["a"]
    assert counter.count_tools([a, dict(b)]) == one["a"] + one["b"]  # an equal copy
    assert counter.count_tools([]) == 0


def test_requests_with_the_same_tools_share_one_tuple_of_their_schemas() -> None:
    from harness.middleware.base import ModelRequest
    from harness.models.base import ModelSettings

    one, two = (_with_default(1),), (_with_default(1), _with_default(2))

    def schemas(tools: tuple[Tool, ...], prompt: str) -> tuple[dict[str, Any], ...]:
        request = ModelRequest(None, (), prompt, tools, ModelSettings())  # type: ignore[arg-type]
        return request.tool_schemas()

    first = schemas(one, "a")
    assert schemas(one, "b") is first  # another request of the same run: the same tuple
    assert schemas(two, "a") == tuple(t.schema() for t in two)  # other tools: their own
    assert schemas(one, "a") == first == (one[0].schema(),)
