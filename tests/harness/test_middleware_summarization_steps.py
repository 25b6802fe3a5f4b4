"""Summarization through the step runner: the summarize step runs only when it acts, and its
summarizer call is a model step like any other (plain arguments a journal can key, retried on
a rate limit, its tokens counted once)."""

from __future__ import annotations

from helpers.summarization import Researcher, agent_for, filler
from helpers.windows import RecordingRunner, make_state, model_call, tool_group

from harness.messages import ModelResponse, Usage, user
from harness.middleware.summarization import SUMMARIZER_SUFFIX, SUMMARY_REQUEST, Summarization
from harness.models import FunctionModel, ScriptedModel
from harness.models.base import ModelSettings
from harness.profiles import ModelProfile


def test_the_summarize_step_runs_through_the_step_runner_only_when_it_acts() -> None:
    runner = RecordingRunner()
    r = Researcher(steps=8)
    agent = agent_for(r.model, step_runner=runner, trigger=0.6)
    agent.run_sync("go")
    cycles = len(agent.store.summaries.all())
    assert cycles >= 1 and runner.names.count("summarize") == cycles
    # each summarizer call is a model step too, made inside the summarize step
    assert runner.names.count("model") == r.done + len(r.summary_requests)
    for i, name in enumerate(runner.names):
        if name == "summarize":
            assert runner.names[i + 1] == "model"


# -- the summarizer call goes through the safety net of model calls --------------------------


class RateLimited(Exception):
    status_code = 429


class RetryingRunner(RecordingRunner):
    """Retries `model` steps on a rate limit, as the flows' Prefect runner does; keeps the
    arguments of every model step."""

    def __init__(self) -> None:
        super().__init__()
        self.model_args: list[tuple[object, ...]] = []

    async def run(self, name, fn, /, *args, **kwargs):
        self.names.append(name)
        if name == "model":
            self.model_args.append(args)
        for attempt in range(3):
            try:
                return await fn(*args, **kwargs)
            except RateLimited:
                if name != "model" or attempt == 2:
                    raise
        raise AssertionError("unreachable")


def rate_limited_once(text: str, usage: Usage) -> FunctionModel:
    attempts: list[int] = []

    def answer(messages, params) -> ModelResponse:
        attempts.append(1)
        if len(attempts) == 1:
            raise RateLimited("429 Too Many Requests")
        return ModelResponse(text=text, usage=usage)

    return FunctionModel(
        answer, name="cheap", profile=ModelProfile(name="cheap", context_window=8_000)
    )


def test_a_summarizer_call_is_a_model_step_with_the_request_as_plain_arguments() -> None:
    runner = RetryingRunner()
    summarizer = ScriptedModel(["the summary"], name="cheap")
    window = [user(filler(500)), *tool_group([filler(500)]), user("next")]
    mw = Summarization(model=summarizer, prompt="Be terse.", trigger=500, keep=("messages", 1))
    state = make_state(mw, window)
    state.steps = runner
    model_call(mw, state)
    assert runner.names == ["summarize", "model"]
    (args,) = runner.model_args
    messages, settings, params = args
    # what the flows' journal keys a model step by: the messages, settings and request params
    assert isinstance(settings, ModelSettings) and params.system_prompt == "Be terse."
    assert len(messages) == 1 and messages[0].content.startswith(SUMMARY_REQUEST)


def test_a_rate_limited_summarizer_call_is_retried_by_the_step_runner() -> None:
    usage = Usage(input_tokens=700, output_tokens=40, requests=1)
    summarizer = rate_limited_once("summary after a retry", usage)
    r = Researcher(steps=8)
    agent = agent_for(r.model, step_runner=RetryingRunner(), trigger=0.6, model=summarizer)
    result = agent.run_sync("Study Acme's revenue.")
    assert result.status == "completed"
    assert len(summarizer.calls) >= 2  # the 429, then the retry
    (row,) = agent.store.summaries.all()
    assert row["summary"] == "summary after a retry"
    # the summarizer's tokens are in the run's usage, once per successful call
    calls = agent.store.usage.rows()
    mine = [c for c in calls if c["model"] == "cheap" + SUMMARIZER_SUFFIX]
    assert [c["input_tokens"] for c in mine] == [700]
    assert result.usage.requests == len(calls) == r.done + 1
    assert result.usage.input_tokens == sum(c["input_tokens"] for c in calls)
    assert agent.store.runs.get(result.run_id)["input_tokens"] == result.usage.input_tokens
