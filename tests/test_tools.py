"""@tool: schemas from type hints and docstrings, argument validation as model-readable errors."""

import asyncio
from typing import Literal

import pytest

from harness.errors import ToolDefinitionError
from harness.tools import ToolArgumentError, ToolContext, tool


@tool
def pull_market_report(
    company: str, quarter: Literal["Q1", "Q2", "Q3", "Q4"], rows: int = 50
) -> str:
    """Query the market-data export for one company.

    Args:
        company: Exact company name as it appears in the export.
        quarter: Fiscal quarter.
        rows: How many rows to return,
            at most 500.
    """
    return f"{company} {quarter} {rows}"


def test_schema_from_hints_and_docstring() -> None:
    assert pull_market_report.schema() == {
        "name": "pull_market_report",
        "description": "Query the market-data export for one company.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "company": {
                    "type": "string",
                    "description": "Exact company name as it appears in the export.",
                },
                "quarter": {
                    "type": "string",
                    "enum": ["Q1", "Q2", "Q3", "Q4"],
                    "description": "Fiscal quarter.",
                },
                "rows": {
                    "type": "integer",
                    "default": 50,
                    "description": "How many rows to return, at most 500.",
                },
            },
            "required": ["company", "quarter"],
        },
    }


def test_bad_arguments_name_the_problem() -> None:
    with pytest.raises(ToolArgumentError) as err:
        pull_market_report.validate({"company": "Acme", "quarter": "Q5", "extra": 1})
    text = str(err.value)
    assert "quarter" in text and "extra" in text and "pull_market_report" in text


def test_context_parameter_is_injected_and_hidden() -> None:
    @tool
    async def whoami(ctx: ToolContext, greeting: str = "hi") -> str:
        """Say who is calling."""
        return f"{greeting} {ctx.call.id}"

    assert "ctx" not in whoami.parameters["properties"]
    from harness.messages import ToolCall

    out = asyncio.run(whoami.run({}, ToolContext(state=None, call=ToolCall("c1", "whoami"))))  # type: ignore[arg-type]
    assert out == "hi c1"


def test_non_string_results_are_json() -> None:
    @tool
    def numbers(n: int) -> list[int]:
        """Count."""
        return list(range(n))

    assert asyncio.run(numbers.run({"n": 3}, None)) == "[0, 1, 2]"  # type: ignore[arg-type]


def test_definition_errors() -> None:
    def untyped(x):  # noqa: ANN001
        return x

    with pytest.raises(ToolDefinitionError, match="type hint"):
        tool(untyped)
    with pytest.raises(ToolDefinitionError, match="must match"):
        tool(name="bad name")(pull_market_report.fn)
