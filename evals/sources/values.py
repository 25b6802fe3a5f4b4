"""Which values of a trace are worth a probe: the tokens of a text that an id, number, path,
file name, date or snake_case name is made of, a tool argument's values, a value's shape, and
whether a value stands in too many places to be any one source's fact."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from evals.sources.cues import spans
from evals.sources.redact import MASK

WHOLE_VALUE_CHARS = 120
# A value standing in more places than this (a line number, a count, a status) is no one
# source's fact: no slot, no probe, and no cue search, which costs a pattern per place.
MAX_OCCURRENCES = 12
# A token worth asking about: an id, a number, a path or file name, a date, a snake_case name.
_TOKEN = re.compile(r"(?<![\w.\-/#])#?[A-Za-z0-9_][\w\-./]*(?<![.\-/])(?![\w\-/]|\.\w)")
_FILE = re.compile(r"\w\.[A-Za-z][A-Za-z0-9]{0,5}$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:]+)?$")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?$")
# What a question may call a file: a name ending in an extension files have, not an attribute
# (`path.join`) or a check id (`models.E015`).
FILE_NAME = re.compile(r"\w\.(?:py|pyi|js|jsx|ts|tsx|rs|go|java|rb|ex|exs|heex|c|h|cc|cpp|hpp|cs"
                        r"|md|rst|txt|json|jsonl|ya?ml|toml|cfg|ini|html|css|sh|sql|csv|lock"
                        r"|xml|traj|log|ipynb)$")  # fmt: skip


def common(value: str, texts: Iterable[str]) -> bool:
    """Whether `value` stands in more than `MAX_OCCURRENCES` places of `texts`."""
    n = 0
    for text in texts:
        if value in text:
            n += len(spans(value, text))
            if n > MAX_OCCURRENCES:
                return True
    return False


def argument_values(text: str) -> list[str]:
    """The values in an argument worth a slot or a probe: the whole argument when it is one
    short line, else the tokens that look like ids, numbers, paths, dates or snake_case
    names; longest first, so a path wins over a number in it."""
    stripped = text.strip()
    out: dict[str, None] = {}
    if MASK in stripped:
        stripped = ""  # what redaction took out is nobody's answer
    if stripped and "\n" not in stripped and len(stripped) <= WHOLE_VALUE_CHARS:
        out[stripped] = None
    for token in tokens(text):
        out[token] = None
    return sorted(out, key=len, reverse=True)


def tokens(text: str) -> Iterator[str]:
    """The tokens of `text` that name something: an id, a number of two digits or more, a
    path or file name, a date, a snake_case name."""
    for m in _TOKEN.finditer(text):
        token = m.group()
        digits = sum(c.isdigit() for c in token)
        if (
            (digits and len(token) >= 2 and (digits >= 2 or not _NUMBER.match(token)))
            or "/" in token
            or _FILE.search(token)
            or ("_" in token.strip("_") and len(token) >= 4)
        ):
            yield token
        if "/" in token:
            # A number between slashes is a value of its own: the id in a URL path, the old
            # text of `sed 's/limit = 35507/.../'`, which would otherwise hide in "35507/limit".
            yield from (part for part in token.split("/") if len(part) >= 2 and part.isdigit())


def shape_of(value: str) -> str:
    if _DATE.match(value):
        return "date"
    if _NUMBER.match(value):
        return "number"
    if "/" in value and " " not in value or FILE_NAME.search(value):
        return "file path"
    return "identifier"
