"""Whether a cue regex is line-bound: no match of it can hold a newline, so each match lies
within one line, and the reader searches only the lines that hold one of the cue's needles
(evals/simulated/reader.py, `cue_matches`) instead of the whole text.

Decided from the pattern's text, as the reader compiles it (`regex`, MULTILINE, version 0),
and only when sure: every piece is one of a known few that never match a newline:

- a plain character other than a newline, or one escaped with `\\` (`\\.`, `\\ `, a tab);
- `.` (no DOTALL: inline flags are refused, so none can turn it on), `\\d`, `\\w`, `\\S`, `\\t`;
- a class of such members and ranges that skip the newline (`[ \\t]`, `[A-Za-z_]`), or a
  negated class that names `\\n` or `\\s` (`[^\\n]`, `[^\\s:]`);
- `^`, `$`, `\\b`, `\\B`: in MULTILINE they read only the characters either side of where
  they stand, which a search of the line (its newline included) sees as the whole text does;
- groups: capturing, `(?:`, and lookarounds (whose own pieces obey the same rules);
- quantifiers `*`, `+`, `?`, `{m,n}` (lazy or possessive too) and `|`.

Anything else (`\\s`, `\\W`, `\\D`, `\\n`, `\\x0a`, `\\p{..}`, `\\A`, `\\Z`, `\\G`, `\\K`, a
back-reference, named groups, inline flags, verbs, fuzzy `{e<=1}`, nested or POSIX classes) is
refused: the cue is then searched over the whole text as before."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable

import regex

from evals.simulated.pattern_pieces import pieces

# Escapes outside a class that match one character that is never a newline, or assert.
_ESCAPES = frozenset("dwStbB")
# Escapes inside a class that name only characters other than a newline.
_CLASS_ESCAPES = frozenset("dwSt")
_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")
_NEWLINE = ord("\n")


@functools.lru_cache(maxsize=8192)
def line_bound(pattern: str) -> bool:
    """Whether no match of the cue `pattern` can hold a newline (False when unsure)."""
    for k, piece in pieces(pattern, _class_end):
        if piece in ("", "\n", "{", "}"):
            return False  # a class that may match a newline, fuzzy matching, a brace
        if piece[0] == "\\":
            nxt = piece[1:]
            if not nxt or nxt == "\n" or (nxt.isalnum() or nxt == "_") and nxt not in _ESCAPES:
                return False
            if not nxt.isascii():
                return False
        elif piece == "(":
            if pattern.startswith("(?", k) and not pattern.startswith(_OPENERS, k):
                return False  # inline flags, named groups, conditionals, comments
            if pattern.startswith("(*", k):
                return False  # verbs
    return True


def _class_end(pattern: str, k: int) -> int:
    """The index past the class opening at `k`, or -1 when it may match a newline (or its
    reading is unsure: a nested or POSIX class, an escape that names a set of characters)."""
    k += 1
    negated = pattern[k : k + 1] == "^"
    if negated:
        k += 1
    members: list[str] = []  # single characters, for ranges
    excludes_newline = False
    first = True
    while k < len(pattern) and (pattern[k] != "]" or first):
        c = pattern[k]
        first = False
        if c == "[":
            return -1
        if c == "\\":
            nxt = pattern[k + 1 : k + 2]
            if nxt in ("n", "s"):
                if not negated:
                    return -1
                excludes_newline = True
                members.append("")
            elif nxt in _CLASS_ESCAPES:
                members.append("")
            elif nxt and not (nxt.isalnum() or nxt == "_") and nxt.isascii() and nxt != "\n":
                members.append(nxt)
            else:
                return -1
            k += 2
            continue
        if c == "\n":
            return -1
        if c == "-" and members and pattern[k + 1 : k + 2] not in ("]", ""):
            end = pattern[k + 1]
            if not members[-1] or end in "\\[\n" or ord(members[-1]) <= _NEWLINE <= ord(end):
                return -1  # a range from an escape or past the newline: refused
            members.append("")  # a range ends no further range
            k += 2
            continue
        members.append(c)
        k += 1
    if k >= len(pattern):
        return -1
    if negated and not excludes_newline:
        return -1
    return k + 1


def needle_lines(text: str, found: Iterable[str]) -> list[tuple[int, int]]:
    """(start, end) of each line of `text` that holds one of the texts `found`, in order, its
    end past its newline (or the text's end)."""
    spans: set[tuple[int, int]] = set()
    for needle in found:
        at = text.find(needle)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end + 1
            spans.add((start, end))
            at = text.find(needle, end)  # a needle holds no newline: the line is done
    return sorted(spans)


def line_matches(
    compiled: regex.Pattern[str], text: str, found: Iterable[str], seconds: float
) -> list[regex.Match[str]]:
    """The matches of the line-bound cue `compiled` in `text`, whose every match holds one of
    the texts `found`: each lies in one line, so only the lines holding one are searched, each
    with its newline (`$`, `\\b` and lookaheads at its end see what they see in the whole text; a
    lookbehind sees before `pos`), in order: their matches, in order, are the whole text's.
    Raises TimeoutError past `seconds` for the text, as one search of it would."""
    deadline = time.monotonic() + seconds
    matches: list[regex.Match[str]] = []
    for start, end in needle_lines(text, found):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        matches.extend(compiled.finditer(text, start, end, concurrent=True, timeout=left))
    return matches
