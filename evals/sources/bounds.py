"""Where a value stands as a word of its own, found with `str.find` and a look at the
characters around it instead of a regex compiled for the value: a replay names the roles of
thousands of values, each in its own pattern, and compiling them was most of the cost of
naming a role (tests/evals/sources/test_value_bounds.py holds each equal to the regex it
replaces).

`\\s` and `\\w` are read as `re` reads them in a `str` pattern: `str.isspace`, and
`str.isalnum` or `_`.
"""

from __future__ import annotations

import re

# Before a whole token: the start of the text, a space, a quote, an opening bracket, `,`, `=`
# or a currency sign; after it: the end, a space, a quote, a closing bracket, `,;:`, or a
# full stop that ends a sentence.
_BEFORE = frozenset("\"'`([{,=$€£")
_AFTER = frozenset("\"'`)]},;:")
# `name =` (the name a line of code gives a value): `re.search`'s own prefix of `keyword_of`.
_GIVEN = re.compile(r"\b([A-Za-z_]\w*)\s*=")
_QUOTES = "'\""


def whole_token(value: str, text: str) -> bool:
    """`value` stands in `text` as a word of its own, not glued to a sign (`50%`, `sm_50`); a
    currency sign before an amount (`$600`) is no glue: the amount is the value."""
    if not value:
        return _whole_token_regex(value, text)
    n, end_of = len(value), len(text)
    at = text.find(value)
    while at >= 0:
        prev = text[at - 1] if at else ""
        if not prev or prev in _BEFORE or prev.isspace():
            end = at + n
            c = text[end] if end < end_of else ""
            if (
                not c
                or c in _AFTER
                or c.isspace()
                or (c == "." and (end + 1 == end_of or text[end + 1].isspace()))
            ):
                return True
        at = text.find(value, at + 1)
    return False


def _whole_token_regex(value: str, text: str) -> bool:
    pattern = rf"(?:^|[\s\"'`(\[{{,=$€£]){re.escape(value)}(?:$|[\s\"'`)\]}},;:]|\.(?:\s|$))"
    return re.search(pattern, text) is not None


def keyword_of(value: str, line: str) -> str | None:
    """The name the first `name = value` (`name = 'value'`) of `line` gives `value` to, where
    nothing glues on after the value (`[\\w.(]`: `x = f()` gives `x` what `f` returns, not `f`);
    what `re.search(rf"\\b([A-Za-z_]\\w*)\\s*=\\s*['\\"]?{re.escape(value)}(?![\\w.(])", line)`
    finds as its group 1."""
    if line.find(value, line.find("=") + 1) < 0 or "=" not in line:
        return None  # no `=` with the value after it: no assignment of it
    for m in _GIVEN.finditer(line):
        if _given_at(value, line, m.end()):
            return m[1]
    return None


def _given_at(value: str, line: str, at: int) -> bool:
    """`value`, after spaces and an optional quote from `at`, with no `[\\w.(]` after it."""
    space = at
    while space < len(line) and line[space].isspace():
        space += 1
    for start in range(at, space + 1):
        starts = [start]
        if start < len(line) and line[start] in _QUOTES:
            starts.append(start + 1)
        for begin in starts:
            if line.startswith(value, begin) and not _glued(line, begin + len(value)):
                return True
    return False


def _glued(text: str, end: int) -> bool:
    if end >= len(text):
        return False
    c = text[end]
    return c.isalnum() or c in "_.("
