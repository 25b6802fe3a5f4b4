"""The literal text every match of a cue regex holds, read off the pattern without compiling it:
the reader (evals/simulated/reader.py) runs a cue only on the texts that hold it. A window's
texts mostly lack a given cue's words (nine searches in ten find nothing), and a cue whose
words no text holds is never compiled at all (the `regex` engine compiles in Python: ~1 ms).

Only what is surely required is taken: a run of plain or escaped characters at the top level
of a pattern without a top-level `|`, none of them made optional or repeated by a quantifier
after it. Anything this reading is unsure of (an inline flag, which in the `regex` engine's
version 0 applies to the whole pattern; a letter escape other than a class or an anchor; a
brace that is no plain `{m,n}`; what may be a POSIX class; a pattern cut short) gives no
literal, and the cue runs on every text as before."""

from __future__ import annotations

import functools
import re

# Escapes that stand for a class of characters or a position, never for text of their own.
_CLASS_ESCAPES = frozenset("dDwWsSbBAZ")
# What may follow `(?` in a group that sets no flag: non-capturing, look-arounds, named and
# atomic groups, branch reset, conditionals (not a comment: its text may hold a lone paren).
_GROUP_OPENERS = frozenset(":=!<>P|(")
_POSIX = re.compile(r"\[:\^?\w*:\]")  # `[[:alpha:]]`: a set this reading does not parse
_QUANTIFIER = re.compile(r"\{(\d*,?\d*)\}")


@functools.lru_cache(maxsize=8192)
def required_literal(pattern: str) -> str | None:
    """The longest run of literal text every match of `pattern` holds, or None when there is
    none that this reading is sure of (see the module doc)."""
    if _POSIX.search(pattern) or any(
        pattern[i + 2 : i + 3] not in _GROUP_OPENERS for i in _starts(pattern, "(?")
    ):
        return None
    runs: list[str] = []
    run: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            escaped = pattern[i + 1]
            if escaped.isalnum():
                if escaped not in _CLASS_ESCAPES:
                    return None  # \t, \x41, \p{L}, \N{...}: text this reading does not decode
                runs.append("".join(run))
                run = []
            else:
                run.append(escaped)
            i += 2
        elif c in "*+?":
            run = run[:-1]  # the character before is optional or repeated
            runs.append("".join(run))
            run = []
            i += 1
        elif c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m is None:
                return None  # a literal brace, or the engine's fuzzy matching
            run = run[:-1]
            runs.append("".join(run))
            run = []
            i = m.end()
        elif c == "|":
            return None  # either side may match alone
        elif c in "([":
            end = _group_end(pattern, i) if c == "(" else _set_end(pattern, i)
            if end is None:
                return None
            runs.append("".join(run))
            run = []
            i = end
        elif c in ".^$)]":
            runs.append("".join(run))
            run = []
            i += 1
        else:
            run.append(c)
            i += 1
    runs.append("".join(run))
    longest = max(runs, key=len)
    return longest or None


def _starts(text: str, sub: str) -> list[int]:
    found, at = [], text.find(sub)
    while at >= 0:
        found.append(at)
        at = text.find(sub, at + 1)
    return found


def _set_end(pattern: str, start: int) -> int | None:
    """The index past the `]` closing the set that opens at `start` (a `]` first in the set,
    after an optional `^`, is a member of it)."""
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return None


def _group_end(pattern: str, start: int) -> int | None:
    """The index past the `)` closing the group that opens at `start`."""
    depth, i = 0, start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            end = _set_end(pattern, i)
            if end is None:
                return None
            i = end
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None
