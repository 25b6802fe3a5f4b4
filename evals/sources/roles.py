"""What a value is in the text that showed it: its role, so that a probe can ask for it the way
a person would (evals/README.md "Roles, hygiene and carried values").

A role is found only where the value stands under one: a leaf of a JSON result under its key
path (an entry of a list or of an id-keyed map named by a field that tells it apart), a line
of a grep or of a line-numbered listing (the file and what the line says), a traceback frame,
a cell of a table under its header row (table_roles.py), a `label: value` line, a path a
listing printed, or the one token of its shape a command printed. A value that stands in its
source only as part of other text (`50` of "Reading database ... 50%") has no role there:
that sighting is a coincidence, not its source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from evals.simulated.sightings import arguments_key
from evals.sources.code_roles import code_role, pasted_role
from evals.sources.command_roles import command_role, user_role
from evals.sources.cues import spans
from evals.sources.hygiene import shape_refusal
from evals.sources.redact import MASK
from evals.sources.swe_roles import ctf_task_role, swe_listing
from evals.sources.table_roles import table_role
from evals.sources.text_roles import noun, only_of_shape, role, text_role
from harness.memo import Memo

# Keys that name an entry of a list or map (what a person calls it by), best first.
_NAMING = ("name", "title", "flight_number", "code", "source", "type", "kind", "key")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)


@dataclass(frozen=True)
class Call:
    """The call whose result a source is; `again` when the run called the tool before with
    other arguments, so the arguments must say which result is meant."""

    tool: str
    arguments: dict[str, Any]
    again: bool = False


def role_of(value: str, text: str, kind: str, call: Call | None, use_argument: str | None) -> \
        dict[str, Any] | None:  # fmt: skip
    """The role (a `RoleSpec` dict) `value` has in the source `text`, or None when it stands
    under none there. `kind` is the source's ("tool" or "user"); `use_argument` the argument
    the value was later passed as, which names what a user's message gave."""
    if not spans(value, text, first=True):
        return None
    if kind == "user":
        found = ctf_task_role(value, text) or _user(value, text, use_argument)
    elif call is None:
        return None
    else:
        body = _body(text, call.arguments)
        found = (
            _json(value, body, call)
            or table_role(value, body, _result(call))
            or text_role(value, body, call.tool, call.arguments, _result(call))
            or command_role(value, body, call.tool, call.arguments, _result(call))
        )
    if found is None or spans(value, found["phrase"]) or MASK in found["phrase"]:
        return None  # a role that states the value, or names what redaction took out
    if found["phrase"].count("`") % 2:
        return None  # a quote cut open: no well-formed question names it
    return found


def result_body(text: str) -> str:
    """The text of a tool result a role is found in: a command's output without its wrapper."""
    m = _OUTPUT.search(text)  # mini-swe-agent wraps a command's output
    return m.group(1) if m else text


# The parts of tool results roles are found in, kept while the results hold at most this many
# characters in all: a replay asks the role of every value a result shows, and the part
# depends on the result and its call's arguments alone.
BODY_CHARS = 16_000_000
_BODIES: Memo[tuple[str, Hashable], str] = Memo(BODY_CHARS, lambda key: len(key[0]))


def _body(text: str, arguments: dict[str, Any]) -> str:
    """`swe_listing(result_body(text), arguments)`, once per result and arguments."""
    key = (text, arguments_key(arguments))
    known = _BODIES.get(key)  # one look-up: another thread may evict it meanwhile
    if known is None:
        known = _BODIES.put(key, swe_listing(result_body(text), arguments))
    return known


# -- a JSON result ---------------------------------------------------------------------------


def _json(value: str, text: str, call: Call) -> dict[str, Any] | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    data = _parsed(stripped)
    if data is _NOT_JSON:
        return None
    path = _leaf_path(data, value)
    if not path:
        return None
    nouns: list[str] = []  # from the top down: "`name`", "the `flights` entry whose ..."
    terms: list[str] = []
    node, field = data, ""
    for step in path[:-1]:
        if isinstance(node, list) or _is_id(step):
            name = _entry_name(node, step, value)
            place = step if isinstance(node, list) else list(node).index(step)
            which = f"whose `{name[0]}` is `{name[1]}`" if name else f"number {place + 1}"
            terms += list(name or ())
            if field and nouns and nouns[-1] == f"`{field}`":
                nouns[-1] = f"the `{field}` entry {which}"
            else:
                nouns.append(f"the entry {which}")
            field = ""
        else:
            field = str(step)
            nouns.append(f"`{field}`")
            terms.append(field)
        node = node[step]
    last = path[-1]
    leaf = f"item {last + 1}" if isinstance(last, int) else f"the `{last}`"
    if isinstance(last, str):
        terms.append(last)
    chain = "".join(f" of {n}" for n in reversed(nouns))
    return role("json_key", f"{leaf}{chain} in {_result(call)}", [*terms, call.tool], value)


# JSON results parsed, kept while their texts hold at most this many characters in all: every
# value a result shows is asked its role in it (on import, and by the replay's reader), and
# the parsed data is only read.
PARSED_CHARS = 8_000_000
_NOT_JSON = object()
_PARSED: Memo[str, Any] = Memo(PARSED_CHARS, len)


def _parsed(text: str) -> Any:
    """`json.loads(text)` (text opening with `[` or `{`, so never None), or `_NOT_JSON`."""
    known = _PARSED.get(text)  # one look-up: another thread may evict it meanwhile
    if known is None:
        try:
            known = json.loads(text)
        except ValueError:
            known = _NOT_JSON
        known = _PARSED.put(text, known)
    return known


