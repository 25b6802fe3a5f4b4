"""The test doubles' docstrings show how to script a tool call; their examples run as shown."""

from __future__ import annotations

import textwrap

import pytest

from harness import Store, create_agent, tool
from harness.models import FunctionModel, ScriptedModel, call, reply


def _example(cls: type) -> str:
    doc = cls.__doc__ or ""
    assert "::" in doc, f"{cls.__name__} shows no example"
    return textwrap.dedent(doc.split("::", 1)[1]).strip()


@tool
def pull_market_report(company: str) -> str:
    """Query the market-data export for one company.

    Args:
        company: Company name as it appears in the export.
    """
    return f"{company},plant 0,capacity 1000 t"


@pytest.mark.parametrize("cls", [ScriptedModel, FunctionModel])
def test_the_docstring_example_calls_a_tool_then_answers(cls: type) -> None:
    namespace: dict[str, object] = {
        "ScriptedModel": ScriptedModel,
        "FunctionModel": FunctionModel,
        "Store": Store,
        "call": call,
        "reply": reply,
        "create_agent": create_agent,
        "pull_market_report": pull_market_report,
    }
    source = _example(cls)
    if cls is FunctionModel:  # its example builds the agent; run it too
        source += '\nresult = agent.run_sync("How big is Acme?")'
    exec(compile(source, cls.__name__, "exec"), namespace)
    if cls is ScriptedModel:
        model = namespace["model"]
        assert isinstance(model, ScriptedModel) and len(model.calls) == 2
        assert model.calls[1].messages[-1].role == "tool"
    else:
        assert namespace["result"].output == "The export has 28 characters."  # type: ignore[attr-defined]
