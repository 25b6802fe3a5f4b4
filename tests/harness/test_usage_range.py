"""Usage figures a provider reports are range-checked (issue 37 item 11): an absurd one (2^63
input tokens) fails the run with an error naming the figure, instead of a step the store
drops later while the run stays `running`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness import Store, create_agent
from harness.errors import ModelError
from harness.messages import ModelResponse, Usage
from harness.models import ScriptedModel


@pytest.mark.parametrize(
    ("field", "value"),
    [("input_tokens", 2**63), ("output_tokens", -1), ("cached_tokens", 10**15)],
)
def test_an_absurd_usage_figure_fails_the_run_with_a_clear_error(
    tmp_path: Path, field: str, value: int
) -> None:
    store = Store(tmp_path / "s.duckdb")
    absurd = ModelResponse(text="hi", usage=Usage(**{field: value}, requests=1), model_name="m")
    agent = create_agent(ScriptedModel([absurd]), store=store, system_prompt="s")
    with pytest.raises(ModelError, match=rf"{field}={value}"):
        agent.run_sync("hello", thread_id="t")
    store.close()
    with Store(tmp_path / "s.duckdb") as again:
        (run,) = again.runs.all()
        assert run["status"] == "failed" and field in run["error"]
        assert [m.content for m in again.messages.transcript("t")] == ["hello"]
        assert again.scalar("SELECT count(*) FROM write_log") == 0


def test_a_call_adds_its_tokens_one_request_and_the_cost_given() -> None:
    total = Usage(10, 2, 3, 1, requests=4, cost_usd=0.5)
    call = Usage(7, 5, 2, 1, requests=9, cost_usd=99.0)  # a call's own count and cost not used
    assert total.with_call(call, 0.25) == total + replace(call, requests=1, cost_usd=0.25)
