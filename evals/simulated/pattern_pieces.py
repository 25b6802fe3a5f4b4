"""A cue regex's text read piece by piece, for the readers of what a cue can match
(literal_head.py, line_bound.py): each decides from the pieces, and refuses what it is unsure
of, but both must agree on where an escape, a class or a repeat count begins and ends."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

# A repeat count `{m}`, `{m,}`, `{,n}`, `{m,n}` (anything else after `{` is no count).
REPEAT = re.compile(r"\{(?:\d+|\d*,\d*)\}")


def pieces(pattern: str, class_end: Callable[[str, int], int]) -> Iterator[tuple[int, str]]:
    """(index, text) of each piece of `pattern`: an escape (`\\` and the character after it),
    a class (from `[` to past its `]`, where `class_end` puts it), a repeat count, or one
    character. A class `class_end` cannot read (-1) is the piece "" and the last."""
    k = 0
    while k < len(pattern):
        c = pattern[k]
        if c == "\\":
            end = k + 2
        elif c == "[":
            end = class_end(pattern, k)
            if end < 0:
                yield k, ""
                return
        elif c == "{" and (repeat := REPEAT.match(pattern, k)) is not None:
            end = repeat.end()
        else:
            end = k + 1
        yield k, pattern[k:end]
        k = end
