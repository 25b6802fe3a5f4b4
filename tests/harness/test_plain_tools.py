"""Plain typed functions as tools: `create_agent(tools=[fn])` derives what `@tool` derives."""

import asyncio
from typing import Literal

import pytest

from harness import create_agent
from harness.errors import ToolDefinitionError
from harness.middleware.subagents import SubAgent
from harness.models import ScriptedModel, call, reply
from harness.store import Store
from harness.tools import as_tool, tool


def lookup_price(company: str, quarter: Literal["Q1", "Q2"] = "Q1") -> str:
    """Look up a company's list price.

    Args:
        company: Exact company name.
        quarter: Fiscal quarter,
            Q1 unless asked.
    """
    return f"{company} {quarter}: $12"


async def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: Any text.
    """
    await asyncio.sleep(0)
    return len(text.split())


def test_a_plain_function_gets_the_schema_tool_gives_it() -> None:
    plain = as_tool(lookup_price)
    assert plain.schema() == tool(lookup_price).schema()
    props = plain.schema()["parameters"]["properties"]
    assert plain.schema()["description"] == "Look up a company's list price."
    assert props["quarter"]["description"] == "Fiscal quarter, Q1 unless asked."
    assert plain.schema()["parameters"]["required"] == ["company"]


def test_create_agent_runs_plain_sync_and_async_functions() -> None:
    model = ScriptedModel(
        [
            reply("", call("lookup_price", company="Acme"), call("count_words", text="a b c")),
            "done",
        ]
    )
    agent = create_agent(
        model, tools=[lookup_price, count_words], store=Store(":memory:"), file_tools=False
    )
    result = agent.run_sync("price?")
    offered = {t["name"]: t for t in model.calls[0].params.tools}
    assert offered["count_words"]["parameters"]["properties"]["text"]["description"] == "Any text."
    outputs = [m.content for m in result.messages if m.role == "tool"]
    assert outputs == ["Acme Q1: $12", "3"]


def test_a_bad_call_to_a_plain_function_is_text_for_the_model() -> None:
    model = ScriptedModel([reply("", call("lookup_price", company="Acme", quarter="Q9")), "ok"])
    agent = create_agent(model, tools=[lookup_price], store=Store(":memory:"), file_tools=False)
    result = agent.run_sync("price?")
    error = next(m.content for m in result.messages if m.role == "tool")
    assert error.startswith("Error: invalid arguments for tool 'lookup_price': quarter")


def test_a_subagent_takes_plain_functions_too() -> None:
    spec = SubAgent(name="pricer", description="prices", tools=[lookup_price])
    assert spec.tools is not None and [t.name for t in spec.tools] == ["lookup_price"]  # type: ignore[union-attr]


def untyped(company):  # type: ignore[no-untyped-def]
    """No hint: the schema cannot say what `company` is."""
    return company


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ("lookup_price", "'lookup_price' is not a tool"),
        (untyped, "parameter 'company' needs a type hint"),
    ],
)
def test_what_cannot_be_a_tool_is_named(item: object, problem: str) -> None:
    with pytest.raises(ToolDefinitionError, match=problem):
        create_agent(ScriptedModel([]), tools=[item], store=Store(":memory:"))  # type: ignore[list-item]
