"""Summarizer calls under the Prefect runner: retried like any model call, and journaled, so a
resumed run takes the summary from the journal instead of paying for it again."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import flow

from flows.journal import Journal, JournaledRunner, ensure_tables
from flows.runner import PrefectStepRunner
from flows.server import ServerInfo
from harness import Store, create_agent, tool
from harness.agent import Agent
from harness.messages import ModelResponse
from harness.middleware.summarization import SUMMARIZER_SUFFIX, SUMMARY_REQUEST
from harness.models import FunctionModel, call, reply
from harness.profiles import ModelProfile


class HTTPError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@tool
def fetch(n: int) -> str:
    """Fetch market-data document n."""
    return "\n".join(f"doc {n} row {i}: revenue {n * 1000 + i} EUR" for i in range(40))


def researcher() -> FunctionModel:
    """Fetches documents 1..6 (one per call, the ids fixed so journal keys repeat), then
    answers; it never summarizes (the summarizer is another model)."""

    def respond(messages: Any, params: Any) -> ModelResponse | str:
        results = [m.content for m in messages if m.role == "tool"]
        done = int(results[-1].split()[1]) if results else 0  # "doc N row ..."
        if done < 6:
            return reply("", call("fetch", f"call-{done + 1}", n=done + 1))
        return "All documents read."

    return FunctionModel(
        respond, name="researcher", profile=ModelProfile(name="researcher", context_window=8_000)
    )


def summarizer(failures: list[BaseException]) -> FunctionModel:
    """Raises `failures` in turn, then summarizes."""

    def respond(messages: Any, params: Any) -> str:
        assert SUMMARY_REQUEST in messages[-1].content
        if failures:
            raise failures.pop(0)
        return "SUMMARY: documents fetched, revenue in EUR."

    return FunctionModel(
        respond, name="cheap", profile=ModelProfile(name="cheap", context_window=8_000)
    )


def agent_with(model: FunctionModel, summary_model: FunctionModel, db: str, runner: Any) -> Agent:
    return create_agent(
        model, [fetch], store=Store(db, hold=False), step_runner=runner, memory=(),
        strategy="summarize", file_tools=False,
        strategy_params={
            "summarize.trigger": 2_000, "summarize.keep": ("messages", 2),
            "summarize.model": summary_model, "subagents.general_purpose": False,
        },
    )  # fmt: skip


def run_in_flow(agent: Agent, thread_id: str) -> str:
    @flow
    async def one_run() -> str:
        return (await agent.run("Study Acme's revenue.", thread_id=thread_id)).status

    return asyncio.run(one_run())


def test_a_rate_limited_summarizer_call_is_retried_like_any_model_call(
    prefect_server: ServerInfo, db: str
) -> None:
    summary_model = summarizer([HTTPError(429)])
    runner = PrefectStepRunner(retry_delays=(0,))
    agent = agent_with(researcher(), summary_model, db, runner)
    assert run_in_flow(agent, "t") == "completed"
    assert len(summary_model.calls) == 2  # the 429, then the retry
    summaries = agent.store.summaries.all()
    assert [s["summary"] for s in summaries] == ["SUMMARY: documents fetched, revenue in EUR."]
    # a model task each: the researcher's calls and the summarizer's (retried inside its task)
    researcher_calls = sum(c["model"] == "researcher" for c in agent.store.usage.rows())
    assert runner.counts["model"] == researcher_calls + 1 and runner.counts["summarize"] == 1


def test_a_journaled_summarizer_call_is_replayed_not_made_again(
    prefect_server: ServerInfo, db: str
) -> None:
    store = Store(db, hold=False)
    ensure_tables(store)
    first = summarizer([])
    agent = agent_with(
        researcher(), first, db, JournaledRunner(PrefectStepRunner(), Journal(store, "s"))
    )
    assert run_in_flow(agent, "first") == "completed"
    assert len(first.calls) == 1

    # The same work again under the same journal scope, as a resumed run would do it.
    journal = Journal(store, "s", replay=True)
    again = summarizer([])
    agent = agent_with(researcher(), again, db, JournaledRunner(PrefectStepRunner(), journal))
    assert run_in_flow(agent, "second") == "completed"
    assert again.calls == []  # the summary came from the journal
    summaries = store.summaries.all()
    assert [s["summary"] for s in summaries] == ["SUMMARY: documents fetched, revenue in EUR."] * 2
    # replayed, it is still a call of the run: recorded and counted in its usage
    rows = [c for c in store.usage.rows() if "#" in c["model"]]
    assert [r["model"] for r in rows] == ["cheap" + SUMMARIZER_SUFFIX] * 2
