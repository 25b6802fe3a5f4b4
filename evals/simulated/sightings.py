"""Where a request shows the value a probe names by role (a scenario file's `role`: kind,
phrase, terms, shape), read the way the question asks for it: a value stands there under the
role when the sources in view (a tool's result with the call that made it, a user's message)
give it that role by the rules the import named it by (evals/sources/roles.py). So "the
`amount` of the `payment_methods` entry whose `id` is `certificate_7504069` in the
`get_user_details` result" is read off that result's JSON, and "the name that line 65 of
`core.py` defines" off the listing that printed line 65, not off the first text that happens
to follow the word `core.py` (evals/README.md, "The reader").

Only whole sources are read this way; a value left in a summary, a preview or a note is found
by the probe's cue (evals/simulated/reader.py)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from evals.sources.cues import spans
from evals.sources.roles import Call, result_body, role_of
from evals.sources.values import shape_of
from harness.messages import Message

# A listing longer than this is searched only on the lines its role points at (the line
# number, the words it quotes): naming every token of a 5,000-line file would be slow.
ALL_LINES = 60
_TOKEN = re.compile(r"[\w$#@][\w.\-/:@#+$]*")
_QUOTED = re.compile(r"`([^`\n]+)`")
_LINE = re.compile(r"\bline (\d+)\b")
# The kinds of role a source in view can show (a `truth` or `argument` role names no source).
BY_ROLE = frozenset({"json_key", "table_cell", "listing", "command_output", "user_text"})


@dataclass(frozen=True)
class Role:
    """What a probe asks for: `kind` (json_key, listing, command_output, user_text, table,
    truth), `phrase` (the question's words for it), `terms`, `shape` (of the value)."""

    kind: str
    phrase: str
    terms: tuple[str, ...] = ()
    shape: str = ""


@dataclass(frozen=True)
class Sighting:
    """A value shown under the role: in `messages[message]`, at `offset` of its content."""

    message: int
    offset: int
    value: str


def sightings(
    role: Role, messages: Sequence[Message], questions: Collection[str] = ()
) -> list[Sighting]:
    """Every value the request's sources show under `role`, the newest source first. A user
    message that is one of `questions` (a probe the replay asked) is no source."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    user = role.kind == "user_text"
    found: list[Sighting] = []
    for index in range(len(messages) - 1, -1, -1):
        m = messages[index]
        if m.kind != "message" or not m.content:
            continue  # placeholders and summaries are no source: the cue reads those
        if user and m.role == "user" and m.content.strip() not in questions:
            call, kind = None, "user"
        elif not user and m.role == "tool" and m.tool_call_id in calls:
            made = calls[m.tool_call_id]
            call = Call(made.name, dict(made.arguments), again=_again(role, made.name))
            kind = "tool"
        else:
            continue
        if not _mentions(role, m.content, call):
            continue
        body = m.content if call is None else result_body(m.content)
        for value in _candidates(role, body, call):
            if _has_role(role, value, m.content, kind, call):
                found.append(Sighting(index, max(m.content.find(value), 0), value))
    return found


def _again(role: Role, tool: str) -> bool:
    """Whether the role names a result by its call's arguments (the tool ran more than once)."""
    return f"the `{tool}` result for " in role.phrase


def _mentions(role: Role, text: str, call: Call | None) -> bool:
    """Every term of the role stands in the source or in the call that made it: a cheap test
    before naming any value."""
    where = text if call is None else f"{call.tool} {call.arguments} {text}"
    return all(t in where for t in role.terms)


def _candidates(role: Role, text: str, call: Call | None) -> Iterator[str]:
    """Values of the role's shape in `text`, on the lines the role points at when the text is
    long."""
    lines = text.splitlines()
    if len(lines) > ALL_LINES:
        lines = _pointed(role, lines, call)
    seen: set[str] = set()
    for line in lines:
        for m in _TOKEN.finditer(line):
            for value in {m.group(), m.group().rstrip(".:,;")}:
                if value and value not in seen and shape_of(value) == role.shape and \
                        spans(value, text):  # fmt: skip
                    seen.add(value)
                    yield value


def _pointed(role: Role, lines: list[str], call: Call | None) -> list[str]:
    """The lines a long listing may show the value on: those holding a word the role quotes,
    its line number, or standing where a
    listing printed from line `a` (`sed -n 'a,bp'`, `cat`) puts that line."""
    quoted = _QUOTED.findall(role.phrase)
    numbers = [int(n) for n in _LINE.findall(role.phrase)]
    command = " ".join(str(v) for v in call.arguments.values()) if call else ""
    starts = {1, *(int(a) for a in re.findall(r"\b(\d+)\s*,", command))}
    at = {n - a for n in numbers for a in starts if 0 <= n - a < len(lines)}
    wanted = [re.compile(rf"(?<!\d){n}(?!\d)") for n in numbers]
    return [
        line for i, line in enumerate(lines)
        if i in at or any(q in line for q in quoted) or any(w.search(line) for w in wanted)
    ]  # fmt: skip


def _has_role(role: Role, value: str, text: str, kind: str, call: Call | None) -> bool:
    use = role.terms[0] if role.terms and role.phrase == f"the `{role.terms[0]}` the user gave" \
        else None  # fmt: skip
    found = role_of(value, text, kind, call, use)
    return found is not None and found["phrase"] == role.phrase
