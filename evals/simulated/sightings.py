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

import json
import re
from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.memo import Memo
from harness.messages import Message, ToolCall

# A listing longer than this is searched only on the lines its role points at (the line
# number, the words it quotes): naming every token of a 5,000-line file would be slow.
ALL_LINES = 60
# A word, path or id; an absolute path with its leading slash, and the user name the import
# redacted in a home path (`/home/<user>/src/app.py`, evals/sources/redact.py) inside it.
_TOKEN = re.compile(r"/?(?:[\w$#@]|<user>)(?:[\w.\-/:@#+$]|<user>)*")
_QUOTED = re.compile(r"`([^`\n]+)`")
_LINE = re.compile(r"\bline (\d+)\b")
# The kinds of role a source in view can show (a `truth` or `argument` role names no source).
BY_ROLE = frozenset({"json_key", "table_cell", "listing", "command_output", "user_text"})


class Rules(Protocol):
    """The import's rules for a value's role (evals/sources/role_rules.py, handed in by the
    replay: evals.simulated does not import evals.sources)."""

    def phrase(
        self, value: str, text: str, tool: str | None, arguments: Mapping[str, Any],
        again: bool, use_argument: str | None,
    ) -> str | None: ...  # fmt: skip

    def shape(self, value: str) -> str: ...

    def distinctive(self, value: str) -> bool: ...

    def stands(self, value: str, text: str) -> bool: ...

    def body(self, text: str) -> str: ...


@dataclass(frozen=True)
class Call:
    """The call whose result a source is (`again`: the tool ran with other arguments too)."""

    tool: str
    arguments: Mapping[str, Any]
    again: bool = False


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
    rules: Rules, role: Role, messages: Sequence[Message], questions: Collection[str] = ()
) -> list[Sighting]:
    """Every value the request's sources show under `role`, the newest source first. A user
    message that is one of `questions` (a probe the replay asked) is no source."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    user = role.kind == "user_text"
    passed = _passed(role, calls.values()) if user else set()
    found: list[Sighting] = []
    for index in range(len(messages) - 1, -1, -1):
        m = messages[index]
        if m.kind != "message" or not m.content:
            continue  # placeholders and summaries are no source: the cue reads those
        if user and m.role == "user" and m.content.strip() not in questions:
            call = None
        elif not user and m.role == "tool" and m.tool_call_id in calls:
            made = calls[m.tool_call_id]
            call = Call(made.name, made.arguments, again=_again(role, made.name))
        else:
            continue
        for value, offset in _shown(rules, role, m.content, call):
            if not (call is None and passed and value not in passed):
                found.append(Sighting(index, offset, value))
    return found


# A source's values under a role, kept while the sources they were read in hold at most this
# many characters in all: a probe is read again at each retrieval round, and the tool results
# it is read in stay in view, so a source is mostly read for the same role more than once.
SOURCE_CHARS = 32_000_000
_Key = tuple[Rules, Role, str, tuple[str, Hashable, bool] | None]
_SHOWN: Memo[_Key, tuple[tuple[str, int], ...]] = Memo(SOURCE_CHARS, lambda key: len(key[2]))


def _shown(rules: Rules, role: Role, text: str, call: Call | None) -> tuple[tuple[str, int], ...]:
    """(value, offset in `text`) of each value the source `text` (a user's message when `call`
    is None) shows under `role`, in the order they stand."""
    made = None
    if call is not None:
        made = (call.tool, arguments_key(call.arguments), call.again)
    key = (rules, role, text, made)
    known = _SHOWN.get(key)  # one look-up: a replay in another thread may evict it meanwhile
    if known is not None:
        return known
    shown: tuple[tuple[str, int], ...] = ()
    if call is None or _mentions(role, text, call):
        body = text if call is None else rules.body(text)
        shown = tuple(
            (value, max(text.find(value), 0))
            for value in _candidates(rules, role, body, call)
            if _has_role(rules, role, value, text, call)
        )
    return _SHOWN.put(key, shown)


# Argument values a key holds as they are: each stands for itself in JSON, once typed (`1`,
# `1.0` and `true` are equal in Python, not in JSON).
_FLAT = frozenset({str, int, bool, type(None)})


def arguments_key(arguments: Mapping[str, Any]) -> Hashable:
    """A memo key for a call's arguments, equal exactly when their canonical JSON
    (`json.dumps(arguments, sort_keys=True, default=str)`) is: for flat arguments a sorted tuple
    of (name, type, value), a float by its repr (`-0.0` is no `0.0` in JSON), cheaper than
    writing the JSON at every look-up; for nested ones that JSON."""
    flat: list[tuple[str, type, Any]] = []
    for name, value in arguments.items():
        kind = type(value)
        if type(name) is not str:
            break
        if kind is float:
            value = repr(value)
        elif kind not in _FLAT:
            break
        flat.append((name, kind, value))
    else:
        return tuple(sorted(flat, key=lambda item: item[0]))
    return json.dumps(arguments, sort_keys=True, default=str)


def _passed(role: Role, calls: Iterable[ToolCall]) -> set[str]:
    """What the agent passed in view as the argument a user's value is named by ("the
    `reservation_id` the user gave"): of the ids a user's messages hold, the one meant."""
    if not role.terms or role.phrase != f"the `{role.terms[0]}` the user gave":
        return set()
    return {str(c.arguments[role.terms[0]]).strip() for c in calls if role.terms[0] in c.arguments}


def _again(role: Role, tool: str) -> bool:
    """Whether the role names a result by its call's arguments (the tool ran more than once)."""
    return f"the `{tool}` result for " in role.phrase


