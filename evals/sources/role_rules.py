"""The import's rules for what a value is in its source (roles.py, hygiene.py), as the
simulated reader applies them to the sources in view (evals/simulated/sightings.py): handed to
the replay model by evals/run/replay.py, since evals.simulated must not import evals.sources."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any

from evals.simulated.sightings import arguments_key
from evals.sources.cues import spans
from evals.sources.hygiene import rejection
from evals.sources.roles import Call, result_body, role_of
from evals.sources.values import shape_of
from harness.memo import Memo

# A replay asks the same value of the same source at every probe and every arm: its roles are
# found once per process. Keys hold the source text itself (equal texts share an answer).
_MEMO_ENTRIES = 200_000
# value, text, tool, its arguments (sightings.arguments_key), again, use_argument
_Key = tuple[str, str, str | None, Hashable, bool, str | None]


class ImportRules:
    """`phrase`: the role phrase `value` has in `text` (a tool's result, with the call that
    made it, or a user's message when `tool` is None); `shape`, `distinctive`, `stands`,
    `body`: the value's shape, whether a probe may ask for it, whether it stands in `text` as
    a token of its own, and the part of a tool's result roles are found in."""

    def __init__(self) -> None:
        self._phrases: Memo[_Key, str | None] = Memo(_MEMO_ENTRIES, lambda _: 1)

    def phrase(
        self, value: str, text: str, tool: str | None, arguments: Mapping[str, Any],
        again: bool, use_argument: str | None,
    ) -> str | None:  # fmt: skip
        key = (value, text, tool, arguments_key(arguments), again, use_argument)
        if key in self._phrases:
            return self._phrases[key]
        call = None if tool is None else Call(tool, dict(arguments), again)
        found = role_of(value, text, "user" if tool is None else "tool", call, use_argument)
        return self._phrases.put(key, None if found is None else str(found["phrase"]))

    def shape(self, value: str) -> str:
        return _shape(value)

    def distinctive(self, value: str) -> bool:
        return _distinctive(value)

    def stands(self, value: str, text: str) -> bool:
        return bool(spans(value, text, first=True))

    def body(self, text: str) -> str:
        return result_body(text)


@lru_cache(maxsize=65_536)
def _shape(value: str) -> str:
    return shape_of(value)


@lru_cache(maxsize=65_536)
def _distinctive(value: str) -> bool:
    return rejection(value) is None


IMPORT_RULES = ImportRules()
