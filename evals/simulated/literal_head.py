"""The literal a cue regex begins with, and the rest of it: most cues of an imported scenario
are a quoted text followed by one of a few value templates (`limit\\ =\\ (-?[0-9]...)`), so the
reader compiles the template once and finds each cue's matches as the literal's occurrences
followed by the template's match (evals/simulated/reader.py, `cue_hits`). `regex` compiles in
Python at ~1 ms a pattern, a few hundred cues per trace.

Only a split that changes no match is made: the head is plain characters and escaped signs
(no class, group, anchor or escape that names a class); the rest starts with no quantifier
(that would repeat the head's last character), has no `|` outside a group (that would end the
head's scope), no inline flag or verb (`(?i)` applies to the whole pattern), no `\\G` or `\\K`
(which depend on where a search starts or reset where a match starts), and a capture group."""

from __future__ import annotations

import functools

from evals.simulated.pattern_pieces import pieces

_SPECIAL = frozenset("\\.^$*+?{}[]|()")
# Groups that are no flags: what may open a group in the rest.
_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")


@functools.lru_cache(maxsize=8192)
def literal_head(pattern: str) -> tuple[str, str] | None:
    """(literal, rest) when `pattern` is `re.escape`-style text followed by a rest whose
    matches right after the literal are the pattern's matches; else None."""
    head: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or nxt.isalnum() or nxt == "_" or not nxt.isascii():
                break  # `\d`, `\1`, `\N{...}`: no literal
            head.append(nxt)
            i += 2
            continue
        if c in _SPECIAL:
            break
        head.append(c)
        i += 1
    rest = pattern[i:]
    if not head or not rest or rest[0] in "*+?{" or not _scoped(rest):
        return None
    return "".join(head), rest


def _scoped(rest: str) -> bool:
    """Whether `rest` can follow a literal without reaching back into it: balanced groups that
    are no flags or verbs, no `|` outside them, no `\\G`/`\\K`, classes without nested `[`,
    and a capture group."""
    depth, captures = 0, 0
    for k, piece in pieces(rest, _class_end):
        if piece in ("", "\\G", "\\K") or piece == "|" and depth == 0:
            return False
        if piece == "(":
            if rest.startswith("(*", k):
                return False
            if rest.startswith("(?", k):
                if not rest.startswith(_OPENERS, k):
                    return False
            else:
                captures += 1
            depth += 1
        elif piece == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and captures > 0


def _class_end(rest: str, k: int) -> int:
    """The index past the class opening at `k`, or -1 when unsure (a `[` inside: a POSIX or
    nested class)."""
    k += 1
    if rest[k : k + 1] == "^":
        k += 1
    if rest[k : k + 1] == "]":
        k += 1  # a leading `]` is a member
    while k < len(rest) and rest[k] != "]":
        if rest[k] == "[":
            return -1
        k += 2 if rest[k] == "\\" else 1
    return k + 1 if k < len(rest) else -1
