"""The simulated model reads each text once: a window's texts come back at every step and
every probe of a run, and the same tool schemas with every request."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evals.simulated.reader as reader
import evals.simulated.request as request
import evals.simulated.usage as usage
from evals.simulated.usage import PrefixCache
from harness.messages import assistant, user
from harness.models.base import RequestParams
from harness.tokens import TokenCounter


def test_a_cue_is_searched_once_per_text_with_the_same_hits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[tuple[str, int]] = []
    original = reader.cue_hits

    def cue_hits(pattern: str, text: str) -> list[tuple[int, str]]:
        searched.append((pattern, len(text)))
        return original(pattern, text)

    monkeypatch.setattr(reader, "cue_hits", cue_hits)
    texts = [f"order ORD-{i:04d} shipped\n" * 50 for i in range(3)]
    pattern = r"order (ORD-\d{4}) shipped"
    first = reader.occurrences([pattern], texts)
    again = reader.occurrences([pattern], ["".join(t) for t in texts])  # equal, not the same
    assert first == again and first[0][1] == "ORD-0002" and len(first) == 150
    assert len(searched) == 3


def test_the_tool_schemas_are_written_out_once_per_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = [{"name": f"tool_{i}", "parameters": {"type": "object"}} for i in range(5)]
    params = RequestParams(system_prompt="You are careful.", tools=tools)
    cache = PrefixCache(TokenCounter())
    written: list[object] = []
    dumps = json.dumps
    monkeypatch.setattr(json, "dumps", lambda obj, **kw: written.append(obj) or dumps(obj, **kw))
    messages = [user("Hello " * 2_000)]
    assert cache.cached("main", messages, params, 5_000) == 0
    assert cache.cached("main", messages, params, 5_000) > 1_024
    assert sum(obj == tools for obj in written) == 1


def test_a_request_counts_only_the_messages_the_previous_one_lacked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TokenCounter()
    tools = ({"name": "grep", "parameters": {"type": "object"}},)
    params = RequestParams(system_prompt="You are careful.", tools=tools)
    cache = PrefixCache(counter)
    counted: list[str] = []
    original = counter.count_message
    monkeypatch.setattr(counter, "count_message", lambda m: counted.append(m.id) or original(m))
    first = [user("Find the order."), assistant("Looking.")]
    second = [*first, user("And the refund?")]
    edited = [first[0].with_content("Find the order, please."), *second[1:]]
    for messages in (first, second, edited):
        expected = TokenCounter().count_request(params.system_prompt, messages, tools)
        assert cache.tokens("main", messages, params) == expected
        assert cache.cached("main", messages, params, expected) == 0
    # Sizing and billing a request, and the next request repeating its messages, count no
    # message again (its first count fills the shared memo, the second is a look-up); only
    # past the first message that changed are they looked up again.
    assert counted.count(first[0].id) == 2 and counted.count(second[2].id) == 3


def test_a_message_is_rendered_for_the_reader_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[str] = []
    original = request.render
    monkeypatch.setattr(request, "render", lambda m: rendered.append(m.id) or original(m))
    renderings = request.Renderings()
    first = [user("Find the order."), assistant("Looking.")]
    second = [*first, user("And the refund?")]
    for messages in (first, second, second[1:]):
        assert renderings(messages) == [original(m) for m in messages]
    # The third request does not begin with the second's messages: rendered anew.
    assert rendered == [m.id for m in (*first, second[2], *second[1:])]


@settings(max_examples=300, deadline=None)
@given(
    requests=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "a" * 3_000, "b" * 4_000]), max_size=6),
        min_size=1,
        max_size=5,
    )
)
def test_the_cached_part_is_the_prefix_shared_with_the_previous_request(
    requests: list[list[str]],
) -> None:
    counter = TokenCounter()
    params = RequestParams(system_prompt="You are careful.", tools=())
    cache = PrefixCache(counter)
    previous: list[tuple[str, int]] = []
    for texts in requests:
        messages = [user(t) for t in texts]
        items = [cache._head(params), *cache._measure("main", messages)[0]]
        shared = 0
        for (fp, n), (prev_fp, _) in zip(items, previous, strict=False):
            if fp != prev_fp:
                break
            shared += n
        tokens = cache.tokens("main", messages, params)
        expected = min(usage.cacheable(shared), tokens)
        assert cache.cached("main", messages, params, tokens) == expected
        previous = items
