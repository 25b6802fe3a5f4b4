"""The summarizer's token counts: each block and request counted from what was counted already
(the messages' texts), never by tokenizing a request whole, and exactly the counts tokenizing
would give."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.summarization import filler
from helpers.windows import make_state, model_call, small_model, tool_group

import harness.tokens as tokens
from harness.messages import user
from harness.middleware.summarization import SUMMARY_REQUEST, Summarization
from harness.models import FunctionModel
from harness.profiles import ModelProfile
from harness.tokens import TokenCounter


class _SeenTokenizer:
    """The real tokenizer, noting every text it is given."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return int(self.real.count(text))

    def count_till_limit(self, text: str, token_limit: int) -> int | None:
        self.texts.append(text)
        return self.real.count_till_limit(text, token_limit)

    def __hash__(self) -> int:
        return id(self)


def test_requests_are_counted_from_their_blocks_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _SeenTokenizer(tokens.load_tokenizer("cl100k_base"))
    monkeypatch.setattr(tokens, "load_tokenizer", lambda name: seen)
    requests: list[tuple[Any, Any]] = []

    def summarize(messages: Any, params: Any) -> str:
        requests.append((messages, params))
        return f"## Facts\nmerged summary {len(requests)}"

    summarizer = FunctionModel(
        summarize, name="tiny", profile=ModelProfile(name="tiny", context_window=3_000)
    )
    window = [user(filler(300))]
    for i in range(12):
        window += tool_group([filler(400 + 50 * i)])
    window += tool_group([filler(9_000)])  # clipped to fit the summarizer's window
    window += tool_group(["latest"])
    mw = Summarization(model=summarizer, trigger=10_000, keep=("messages", 2))
    state = make_state(mw, window, model=small_model(window=100_000))
    model_call(mw, state)
    assert len(requests) >= 3
    # No request reached the tokenizer whole (nor any two blocks of one): its head alone did.
    bad = [t[:80] for t in seen.texts if "\n\n### " in t or len(t) > 200 and SUMMARY_REQUEST in t]
    assert not bad, bad
    # What the summarizer's calls recorded is what tokenizing each request whole counts.
    fresh = TokenCounter()
    whole = [
        fresh.count_request(params.system_prompt, [user(m[-1].content)], params.tools)
        for m, params in requests
    ]
    rows = state.store.usage.rows()
    recorded = [r["context_tokens"] for r in rows if r["model"] == "tiny#summarize"]
    assert recorded == whole
