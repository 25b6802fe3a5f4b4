"""The texts a walk of a trace has met so far (walk_record.py), indexed by word, and views of
the first so many of them as `Source`s.

Every step of a walk asks which earlier texts show a value (a slot's cue, a probe's source, a
value too common to probe) or a label. Reading every earlier text for each question made an
import quadratic in a trace's messages (10k messages took minutes); the index answers from
the texts that hold the value's words. It narrows, never decides: each text it names is read
as before (cues.spans, the cue's regex), in the same order, so what a walk finds is the same.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from typing import Literal, TypeVar, overload

SourceKind = Literal["tool", "user", "agent", "memory"]

_WORD = re.compile(r"\w+")
# Longer gaps between two words (an indented block's newline and spaces) make no pair.
MAX_BETWEEN = 3
# Every pair of neighbouring words at once (a lookahead, so pairs overlap): a word from its
# start, at most MAX_BETWEEN non-word characters, the next word whole.
_PAIR = re.compile(rf"(?<!\w)(?=(\w+\W{{1,{MAX_BETWEEN}}}\w+))")
T = TypeVar("T")


@dataclass(frozen=True)
class Source:
    """A text the agent had in front of it: a tool result, a user turn or its own words.
    `ref` says where it is in the run (turn, tool, message id)."""

    ref: str
    kind: SourceKind
    text: str
    turn: int


class Shelf:
    """An append-only list of texts and, for each word (a maximal run of `\\w`) and each pair
    of neighbouring words with what stands between them (`20.90`, `id: 7`), the positions of
    the texts holding it, in order. Pairs narrow where words do not: `20` and `90` stand in
    many amounts, `20.90` in few."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.kinds: list[SourceKind] = []
        self._keys: dict[str, list[int]] = {}
        self._of_kind: dict[str, list[int]] = {}
        # anchor -> (texts scanned, positions holding it): for anchors with no whole word
        self._scans: dict[str, tuple[int, list[int]]] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, text: str, kind: SourceKind) -> None:
        at = len(self.texts)
        self.texts.append(text)
        self.kinds.append(kind)
        self._of_kind.setdefault(kind, []).append(at)
        for key in {*_WORD.findall(text), *_PAIR.findall(text)}:  # _keys(text, True, True)
            self._keys.setdefault(key, []).append(at)

    def holding(self, value: str, upto: int) -> Iterable[int]:
        """Positions below `upto` of the texts that may show `value` as a whole token
        (cues.spans): such a token has no word character on either side, so a text showing
        it holds each word of `value`, and each pair, as its own."""
        return self._narrowed(_value_keys(value), upto)

    def containing(self, anchor: str, upto: int) -> Iterable[int]:
        """Positions below `upto` of the texts that may contain `anchor` (a cue's label): those
        holding its inner words (a non-word character on each side: whole in any text
        containing the anchor), else those a scan found containing it, each text scanned
        once per anchor."""
        keys = _keys(anchor, False, False)
        if keys or not anchor:
            return self._narrowed(keys, upto)
        scanned, found = self._scans.get(anchor, (0, []))
        if scanned < len(self.texts):
            found += [i for i in range(scanned, len(self.texts)) if anchor in self.texts[i]]
            self._scans[anchor] = (len(self.texts), found)
        return _below(found, upto)

    def of_kind(self, kind: str, upto: int) -> Iterable[int]:
        return _below(self._of_kind.get(kind, []), upto)

    def _narrowed(self, keys: list[str], upto: int) -> Iterable[int]:
        if not keys:
            return range(upto)
        return _below(min((self._keys.get(k, []) for k in keys), key=len), upto)


@lru_cache(maxsize=8192)  # a value is asked about several times around its use
def _value_keys(value: str) -> list[str]:
    return _keys(value, True, True)


def _keys(text: str, whole_start: bool, whole_end: bool) -> list[str]:
    """The words of `text` and pairs of neighbouring words (with what is between them, when
    short) that any text holding `text` holds as its own: all, when nothing may touch
    `text` at its start and end (`whole_*`), else those not touching that edge."""
    runs = list(_WORD.finditer(text))
    whole = [(whole_start or m.start() > 0, whole_end or m.end() < len(text)) for m in runs]
    out = [m.group() for m, (left, right) in zip(runs, whole, strict=True) if left and right]
    for i in range(len(runs) - 1):
        a, b = runs[i], runs[i + 1]
        if whole[i][0] and whole[i + 1][1] and b.start() - a.end() <= MAX_BETWEEN:
            out.append(text[a.start() : b.end()])
    return out