def _leaf_path(data: Any, value: str) -> list[Any] | None:
    """The path to the first leaf equal to `value` (a number compared as written)."""
    if isinstance(data, dict):
        items: list[tuple[Any, Any]] = list(data.items())
    elif isinstance(data, list):
        items = list(enumerate(data))
    else:
        leaf = data if isinstance(data, str) else json.dumps(data)
        return [] if leaf.strip() == value else None
    for key, child in items:
        sub = _leaf_path(child, value)
        if sub is not None:
            return [key, *sub]
    return None


def _is_id(key: Any) -> bool:
    """A map key that is an entry's id (`credit_card_4421486`, `HAT069`), not a field name."""
    return isinstance(key, str) and any(c.isdigit() for c in key)


def _entry_name(container: Any, key: Any, value: str) -> tuple[str, str] | None:
    """A field of entry `key` of `container` whose value no other entry shares, and which is
    not `value`: what the entry is called by."""
    entry = container[key]
    if not isinstance(entry, dict):
        return None
    pairs = container.items() if isinstance(container, dict) else enumerate(container)
    others = [v for k, v in pairs if k != key and isinstance(v, dict)]

    # A field whose value has no digits first: an id naming the entry is often the answer of
    # another probe, which the question would then give away (leaks.py).
    def rank(f: Any) -> tuple[bool, bool, bool]:
        return any(c.isdigit() for c in str(entry[f])), f not in _NAMING, not str(f).endswith("_id")

    fields = sorted(entry, key=rank)
    for field in fields:
        mine = entry[field]
        if not isinstance(mine, str | int) or isinstance(mine, bool) or str(mine) == value:
            continue
        if spans(value, str(mine)) or len(str(mine)) > 60:
            continue
        if all(o.get(field) != mine for o in others):
            return str(field), str(mine)
    return None


def _result(call: Call) -> str:
    if not call.again:
        return f"the `{call.tool}` result"
    args = ", ".join(f"`{k}` {_short(v)}" for k, v in call.arguments.items() if _short(v))
    return f"the `{call.tool}` result for {args}" if args else f"the `{call.tool}` result"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return f"`{text}`" if text and "\n" not in text and len(text) <= 40 else ""


# -- a user's message ------------------------------------------------------------------------


def _user(value: str, text: str, use_argument: str | None) -> dict[str, Any] | None:
    """What the user gave: named by the argument it was later passed as whole, else by what
    the user called it (the words before it: "my user ID is ..."), else by its shape when it
    is the one of its shape the message holds and that shape says what it is (a path, an id,
    a date; hygiene.shape_refusal)."""
    if use_argument:
        return role("user_text", f"the `{use_argument}` the user gave", [use_argument], value)
    label = _label_before(value, text)
    if label and not _small_number(value):
        # The user's own words, quoted ("the Today's date the user gave" read as garbled);
        # "wrote", since "the `user_id` the user gave" names the argument it was passed as.
        return role("user_text", f"the `{label}` the user wrote", [label], value)
    if only_of_shape(value, text) and shape_refusal(value, user=True) is None:
        return role("user_text", f"the {noun(value)} the user gave", [], value)
    for line in text.splitlines():  # code the user pasted (an issue's example)
        if spans(value, line) and (found := code_role(value, line, text, "the user's code")):
            return role("user_text", found[0], found[1], value)
    named = user_role(value, text)  # a traceback frame, a key of a dict literal
    if named is None:
        found = pasted_role(value, text)  # a name the code defines or raises, a frame's
        return role("user_text", found[0], found[1], value) if found else None
    return {**role(named.kind, named.phrase, named.terms, value), "cue": named.cue}


# What a person calls a value they give ("my user ID is ...", "order number: ...").
_NAMING_WORDS = frozenset(
    ("id", "number", "code", "name", "email", "date", "zip", "card", "key", "token", "reference",
     "reservation", "order", "account", "flight", "user", "username", "phone")
)  # fmt: skip
_FILLER = frozenset(
    ("is", "are", "was", "be", "my", "our", "the", "a", "an", "it", "its", "it's", "i", "i'm",
     "to", "of", "for", "and", "with", "as", "on", "in", "at", "by", "from", "this", "that",
     "which", "please", "no", "but", "so", "yes", "sure", "okay", "ok", "also", "here", "now")
)  # fmt: skip


def _label_before(value: str, text: str) -> str:
    """What the user called `value`: the words just before it when they end in "is", "of",
    ":", "=" or "#" ("my user ID is ...", "a date of birth of ...") or in a naming word
    ("reservation ID ..."), without filler words; else ""."""
    start = spans(value, text)[0]
    before = re.split(r"[.!?\n;,(]", text[:start])[-1]
    m = re.search(r"([A-Za-z][\w' \-]{0,40}?)\s*(?:\bis|\bof|:|=|#)\s*$", before) or \
        re.search(r"([A-Za-z][\w' \-]{0,40}?\b(?:id|ID|number|code|name))\s*$", before)  # fmt: skip
    words: list[str] = []
    found = re.findall(r"[A-Za-z][A-Za-z'\-]*", m[1] if m else "")
    for i in range(len(found) - 1, -1, -1):
        word = found[i]
        # "date of birth": `of` inside a label whose head, before it, is a naming word
        inner = word.lower() == "of" and words and i > 0 and found[i - 1].lower() in _NAMING_WORDS
        if word.lower() in _FILLER and not inner or len(words) == 3:
            break  # the label is the run of words right before the value
        words.insert(0, word)
    head = words[: words.index("of")] if "of" in words else words
    return " ".join(words) if head and head[-1].lower() in _NAMING_WORDS else ""


def _small_number(value: str) -> bool:
    """A bare number of under four digits: what a user called it ("id 123") says nothing a
    model could tell it apart by from the other small numbers of a conversation."""
    return value.isdigit() and len(value.lstrip("0")) < 4
