"""`RecordedReplies`: what one tool of a recorded scenario answers during a replay.

A call gets the recorded reply of the same tool and arguments (the n-th identical call the
n-th reply, the last one after that). A recorded step whose arguments hold `{{slot}}`s is
filled by the model's reader from the request, and a reader can misfill a slot the request
shows (the fallible reader's misses) or write "unknown" for one the strategy dropped. That
call still gets the reply the recorded agent got: the replay goes on with what the recorded
run did, so the context after it (and so every later probe's availability) never depends on a
reader's mistake. The model's own words stay in its message (the filled arguments): no value
reaches the window through the plan. A call that matches no recorded call, even up to a
step's slots, gets an error text (evals/README.md, "Recorded scenarios").
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from evals.scenarios.format import ReplySpec, StepSpec, reply_key
from evals.simulated.plan import fill, slots_in

# What stands for a slot while a template's key is built: a character JSON always escapes,
# so the sentinel survives `reply_key` as one recognisable run (`\u0000`).
_SENTINEL = "\x00"
_WRITTEN = json.dumps(_SENTINEL)[1:-1]
# A filled slot, inside a JSON string: anything but an unescaped quote, as short as it can be.
_ANY = r'(?:[^"\\]|\\.)*?'


class RecordedReplies:
    """The recorded replies of the tool `name` (in the recording's order); `templates`: the
    arguments of the recorded steps' calls to it that hold slots. Which occurrence a call gets
    is counted per store, so cells replaying in parallel (each on its own store) never share a
    count."""

    def __init__(
        self, name: str, replies: Iterable[ReplySpec], templates: Iterable[Mapping[str, Any]] = ()
    ) -> None:
        self.name = name
        keyed = [(reply_key(r.tool, r.arguments), r) for r in replies]
        # Every reply as (key, occurrence), in the order the recorded run got them.
        self.order = [(key, r.occurrence) for key, r in keyed]
        self.by_key: dict[str, list[str]] = {}
        for key, r in sorted(keyed, key=lambda kr: kr[1].occurrence):
            self.by_key.setdefault(key, []).append(r.content)
        # Each slotted call as a pattern over keys, with the replies (positions in `order`)
        # whose recorded call it fits.
        self.stand_ins: list[tuple[re.Pattern[str], tuple[int, ...]]] = []
        for args in templates:
            pattern = _pattern(name, args)
            fits = tuple(i for i, (key, _) in enumerate(self.order) if pattern.fullmatch(key))
            if fits:
                self.stand_ins.append((pattern, fits))
        self.counts: weakref.WeakKeyDictionary[Any, Counter[str]] = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def reply(self, store: Any, arguments: dict[str, Any]) -> str:
        key = reply_key(self.name, arguments)
        with self.lock:
            counts = self.counts.get(store)
            if counts is None:
                counts = self.counts[store] = Counter()
            if key not in self.by_key:
                key = self._meant(key, counts) or ""
            if not key:
                return (
                    f"Error: the recording has no reply of {self.name} for the arguments "
                    f"{json.dumps(arguments, sort_keys=True)}; call it as the recorded run did."
                )
            counts[key] += 1
            n = counts[key]
        recorded = self.by_key[key]
        return recorded[min(n, len(recorded)) - 1]

    def _meant(self, key: str, counts: Counter[str]) -> str | None:
        """The recorded call a filling of a slotted step stands for, whatever its slots hold:
        of the replies its step's template fits, the first this replay has not served yet (the
        replay follows the recording's order), else the last of them."""
        fits = sorted({i for pattern, at in self.stand_ins if pattern.fullmatch(key) for i in at})
        if not fits:
            return None
        for i in fits:
            recorded, occurrence = self.order[i]
            if counts[recorded] < occurrence:
                return recorded
        return self.order[fits[-1]][0]


def slotted_calls(steps: Iterable[StepSpec]) -> dict[str, list[Mapping[str, Any]]]:
    """Per tool, the arguments of its calls in `steps` (`StepSpec`s) that hold slots, in order."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for s in steps:
        if not s.slots:  # a step's slots are the ones it uses (format.StepSpec): none here
            continue
        for c in s.calls:
            if slots_in(c.arguments):
                out.setdefault(c.tool, []).append(c.arguments)
    return out


def _pattern(name: str, arguments: Mapping[str, Any]) -> re.Pattern[str]:
    """The keys of every filling of `arguments`: the template's key, each slot any JSON
    string text (escaped slots stay the literal text `fill` gives back)."""
    names = slots_in(arguments)
    key = reply_key(name, fill(dict(arguments), dict.fromkeys(names, _SENTINEL)))
    return re.compile(_ANY.join(re.escape(part) for part in key.split(_WRITTEN)))
