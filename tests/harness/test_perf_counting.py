"""Count what you must, once: an offloaded result is never counted whole, the test doubles
reuse the harness's counts, and the encoding that counted is recorded per model call."""

from __future__ import annotations

from typing import Any

import pytest

import harness.tokens as tokens_module
from harness import Store, create_agent, tool
from harness.messages import ModelResponse, ToolCall, user
from harness.middleware.offload import OffloadLargeResults
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.profiles import ModelProfile
from harness.tokens import PREFIX_CHARS_PER_TOKEN, TokenCounter

LIMIT = 2_000


def export(rows: int = 3_000) -> str:
    return "\n".join(
        f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},EMEA,{i * 7},{i * 131}" for i in range(rows)
    )


@tool
def market_export() -> str:
    """The full market export."""
    return export()


@tool
def news() -> str:
    """Today's news."""
    return "Acme ships widgets."


class SpyTokenizer:
    """Records the length of every text the tokenizer is handed, and how."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seen: list[tuple[str, int]] = []

    def count(self, text: str) -> int:
        self.seen.append(("count", len(text)))
        return int(self.real.count(text))

    def count_till_limit(self, text: str, token_limit: int) -> int | None:
        self.seen.append(("count_till_limit", len(text)))
        result: int | None = self.real.count_till_limit(text, token_limit)
        return result


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> SpyTokenizer:
    spy = SpyTokenizer(tokens_module.load_tokenizer("cl100k_base"))
    monkeypatch.setattr(tokens_module, "load_tokenizer", lambda name: spy)
    return spy


def test_an_offloaded_result_is_never_counted_whole(bare_agent, spy: SpyTokenizer) -> None:
    text = export()
    bound = PREFIX_CHARS_PER_TOKEN * (LIMIT + 1)
    assert len(text) > 3 * bound  # so counting it whole would show
    model = ScriptedModel([reply("", call("market_export", "c1")), "done"])
    agent = bare_agent(model, [market_export], [OffloadLargeResults(tool_token_limit=LIMIT)])
    agent.run_sync("export", thread_id="t")

    preview = model.calls[1].messages[-1]
    assert preview.full_ref is not None  # it was offloaded
    # The harness and the scripted model's usage counting both went through the spy: the
    # export was only ever looked at through a bounded prefix, the preview counted once.
    assert max(n for _, n in spy.seen) <= max(bound, len(preview.content))
    assert sum(n for _, n in spy.seen if n == len(preview.content)) == len(preview.content)
    (event,) = [e for e in agent.store.events.rows() if e["action"].startswith("offload")]
    assert event["tokens_before"] > LIMIT


def test_scripted_model_reuses_the_harness_counts(spy: SpyTokenizer) -> None:
    model = ScriptedModel([reply("", call("market_export", "c1")), "done"])
    agent = create_agent(
        model, [market_export], store=Store(":memory:"), strategy="none", file_tools=False,
        memory=(),
    )  # fmt: skip
    agent.run_sync("Please export the market data for Acme.")
    # Each text went to the tokenizer once, whichever of harness and model asked first.
    counted = [n for kind, n in spy.seen if kind == "count"]
    assert counted.count(len(export())) == 1
    assert counted.count(len("Please export the market data for Acme.")) == 1


def test_model_calls_record_the_encoding_that_counted() -> None:
    o200k = ModelProfile(name="o200k-model", context_window=1_000_000, encoding="o200k_base")
    agent = create_agent(ScriptedModel(["hi"], profile=o200k), store=Store(":memory:"))
    result = agent.run_sync("hello")
    assert result.encoding == "o200k_base"
    rows = agent.store.usage.rows()
    assert [r["encoding"] for r in rows] == ["o200k_base"]


def test_recorded_calls_share_the_messages_they_have_in_common() -> None:
    sent: list[tuple[Any, ...]] = []

    def fn(messages: Any, params: Any) -> ModelResponse | str:
        sent.append(tuple(messages))
        if len(sent) < 4:
            return ModelResponse(tool_calls=(ToolCall(f"c{len(sent)}", "news", {}),))
        return "done"

    model = FunctionModel(fn)
    agent = create_agent(model, [news], store=Store(":memory:"), strategy="none")
    agent.run_sync("go")
    assert [c.messages for c in model.calls] == sent
    # Each call after the first keeps only what it added (an assistant turn and a result).
    assert [len(c._tail) for c in model.calls] == [1, 2, 2, 2]


def test_a_text_is_tokenized_once_whatever_carries_it(spy: SpyTokenizer) -> None:
    # Equal texts in distinct strings and messages (a replay's next cell, a reloaded window, a
    # summarizer chunk): one tokenization, the same count.
    counter = TokenCounter()
    words = ["Acme", "shipped", "widgets", "to", "EMEA"] * 200
    first, second = " ".join(words), " ".join(list(words))
    assert first == second and first is not second
    assert counter.count_text(first) == TokenCounter().count_text(second)
    assert counter.count_message(user(first)) == counter.count_message(user(second))
    assert [n for kind, n in spy.seen if kind == "count"] == [len(first)]
    text = export()
    assert counter.count_over(text, LIMIT) == counter.count_over(str(text + " ")[:-1], LIMIT)
    assert sum(n for kind, n in spy.seen if n != len(first)) <= PREFIX_CHARS_PER_TOKEN * (LIMIT + 1)


def test_a_run_tokenizes_what_is_new_however_long_the_thread(bare_agent, spy: SpyTokenizer) -> None:
    # Each run on a thread reloads its window, and the offload middleware looks again at every
    # user message in it: a message long enough to need the tokenizer (but under the limit) is
    # answered from memory after its first run, so a run's work does not grow with the thread.
    limit = 1_000
    model = ScriptedModel([f"noted {i:03d}" for i in range(12)])
    agent = bare_agent(model, (), [OffloadLargeResults(human_token_limit=limit)])
    per_run = []
    for i in range(12):
        before = sum(n for _, n in spy.seen)
        note = f"Note {i:03d}: " + "stock levels are fine. " * 60  # ~300 tokens
        assert len(note) > limit  # so the cheap bounds (a token is at least a byte) cannot tell
        agent.run_sync(note, thread_id="t")
        per_run.append(sum(n for _, n in spy.seen) - before)
    assert per_run[-1] <= per_run[1], per_run


def test_a_request_is_counted_once_however_many_middleware_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Summarization (before and after deciding), the guard and the loop each ask one
    request's size: it is counted once, and a changed request is counted anew."""
    from helpers.windows import make_state

    from harness.middleware.base import ModelRequest
    from harness.middleware.guard import ContextGuard
    from harness.models.base import ModelSettings

    counts: list[int] = []
    real = TokenCounter.count_request

    def counted(self: TokenCounter, *args: Any, **kwargs: Any) -> int:
        counts.append(len(args[1]))
        return real(self, *args, **kwargs)

    state = make_state(ContextGuard(), [user("What is new?")])
    monkeypatch.setattr(TokenCounter, "count_request", counted)
    request = ModelRequest(state, tuple(state.messages), "", (news,), ModelSettings())
    first = request.count_tokens()
    assert [request.count_tokens() for _ in range(3)] == [first] * 3
    assert counts == [1]
    longer = request.override(messages=[*request.messages, user("And today?")])
    assert longer.count_tokens() > first
    assert counts == [1, 2]
