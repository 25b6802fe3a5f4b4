"""Text bound for a terminal: strings from a trace or the store are data, never commands.

A tool's output, a file name or a trace id can hold escape sequences that a terminal obeys
(clear the screen, move the cursor over a line already printed, write the clipboard with
OSC 52) or bidirectional overrides that show text in another order than it is. Everything
`ctxlab` prints from such a source goes through `printable`, which shows those characters
as Python-style escapes instead.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls (0x9b is a one-byte CSI), the bidirectional embeddings,
# overrides and isolates, and the Unicode line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEPING_LINES = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\u202e`).
    keep_newlines: leave `\\n` as a line break, for output where a line cannot pass for
    another (a table cell)."""
    pattern = _UNSAFE_KEEPING_LINES if keep_newlines else _UNSAFE
    return pattern.sub(_escape, text)
