"""A bounded memo: answers by key, kept while the keys' weight stays within a budget, the
oldest out first. Oldest rather than least used: a replay's earliest texts are the first to
leave its window, and a hit then costs no reordering. Shared by the token counts
(harness/tokens.py) and the evals' per-process memos of normal forms and roles."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """`put` answers under keys whose `weight` (e.g. the characters of text a key holds) sums
    to at most `budget`; `get`, `in` and `[]` read them back."""

    def __init__(self, budget: int, weight: Callable[[K], int]) -> None:
        self._answers: OrderedDict[K, V] = OrderedDict()
        self._weight = weight
        self._budget = budget
        self.held = 0  # the weight of the keys kept

    def __contains__(self, key: K) -> bool:
        return key in self._answers

    def __getitem__(self, key: K) -> V:
        return self._answers[key]

    def get(self, key: K) -> V | None:
        return self._answers.get(key)

    def put(self, key: K, value: V) -> V:
        if key not in self._answers:
            self.held += self._weight(key)
        self._answers[key] = value
        while self.held > self._budget and self._answers:
            old, _ = self._answers.popitem(last=False)
            self.held -= self._weight(old)
        return value
