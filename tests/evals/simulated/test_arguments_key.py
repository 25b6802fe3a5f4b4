"""A call's arguments as a memo key (evals/simulated/sightings.arguments_key): two argument maps
share a key exactly when their canonical JSON, the key the memos used before, is the same, so
a memo never answers for arguments that differ (a stale answer) nor misses equal ones."""

from __future__ import annotations

import json
from itertools import product
from typing import Any

from evals.simulated.sightings import arguments_key

_VARIED: list[dict[str, Any]] = [
    {},
    {"a": 1},
    {"a": 1.0},
    {"a": True},
    {"a": "1"},
    {"a": "true"},
    {"a": None},
    {"a": "null"},
    {"a": 0.0},
    {"a": -0.0},
    {"a": 0},
    {"a": False},
    {"a": 1, "b": "x"},
    {"b": "x", "a": 1},  # the same JSON as the one before: keys sorted
    {"a": [1]},
    {"a": ["1"]},
    {"a": {"b": 1}},
    {"a": {"b": 1.0}},
    {"a": "[1]"},
    {"command": "ls -la", "timeout": 30},
    {"command": "ls -la", "timeout": "30"},
    {"command": "ls -la"},
    {"path": "é", "n": 2},
    {"path": "\\u00e9", "n": 2},
]


def _json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def test_keys_are_equal_exactly_when_the_json_is() -> None:
    for a, b in product(_VARIED, repeat=2):
        same = _json(a) == _json(b)
        assert (arguments_key(a) == arguments_key(b)) is same, (a, b)
        if same:
            assert hash(arguments_key(a)) == hash(arguments_key(b))


def test_a_memo_keyed_by_it_answers_each_call_as_computed() -> None:
    memo: dict[object, str] = {}
    for arguments in [*_VARIED, *reversed(_VARIED)]:
        answer = memo.setdefault(arguments_key(arguments), _json(arguments))
        assert answer == _json(arguments)
