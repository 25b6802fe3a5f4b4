"""Usage as a provider with automatic prompt caching reports it, and the simulated model's
own ledger of the calls it served.

The longest prefix a request shares with the previous request of the same conversation is a
cache read (OpenAI's rule: prefixes under 1,024 tokens are not cached, longer ones in steps of
128 tokens)."""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.simulated.sightings import arguments_key
from harness.memo import Memo
from harness.messages import Message
from harness.models.base import RequestParams
from harness.tokens import TokenCounter

CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def cacheable(shared: int) -> int:
    if shared < CACHE_MIN_TOKENS:
        return 0
    return CACHE_MIN_TOKENS + (shared - CACHE_MIN_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


@dataclass(frozen=True)
class CallRecord:
    """One request the model served. `role`: main, subagent, summarizer or delegate."""

    role: str
    stream: str
    turn: str
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    tool_calls: int
    retrieval_calls: int = 0
    cost_usd: float = 0.0
    tool_recalls: int = 0  # of the retrieval calls, those that re-ran a domain lookup
    cache_write_tokens: int = 0


@dataclass
class Stream:
    """Prompt-cache memory of one conversation: the previous request's items and tokens."""

    items: list[tuple[str, int]] = field(default_factory=list)


class PrefixCache:
    """Per-conversation prompt-cache memory: how many tokens of a request were cached."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.streams: dict[str, Stream] = {}
        self._fingerprints: dict[str, tuple[str, int]] = {}
        # (system prompt, ids of the tool schemas) -> (those schemas, the head's item): the
        # same schema dicts come with every request, so their JSON is written once.
        self._heads: dict[tuple[str, tuple[int, ...]], tuple[tuple[Any, ...], tuple[str, int]]]
        self._heads = {}
        # The params of the latest head asked for, held (so their id names no other object):
        # a request asks for its head twice, for its size and for its cached part.
        self._last_head: tuple[RequestParams, tuple[str, int]] | None = None
        # stream -> its latest request's messages, their items and their token counts: a
        # request repeats the previous one's message objects and adds a few, so only those
        # are looked up (an object is immutable: same object, same item and count).
        self._latest: dict[str, tuple[list[Message], list[tuple[str, int]], list[int]]] = {}

    def tokens(self, stream: str, messages: Sequence[Message], params: RequestParams) -> int:
        """The request's size as `TokenCounter.count_request` counts it (the head's item is
        the system prompt and tools counted with no message), each message counted once."""
        return self._head(params)[1] + sum(self._measure(stream, messages)[1])

    def cached(self, stream: str, messages: Sequence[Message], params: RequestParams,
               tokens: int) -> int:  # fmt: skip
        items = [self._head(params), *self._measure(stream, messages)[0]]
        previous = self.streams.setdefault(stream, Stream()).items
        if len(previous) <= len(items) and items[: len(previous)] == previous:
            # Mostly the previous request comes first whole: compared and summed at C speed.
            shared = sum(map(operator.itemgetter(1), previous))
        else:
            shared = 0
            for (fp, n), (prev_fp, _) in zip(items, previous, strict=False):
                if fp != prev_fp:
                    break
                shared += n
        self.streams[stream].items = items
        return min(cacheable(shared), tokens)

    def forget(self, stream: str) -> None:
        self.streams.pop(stream, None)

    def state(self) -> dict[str, list[list[str | int]]]:
        return {name: [list(item) for item in s.items] for name, s in self.streams.items()}

    def load(self, state: dict[str, list[list[str | int]]]) -> None:
        self.streams = {
            name: Stream([(str(fp), int(n)) for fp, n in items]) for name, items in state.items()
        }

    def _measure(
        self, stream: str, messages: Sequence[Message]
    ) -> tuple[list[tuple[str, int]], list[int]]:
        """Each message's item (fingerprint, tokens when first seen by id) and its exact count."""
        latest = self._latest.get(stream)
        same = 0
        if latest is not None:
            # Mostly the whole previous request comes first: test that at C speed.
            if len(messages) >= len(latest[0]) and all(map(operator.is_, messages, latest[0])):
                same = len(latest[0])
            else:
                for a, b in zip(messages, latest[0], strict=False):
                    if a is not b:
                        break
                    same += 1
        items = latest[1][:same] if latest is not None else []
        counts = latest[2][:same] if latest is not None else []
        for m in messages[same:]:
            fp = self._fingerprints.get(m.id)
            if fp is None:
                fp = self._fingerprints[m.id] = (fingerprint(m), self.counter.count_message(m))
            items.append(fp)
            counts.append(self.counter.count_message(m))
        self._latest[stream] = (list(messages), items, counts)
        return items, counts

    def _head(self, params: RequestParams) -> tuple[str, int]:
        last = self._last_head
        if last is not None and last[0] is params:
            return last[1]  # frozen: the same object holds the same prompt and schemas
        item = self._head_of(params)
        self._last_head = (params, item)
        return item

    def _head_of(self, params: RequestParams) -> tuple[str, int]:
        tools = tuple(params.tools)
        key = (params.system_prompt, tuple(map(id, tools)))
        hit = self._heads.get(key)
        # The schemas are held with their ids, so an id cannot name another schema meanwhile.
        if hit is not None and all(map(operator.is_, hit[0], tools)):
            return hit[1]
        head = json.dumps(list(tools), sort_keys=True) + "\x00" + params.system_prompt
        item = (_digest(head), self.counter.count_request(params.system_prompt, [], tools))
        self._heads[key] = (tools, item)
        return item


# A message's fingerprint by what it holds, kept while the contents hold at most this many
# characters in all (a message with no content, a tool call's, weighs as ENTRY_CHARS): each
# cell of a trace (a reader, an arm) replays messages equal to another cell's under new ids,
# and writing their JSON was most of what billing a request cost.
FINGERPRINT_CHARS = 16_000_000
ENTRY_CHARS = 100
_FingerprintKey = tuple[str, str, str | None, str | None, tuple[tuple[str, str, Hashable], ...]]


def _weight(key: _FingerprintKey) -> int:
    return len(key[1]) + ENTRY_CHARS


_FINGERPRINTS: Memo[_FingerprintKey, str] = Memo(FINGERPRINT_CHARS, _weight)


def fingerprint(m: Message) -> str:
    """The digest of the message's canonical JSON (role, content, tool calls, the call it
    answers, its name; not its id), looked up by a key equal whenever that JSON is."""
    calls = tuple((c.id, c.name, arguments_key(c.arguments)) for c in m.tool_calls)
    key = (m.role, m.content, m.tool_call_id, m.name, calls)
    known = _FINGERPRINTS.get(key)  # one look-up: another thread may evict it meanwhile
    if known is not None:
        return known
    body = json.dumps(
        [m.role, m.content, [[c.id, c.name, c.arguments] for c in m.tool_calls],
         m.tool_call_id, m.name], sort_keys=True, default=str,
    )  # fmt: skip
    return _FINGERPRINTS.put(key, _digest(body))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
