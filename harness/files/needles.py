"""Needles: literal texts at least one of which every match of a regex contains.

grep tries its regex once per line that can match. A pattern such as `name.*\\w+|\\w+.*name`
starts a backtracking attempt at every character of a text (each one retried for every shorter
word), yet no line without `name` holds a match: lines are first sought by `str.find` for the
needles, and only the lines that hold one are searched with the regex, so the hits are the
same and the rest of the text costs a substring search.

The needles are read from the pattern as Python's own parser sees it (`compile_regex` already
requires it to parse there): a run of literal characters every match must pass through, or
for an alternation one such run per branch. Nothing is promised (None) when case is ignored
anywhere, or when a literal brace or bracket appears: the `regex` engine that runs the search
reads `{e<=1}` (fuzzy matching) and `[[:alpha:]]` (a POSIX class) where `re` sees literals.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# `re._parser` has no type stubs, and `sre_parse` warns that it is deprecated.
_parser: Any = importlib.import_module("re._parser")

_UNSAFE = frozenset(map(ord, "{}[]"))
# Needles shorter than this find too many lines to be worth a pass of their own.
_MIN_CHARS = 2


class _Unsafe(Exception):
    """The pattern holds something whose meaning the needles might get wrong."""


def needles(pattern: str) -> tuple[str, ...] | None:
    """Texts one of which is in every match of `pattern`, or None when none is known."""
    try:
        parsed = _parser.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        found = _required(list(parsed))
    except (_Unsafe, re.error, RecursionError):
        return None
    if found is None or min(map(len, found)) < _MIN_CHARS or any("\n" in n for n in found):
        return None
    return tuple(dict.fromkeys(found))


def _required(items: list[tuple[Any, Any]]) -> list[str] | None:
    """The best needles of a sequence: its longest run of literals, or the needles of an
    element every match passes through, whichever has the longest shortest needle."""
    best: list[str] | None = None
    run: list[str] = []

    def consider(option: list[str] | None) -> None:
        nonlocal best
        if option and (best is None or min(map(len, option)) > min(map(len, best))):
            best = option

    for op, av in items:
        name = op.name
        if name == "LITERAL":
            if av in _UNSAFE:
                raise _Unsafe
            run.append(chr(av))
            continue
        consider(["".join(run)] if run else None)
        run = []
        consider(_element(name, av))
    consider(["".join(run)] if run else None)
    return best


def _element(name: str, av: Any) -> list[str] | None:
    if name == "SUBPATTERN":
        _group, add_flags, _del_flags, inner = av
        if add_flags & re.IGNORECASE:
            raise _Unsafe
        return _required(list(inner))
    if name == "ATOMIC_GROUP":
        return _required(list(av))
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _high, inner = av
        found = _required(list(inner))
        return found if low >= 1 else None
    if name == "BRANCH":
        options = [_required(list(branch)) for branch in av[1]]
        return None if None in options else [n for option in options if option for n in option]
    # A lookaround or a conditional's branches: read only for an unsafe literal.
    if name in ("ASSERT", "ASSERT_NOT"):
        _required(list(av[1]))
    elif name == "GROUPREF_EXISTS":
        for branch in av[1:]:
            if branch is not None:
                _required(list(branch))
    return None  # one character of a class, an anchor, a lookaround: nothing literal is certain


__all__ = ["needles"]
