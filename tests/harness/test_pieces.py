"""Where both encodings always start a piece, and the counts built on it: a joined text counted
from its parts (`count_joined`) and a message's text from its cached count (`count_content`),
each the same answer as tokenizing the whole text, with tiktoken itself as the reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tokens_reference import reference

from harness.messages import Message, ToolCall, assistant, user
from harness.pieces import last_piece_start, starts_piece
from harness.tokens import BUNDLED_ENCODINGS, TokenCounter, _memo

# Text around newlines: whitespace of every kind, slashes (o200k joins "\n/"), punctuation runs
# that take trailing newlines, contractions, digits, letters of several scripts, marks, emoji.
_BITS = st.sampled_from(
    ["\n", "\n\n", "\r\n", "\r", " ", "   ", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0",
     "\u2028", "\u3000", "/", "//", "#", "###", "-", "->", "(", "[", "<", ">", "\\", "|", "*",
     "`", "=", ".", ",", "!?", "'", "'s", "'ll", "\"", "word", "Word", "WORD", "x", "é", "日本",
     "Ⅻ", "²", "\u0301", "\u200b", "🎉", "7", "42", "1234", "_", "{}", "$5"]
)  # fmt: skip


def _token_lists(name: str, text: str) -> list[int]:
    return reference(name).encode(text, disallowed_special=())


@settings(max_examples=400, deadline=None)
@given(st.lists(_BITS, max_size=60))
def test_a_piece_start_splits_the_tokens_exactly(bits: list[str]) -> None:
    """At every place `starts_piece` names (after a newline), the text's tokens are the
    tokens of the part before it followed by those of the part after it, in both encodings:
    so counts add up there, whatever the two parts hold."""
    text = "".join(bits)
    for i in range(1, len(text)):
        if text[i - 1] != "\n" or not starts_piece(text, i):
            continue
        for name in BUNDLED_ENCODINGS:
            assert _token_lists(name, text) == (
                _token_lists(name, text[:i]) + _token_lists(name, text[i:])
            ), (name, text, i)


def test_what_does_not_start_a_piece() -> None:
    # o200k keeps a slash with the newline before it; whitespace joins the newline's run.
    assert not starts_piece("/usr", 0)
    assert not starts_piece(" \n", 0) and not starts_piece("\t\tb\n"[:2], 0)
    assert not starts_piece("\nx", 0) and not starts_piece("", 0)
    assert starts_piece("   1\tdef f():", 0) and starts_piece("#", 0) and starts_piece("é", 0)
    assert last_piece_start("a\n/b\n c") == 5
    assert last_piece_start("a\n/b\n \n") is None
    assert last_piece_start("one\ntwo\nthree", 9) is None


_PARTS = st.lists(st.lists(_BITS, max_size=12).map("".join), max_size=8)
_SEPS = st.sampled_from(["\n", "\n\n", "\n\n\n", " \n", ".\n", "", " ", "\n "])


@settings(max_examples=300, deadline=None)
@given(_PARTS, _SEPS)
def test_a_joined_text_counts_as_tokenizing_it_whole(parts: list[str], sep: str) -> None:
    for name in BUNDLED_ENCODINGS:
        counter = TokenCounter(name)
        assert counter.count_joined(parts, sep) == len(_token_lists(name, sep.join(parts)))


def test_a_joined_text_is_not_tokenized_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only each part (each line of a long one at most) and the seams reach the tokenizer: the
    summarizer counts its requests this way, blocks already counted."""
    counter = TokenCounter()
    rows = "row,1,2,3\n" * 300
    blocks = [f"### Tool\n{rows}(result of grep, call c{i})" for i in range(20)]
    parts = ["<summary-request> Summarize.", "### Summary\n## Facts\n- 12 kg", *blocks]
    joined = "\n\n".join(parts)
    sizes = {b: counter.count_text(b) for b in blocks}
    seen: list[str] = []
    original = counter.count_text
    monkeypatch.setattr(counter, "count_text", lambda t: seen.append(t) or original(t))
    n = counter.count_joined(parts, "\n\n", lambda t: sizes[t] if t in sizes else original(t))
    assert n == original(joined)
    assert max(map(len, seen)) < 200  # the seams' last lines, never a block


def test_a_message_text_counts_from_its_cached_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """`count_content` answers what `count_text(content)` answers, from the message's count
    once the text's own count has left the memo; a changed text is counted afresh."""
    counter = TokenCounter()
    messages: list[Message] = [
        user("What did Acme earn in Q3? " * 40),
        assistant(
            "Let me look.",
            [
                ToolCall("c1", "search", {"q": "Acme Q3"}),
                ToolCall("c2", "read", {}, '{"path": "/a"}'),
            ],
        ),  # fmt: skip
        Message(role="tool", content="Acme: 12 million\n" * 30, name="search", tool_call_id="c1"),
    ]
    for m in messages:
        counter.count_message(m)
    tokenizer = counter._tokenizer
    _memo(tokenizer)._answers.clear()  # as if the texts had been pushed out since
    _memo(tokenizer).held = 0
    seen: list[str] = []
    original = counter.count_text
    monkeypatch.setattr(counter, "count_text", lambda t: seen.append(t) or original(t))
    for m in messages:
        assert counter.count_content(m) == len(_token_lists("cl100k_base", m.content))
    assert not any(m.content in seen for m in messages)
    changed = messages[0].with_content("Something else entirely.")
    assert counter.count_content(changed) == len(_token_lists("cl100k_base", changed.content))
    assert changed.content in seen


def test_a_count_handed_in_is_the_message_count(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = TokenCounter()
    text = "### Tool\nfirst\n\n### Tool\nsecond"
    request = user(text)
    tokens = counter.count_joined(text.split("\n\n"), "\n\n")
    monkeypatch.setattr(counter, "count_text", lambda t: pytest.fail(f"tokenized {t!r}"))
    assert counter.count_message(request, tokens) == TokenCounter().count_message(user(text))
    assert counter.count_message(request) == counter.count_message(request, tokens)