def _mentions(role: Role, text: str, call: Call | None) -> bool:
    """Every term of the role stands in the tool's result or in the call that made it: a cheap
    test before naming any value."""
    where = f"{call.tool} {call.arguments} {text}" if call else text
    return all(t in where for t in role.terms)


def _candidates(rules: Rules, role: Role, text: str, call: Call | None) -> Iterator[str]:
    """Values of the role's shape in `text`, on the lines the role points at when the text is
    long."""
    source = _tokens(rules, text)
    if len(source.lines) > ALL_LINES:
        yield from source.of_shape(role.shape, _pointed(role, source.lines, call))
    else:
        yield from source.all_of_shape(role.shape)


class _Tokens:
    """A source's lines and the values each line offers, in the order they stand, with what is
    asked of a value whatever the role (whether it stands in the source as a token of its own,
    whether a probe may ask for it) as it is first asked: a source is read for every role of
    every probe in view, and its tokens and their tests are the same each time."""

    def __init__(self, rules: Rules, text: str) -> None:
        self._rules, self._text = rules, text
        self.lines = text.splitlines()
        # Tokenized as asked: of a long listing only the lines a role points at are read.
        self._values: dict[int, tuple[str, ...]] = {}
        self._fits: dict[str, bool] = {}
        self._shaped: dict[str, tuple[str, ...]] = {}

    def values(self, row: int) -> tuple[str, ...]:
        known = self._values.get(row)
        if known is None:
            known = self._values[row] = _line_values(self.lines[row])
        return known

    def of_shape(self, shape: str, rows: Iterable[int]) -> Iterator[str]:
        """The values of `shape` that fit, on `rows`, each once, in the order they stand."""
        tried: set[str] = set()  # a value is asked once: every test here is of the value alone
        for row in rows:
            for value in self.values(row):
                if value in tried:
                    continue
                tried.add(value)
                if self._rules.shape(value) == shape and self.fits(value):
                    yield value

    def all_of_shape(self, shape: str) -> tuple[str, ...]:
        """`of_shape` on every line, found once per shape: each role of the shape asks it."""
        known = self._shaped.get(shape)
        if known is None:
            known = self._shaped[shape] = tuple(self.of_shape(shape, range(len(self.lines))))
        return known

    def fits(self, value: str) -> bool:
        known = self._fits.get(value)
        if known is None:
            # A probe asks only for a distinctive value (evals/sources/hygiene.py): not "is"
            # or "Yes", which a user's message shows as the one word of its shape. Asked
            # first: it is known per value, where standing is searched for in each text.
            known = self._fits[value] = self._rules.distinctive(value) and \
                self._rules.stands(value, self._text)  # fmt: skip
        return known


def _line_values(line: str) -> tuple[str, ...]:
    """The values a line offers, each once, in order: for each token, the token without a
    sentence's full stop first, and in that order whatever the hash seed (a set's order gave
    another answer, "H9ZU1C." for "H9ZU1C", per process); `./app.py` and `/app.py` read as
    before (`app.py`) as well as from the slash."""
    values: dict[str, None] = {}
    for m in _TOKEN.finditer(line):
        token = m.group()
        for value in (token.rstrip(".:,;"), token, *_relative(token)):
            if value:
                values.setdefault(value)
    return tuple(values)


# Sources tokenized, kept while they hold at most this many characters in all.
TOKENS_CHARS = 8_000_000
_TOKENS: Memo[tuple[Rules, str], _Tokens] = Memo(TOKENS_CHARS, lambda key: len(key[1]))


def _tokens(rules: Rules, text: str) -> _Tokens:
    key = (rules, text)
    known = _TOKENS.get(key)  # one look-up: a replay in another thread may evict it meanwhile
    return known if known is not None else _TOKENS.put(key, _Tokens(rules, text))


def _relative(token: str) -> tuple[str, ...]:
    """`token` without its leading slash (and its trailing punctuation), when it has one."""
    if not token.startswith("/"):
        return ()
    return token[1:], token[1:].rstrip(".:,;")


def _pointed(role: Role, lines: Sequence[str], call: Call | None) -> list[int]:
    """The indexes of the lines a long listing may show the value on: those holding a word
    the role quotes, its line number, or standing where a listing printed from line `a`
    (`sed -n 'a,bp'`, `cat`) puts that line."""
    quoted = _QUOTED.findall(role.phrase)
    numbers = [int(n) for n in _LINE.findall(role.phrase)]
    command = " ".join(str(v) for v in call.arguments.values()) if call else ""
    starts = {1, *(int(a) for a in re.findall(r"\b(\d+)\s*,", command))}
    at = {n - a for n in numbers for a in starts if 0 <= n - a < len(lines)}
    # One search a line for any quoted word or line number: a listing has thousands of lines.
    either = [re.escape(q) for q in quoted] + [rf"(?<!\d){n}(?!\d)" for n in numbers]
    if not either:
        return sorted(at)
    search = re.compile("|".join(either)).search
    return [i for i, line in enumerate(lines) if i in at or search(line)]


def _has_role(rules: Rules, role: Role, value: str, text: str, call: Call | None) -> bool:
    named = role.terms and role.phrase == f"the `{role.terms[0]}` the user gave"
    use = role.terms[0] if named else None
    if call is None:
        return rules.phrase(value, text, None, {}, False, use) == role.phrase
    return rules.phrase(value, text, call.tool, call.arguments, call.again, use) == role.phrase