def _below(positions: list[int], upto: int) -> Iterable[int]:
    return islice(positions, bisect_left(positions, upto))


class Shelved(Sequence["Source"]):
    """The first `upto` texts of a shelf as `Source`s (`make` builds one from a position),
    optionally only those of one kind."""

    def __init__(
        self, shelf: Shelf, upto: int, make: Callable[[int], Source], kind: str | None = None
    ) -> None:
        self.shelf, self.upto, self.make, self.kind = shelf, upto, make, kind

    def _positions(self, positions: Iterable[int]) -> Iterator[Source]:
        kinds = self.shelf.kinds
        for i in positions:
            if self.kind is None or kinds[i] == self.kind:
                yield self.make(i)

    def __iter__(self) -> Iterator[Source]:
        if self.kind is None:
            return map(self.make, range(self.upto))
        return map(self.make, self.shelf.of_kind(self.kind, self.upto))

    def __len__(self) -> int:
        return sum(1 for _ in self.shelf.of_kind(self.kind, self.upto)) if self.kind else self.upto

    @overload
    def __getitem__(self, index: int) -> Source: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Source]: ...
    def __getitem__(self, index: int | slice) -> Source | Sequence[Source]:
        return list(self)[index]  # not on a walk's path: iteration and the lookups below are

    def holding(self, value: str) -> Iterator[Source]:
        return self._positions(self.shelf.holding(value, self.upto))

    def containing(self, anchor: str) -> Iterator[Source]:
        return self._positions(self.shelf.containing(anchor, self.upto))

    def only(self, kind: str) -> Shelved:
        return Shelved(self.shelf, self.upto, self.make, kind)


class Joined(Sequence["Source"]):
    """Views one after the other (what a walk's step had read, then what it had written)."""

    def __init__(self, *parts: Shelved) -> None:
        self.parts = parts

    def __iter__(self) -> Iterator[Source]:
        return chain.from_iterable(self.parts)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    @overload
    def __getitem__(self, index: int) -> Source: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Source]: ...
    def __getitem__(self, index: int | slice) -> Source | Sequence[Source]:
        return list(self)[index]

    def holding(self, value: str) -> Iterator[Source]:
        return chain.from_iterable(p.holding(value) for p in self.parts)

    def containing(self, anchor: str) -> Iterator[Source]:
        return chain.from_iterable(p.containing(anchor) for p in self.parts)

    def only(self, kind: str) -> Joined:
        return Joined(*(p.only(kind) for p in self.parts))


def holding(sources: Iterable[T], value: str) -> Iterable[T]:
    """The sources (or `Texts`) that may show `value` as a whole token, in order: all of a
    plain list."""
    narrow = getattr(sources, "holding", None)
    return narrow(value) if narrow is not None else sources


def containing(sources: Iterable[Source], anchor: str) -> Iterable[Source]:
    """The sources that may contain `anchor`, in order: all of a plain list."""
    narrow = getattr(sources, "containing", None)
    return narrow(anchor) if narrow is not None else sources


def only(sources: Sequence[Source], kind: str) -> Sequence[Source]:
    """The sources of one kind, in order (a view stays a view)."""
    narrow = getattr(sources, "only", None)
    return narrow(kind) if narrow is not None else [s for s in sources if s.kind == kind]


class Texts(Sequence[str]):
    """The texts of some sources (those `keep` keeps), for what takes texts (plan.candidates),
    narrowed the same way."""

    def __init__(
        self, sources: Sequence[Source], keep: Callable[[Source], bool] | None = None
    ) -> None:
        self.sources, self.keep = sources, keep

    def _texts(self, sources: Iterable[Source]) -> Iterator[str]:
        return (s.text for s in sources if self.keep is None or self.keep(s))

    def __iter__(self) -> Iterator[str]:
        return self._texts(self.sources)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        return next(iter(self), None) is not None

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return list(self)[index]

    def holding(self, value: str) -> Iterator[str]:
        return self._texts(holding(self.sources, value))


class Haystack(Sequence[str]):
    """Texts searched for a substring all at once (the prompt and a long trace's many user
    turns, asked of each phrase the agent wrote)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self._joined = "\0".join(self.texts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self.texts[index]

    def holds(self, value: str) -> bool:
        """Whether one of the texts contains `value` (one with a NUL, the separator, is
        looked for text by text)."""
        if "\0" in value:
            return any(value in t for t in self.texts)
        return value in self._joined


def in_any(value: str, texts: Iterable[str]) -> bool:
    """Whether one of `texts` contains `value`."""
    holds = getattr(texts, "holds", None)
    return bool(holds(value)) if holds is not None else any(value in t for t in texts)
