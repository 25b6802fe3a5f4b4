"""The plan a `SimulatedModel` follows: a recording of what an agent did, turn by turn.

A plan records intentions, never values. Whatever the agent writes down (a note, a file's
content, a decision) names the facts it means to write as `{{slot}}` placeholders, each with
the cue that recognises the fact; the model fills them at replay time from what that request
actually shows it (a value it cannot see is written as "unknown", a corrupted one is copied
corrupted). So no figure can reach the window through the plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A slot is `{{name}}` after an even run of backslashes (none, or each literal backslash
# doubled); an odd run makes it literal text (recorded text that happens to hold `{{name}}`,
# escaped by `escape_slots`). So `C:\dir\\{{arg_1}}` is a file in `C:\dir\` and
# `\{{name}}` (how files were escaped before, still read the same) is the literal `{{name}}`.
SLOT = re.compile(r"(?<!\\)(?:\\\\)*\{\{([a-z_][a-z0-9_]*)\}\}")
_RUN = re.compile(r"(\\*)(\{\{[a-z_][a-z0-9_]*\}\})")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Cue:
    """How to recognise one fact: regexes whose first group is the value, tried newest text
    first. `lookalikes` recognise the same kind of fact about something else (another firm,
    quarter or order: the distractors a misreading reader may return). No cue holds a value."""

    patterns: tuple[str, ...]
    lookalikes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Act:
    """A recorded agent step: its note and the tool calls it made. `{{slot}}` placeholders in
    the text or in string arguments are filled from the request by the cue `slots` names."""

    text: str = ""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    slots: tuple[tuple[str, Cue], ...] = ()

    def placeholders(self) -> set[str]:
        found = set(SLOT.findall(self.text))
        for _, args in self.calls:
            for value in _strings(args):
                found |= set(SLOT.findall(value))
        return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def escape_slots(text: str) -> str:
    """`text` with anything shaped like a slot made literal: `fill` gives `text` back."""
    return _RUN.sub(lambda m: "\\" * (2 * len(m.group(1)) + 1) + m.group(2), text)


def put_slot(before: str, name: str) -> str:
    """`before` (literal text) followed by the slot `name`: a backslash run ending `before`
    (a Windows path's separator) doubled, so the slot is not read as escaped."""
    run = len(before) - len(before.rstrip("\\"))
    return before + "\\" * run + "{{" + name + "}}"


def slots_in(value: Any) -> set[str]:
    """The slots the strings in `value` (a string, or a structure of them) use."""
    return {name for text in _strings(value) for name in SLOT.findall(text)}


def fill(value: Any, values: Mapping[str, str]) -> Any:
    """`value` (a string, or a structure of them) with every `{{slot}}` replaced, and every
    escaped one (`escape_slots`) given back as it was written."""
    if isinstance(value, str):
        return _RUN.sub(lambda m: _filled(m, values), value) if "{{" in value else value
    if isinstance(value, Mapping):
        return {k: fill(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(fill(v, values) for v in value)
    return value


def _filled(m: re.Match[str], values: Mapping[str, str]) -> str:
    run = len(m.group(1))
    if run % 2:
        return "\\" * (run // 2) + m.group(2)
    return "\\" * (run // 2) + values.get(m.group(2)[2:-2], UNKNOWN)


@dataclass(frozen=True)
class Answer:
    """Decision point: answer the user's question from the context (or retrieve first).
    `terms` and `shape`: the value's role, what a retrieval searches saved files with (the
    key name, symbol, file name) and the shape of the value it looks for; without them the
    search uses the question's own words. `kind` and `phrase`: the rest of a role (an imported
    probe's), by which the reader finds the value in the sources in view
    (evals/simulated/sightings.py) before it tries the cue."""

    id: str
    cue: Cue
    terms: tuple[str, ...] = ()
    shape: str = ""
    kind: str = ""
    phrase: str = ""


@dataclass(frozen=True)
class ReadSkill:
    """Decision point: read the skill whose menu description names every word of `topic`, if
    one is listed (never by its name alone: evals/simulated/reader.py, `skill_path`)."""

    topic: str


@dataclass(frozen=True)
class Fact:
    """One line a composed document should carry: found with `cue`, placed in `section`."""

    section: str
    label: str
    cue: Cue
    unit: str = ""


@dataclass(frozen=True)
class Compose:
    """Decision point: write a document at `path` from the facts in view, with the sections
    of a template read into the context (else `fallback_sections`) and the style the user
    asked for (bullets or paragraphs)."""

    path: str
    title: str
    facts: tuple[Fact, ...]
    fallback_sections: tuple[str, ...] = ("Summary",)
    note: str = ""


@dataclass(frozen=True)
class Remember:
    """Decision point: save the latest preference the user stated (if any) to memory."""

    path: str = "/memories/AGENTS.md"


@dataclass(frozen=True)
class Memorize:
    """Decision point: append `lines` at the end of the memory file, each `{{slot}}` filled
    from the request by its cue in `slots`. The agent reads the file's first line (its length
    is in the footer), then its last line, and inserts after that one with `edit_file`, so a
    file too long to read whole is never rewritten from a partial read; a missing file is
    written."""

    lines: tuple[str, ...]
    slots: tuple[tuple[str, Cue], ...] = ()
    path: str = "/memories/AGENTS.md"
    note: str = "Saving this to memory."


@dataclass(frozen=True)
class ReportFindings:
    """Decision point ending a subagent's task: return the notable findings it has in view."""

    marker: str = "Key finding:"
    limit: int = 3


Step = Act | Answer | ReadSkill | Compose | Remember | Memorize | ReportFindings


# The final words of a recorded turn cut where a probe is asked inside it (the replay resumes
# the turn after the question).
PAUSED = "Pausing here for your question."


@dataclass(frozen=True)
class PlanTurn:
    """One user turn and the agent's steps in answer to it. The model recognises the turn by
    the first line of `prompt` (what survives when a long message is offloaded)."""

    prompt: str
    steps: tuple[Step, ...] = ()
    final: str = "Done."
    session: int = 0

    @property
    def key(self) -> str:
        return self.prompt.strip().split("\n", 1)[0].strip()


@dataclass(frozen=True)
class Plan:
    """The main agent's turns in order, and the subagent tasks (recognised by their text)."""

    turns: tuple[PlanTurn, ...] = ()
    tasks: tuple[PlanTurn, ...] = ()

    def __post_init__(self) -> None:
        keys = [t.key for t in (*self.turns, *self.tasks)]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"plan turns must start with distinct first lines: {dupes[:3]}")
        for turn in (*self.turns, *self.tasks):
            for step in turn.steps:
                if isinstance(step, Act):
                    _check_act(step, turn.key)

    def questions(self) -> frozenset[str]:
        """The prompts the replay writes itself, no source of any value: the turns that only
        ask a question (a probe), and the turn resuming a recorded one the probes paused."""
        out: set[str] = set()
        paused = False
        for t in self.turns:
            if t.steps and all(isinstance(s, Answer) for s in t.steps):
                out.add(t.prompt.strip())
                continue
            if paused:
                out.add(t.prompt.strip())
            paused = t.final == PAUSED
        return frozenset(out)


def _check_act(step: Act, key: str) -> None:
    if not step.calls:
        raise ValueError(f"an Act must call tools (turn {key!r})")
    named = {name for name, _ in step.slots}
    used = step.placeholders()
    if used - named:
        raise ValueError(f"an Act uses slots without cues {sorted(used - named)} (turn {key!r})")
    if named - used:
        raise ValueError(f"an Act names unused slots {sorted(named - used)} (turn {key!r})")
