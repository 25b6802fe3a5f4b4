"""The agent's steps as intentions: a recorded assistant message becomes a plan step whose
note and written arguments hold a `{{slot}}` (with a cue, cues.py) wherever they repeat a
figure, name or phrase a tool result showed, so a replay writes what *its* context shows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.simulated.plan import put_slot
from evals.sources.cues import Found, find_cue, spans
from evals.sources.shelf import Haystack, Source, Texts, holding, in_any, only

# Where the agent writes things down: its note, and the text it puts in files.
WRITTEN_ARGS = {"write_file": ("content",), "edit_file": ("new_string",)}
_SEGMENT = re.compile(r"[\n;:()\[\]]|, |\. ")
_FIGURE = re.compile(r"(?<![\w.\-/])-?\d[\d,]*(?:\.\d+)?(?![\w\-/]|\.\d)")


@dataclass
class NotedValue:
    """A value the agent wrote down that it had read in a tool result, and its slot."""

    slot: str
    value: str
    found: Found


# -- the agent's steps as intentions -------------------------------------------------------


class Planner:
    """Turns recorded assistant messages into plan steps, slotting what was read."""

    def __init__(self, literal: Sequence[str]) -> None:
        self.literal = literal  # replayed verbatim: the system prompt first, the user turns
        self._literal = Haystack(literal)  # the same, searched at once
        self.facts: dict[str, NotedValue] = {}

    def step(
        self, note: str, calls: list[tuple[str, dict[str, Any]]], sources: Sequence[Source]
    ) -> dict[str, Any]:
        slots: dict[str, Found] = {}
        note = self._slotted(note, sources, slots)
        out_calls = []
        for name, args in calls:
            args = dict(args)
            for key in WRITTEN_ARGS.get(name, ()):
                if isinstance(args.get(key), str):
                    args[key] = self._slotted(args[key], sources, slots)
            out_calls.append({"tool": name, "arguments": args})
        step: dict[str, Any] = {"note": note, "calls": out_calls}
        if slots:
            step["slots"] = {
                name: {"patterns": list(f.cue.patterns), "lookalikes": list(f.cue.lookalikes)}
                for name, f in slots.items()
            }
        return step

    def _slotted(self, text: str, sources: Sequence[Source], slots: dict[str, Found]) -> str:
        chosen: list[tuple[int, int, NotedValue]] = []
        for value in self._candidates(text, sources):
            at = spans(value, text)
            fact = self._fact(value, sources, _line_around(text, at[0]) if at else "")
            if fact is None:
                continue
            for start in spans(value, text):
                end = start + len(value)
                if all(end <= s or start >= e for s, e, _ in chosen):
                    chosen.append((start, end, fact))
        if not chosen:
            return text
        out, last = [], 0
        for start, end, fact in sorted(chosen, key=lambda c: c[0]):
            out.append(put_slot(text[last:start], fact.slot))
            last = end
            slots[fact.slot] = fact.found
        out.append(text[last:])
        return "".join(out)

    def _candidates(self, text: str, sources: Sequence[Source]) -> list[str]:
        """Values in `text` that a tool result showed and the user or the prompt did not."""
        return candidates(text, Texts(only(sources, "tool")), self._literal)

    def _fact(self, value: str, sources: Sequence[Source], context: str) -> NotedValue | None:
        fact = self.facts.get(value)
        found = find_cue(value, sources, context, distractors="none")  # a slot's cue is all
        if found is None or "tool" not in found.kinds:
            return fact
        if not found.unique and not _FIGURE.fullmatch(value):
            # A name no label tells apart (a column of firm names): a slot would copy
            # whichever firm the reader met first. Figures are slotted whatever the label.
            return fact
        if fact is None:
            fact = NotedValue(f"fact_{len(self.facts) + 1}", value, found)
            self.facts[value] = fact
        else:
            fact.found = found  # every form it has been written in so far
        return fact


def candidates(text: str, shown: Sequence[str], excluded: Sequence[str]) -> list[str]:
    """Values in `text` (names, clauses of four words or more, figures) that one of `shown`
    holds and none of `excluded` does: longest first, so a phrase wins over a figure in it."""

    def taken(value: str) -> bool:
        if in_any(value, excluded):
            return False
        return any(spans(value, t) for t in holding(shown, value))

    found: dict[str, None] = {}
    for segment in _SEGMENT.split(text):
        words = segment.strip(" .,-*#_\t").split()
        for k in range(len(words), 0, -1):
            phrase = " ".join(words[-k:])
            if _phrase_like(words[-k:]) and taken(phrase):
                found[phrase] = None
                break
    for m in _FIGURE.finditer(text):
        value = m.group()
        if len(value.lstrip("-")) >= 2 and taken(value):
            found[value] = None
    return sorted(found, key=len, reverse=True)


def _line_around(text: str, start: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    return text[line_start : len(text) if line_end < 0 else line_end]


def _phrase_like(words: list[str]) -> bool:
    """A name (capitalised words) or a clause of four words or more: what an agent copies."""
    text = " ".join(words)
    if len(words) >= 4 and len(text) >= 20:
        return True
    named = all(w[:1].isupper() for w in words) and any(c.islower() for c in text)
    return named and len(words) <= 4 and len(text) >= 4


def rendered_step(note: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """A step as a replay shows it to the reader: the note, then each call's arguments."""
    parts = [note] if note else []
    for name, args in calls:
        parts.append(f"[{name}]\n" + "\n".join(f"{k}: {v}" for k, v in args.items()))
    return "\n".join(parts)
