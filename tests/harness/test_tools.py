"""@tool: schemas from type hints and docstrings, argument validation as model-readable errors."""

import asyncio
import math
import sys
import threading
from typing import Literal

import pytest

from harness.errors import ToolDefinitionError
from harness.tools import ToolArgumentError, ToolContext, ToolExitError, ToolTimeoutError, tool


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


# -- time limits and exits ---------------------------------------------------------------------


def test_a_sync_tool_past_its_limit_is_given_up_with_an_error_naming_tool_and_limit() -> None:
    release = threading.Event()
    seen: list[threading.Thread] = []

    @tool(timeout=0.2)
    def hang() -> str:
        """Wait for a release that comes too late."""
        seen.append(threading.current_thread())
        release.wait(10)
        return "late"

    try:
        with pytest.raises(ToolTimeoutError) as err:
            asyncio.run(hang.run({}, None))  # type: ignore[arg-type]
    finally:
        release.set()
    assert "'hang'" in str(err.value) and "0.2 s" in str(err.value)
    (thread,) = seen
    # its own daemon thread: a tool that never returns cannot hold the process open
    assert thread is not threading.main_thread() and thread.daemon


def test_an_async_tool_past_its_limit_is_cancelled() -> None:
    cancelled: list[bool] = []

    @tool
    async def nap() -> str:
        """Sleep far too long."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "rested"

    with pytest.raises(ToolTimeoutError, match=r"'nap' .* 0\.2 s"):
        asyncio.run(nap.run({}, None, default_timeout=0.2))  # type: ignore[arg-type]
    assert cancelled == [True]


def test_the_tools_own_limit_beats_the_default_and_inf_means_none() -> None:
    @tool(timeout=math.inf)
    async def patient() -> str:
        """Take a moment."""
        await asyncio.sleep(0.3)
        return "done"

    assert asyncio.run(patient.run({}, None, default_timeout=0.05)) == "done"  # type: ignore[arg-type]
    assert patient.timeout == math.inf and pull_market_report.timeout is None


def test_a_timeout_raised_by_the_tool_itself_is_its_own_error() -> None:
    @tool
    async def upstream() -> str:
        """Call a slow service."""
        raise TimeoutError("the service timed out")

    with pytest.raises(TimeoutError, match="the service timed out") as err:
        asyncio.run(upstream.run({}, None))  # type: ignore[arg-type]
    assert not isinstance(err.value, ToolTimeoutError)


@pytest.mark.parametrize("bad", [0, -1.0])
def test_a_limit_must_be_positive(bad: float) -> None:
    with pytest.raises(ToolDefinitionError, match="timeout must be a positive number"):
        tool(timeout=bad)(pull_market_report.fn)


def test_system_exit_in_a_tool_becomes_a_tool_error() -> None:
    @tool
    def quit_sync(code: int) -> str:
        """Exit."""
        sys.exit(code)

    @tool
    async def quit_async() -> str:
        """Exit, asynchronously."""
        raise SystemExit("bye")

    with pytest.raises(ToolExitError, match=r"'quit_sync' tried to exit .*SystemExit\(3\)"):
        asyncio.run(quit_sync.run({"code": 3}, None))  # type: ignore[arg-type]
    with pytest.raises(ToolExitError, match="'quit_async'"):
        asyncio.run(quit_async.run({}, None))  # type: ignore[arg-type]
