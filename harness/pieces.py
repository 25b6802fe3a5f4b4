"""Where cl100k_base and o200k_base cut text into pieces, read from the characters alone.

Both encodings first split text into pieces with a pattern, then encode each piece on its own:
no token spans two pieces, so a text's token count is the sum of its pieces' counts. What is
known here without the tokenizer: lower bounds on a text's pieces (`runs_at_least`,
`pieces_at_least`: a huge text proven over a limit from its bytes) and places where a piece
always starts, whatever came before (`starts_piece`) or follows (`split_point`,
`last_piece_start`): text cut there counts as the sum of its sides, so a joined text is counted
from its parts (`TokenCounter.count_joined`).

Why a newline followed by anything but whitespace or a slash, or by spaces and tabs and then
anything but whitespace, is such a place: of the patterns' alternatives, only these match a
newline: whitespace runs (`\\s*[\\r\\n]+` ends at the run's last newline; `\\s+(?!\\S)` and
`\\s+` come after it and so only match runs holding no newline), and a punctuation run's
trailing newlines (`[\\r\\n]*`; o200k's `[\\r\\n/]*` also takes a slash), which stop before
anything but a newline (or slash); a letter run's optional lead character is never a newline.
So every piece holding the newline ends right after it, and the next piece's match starts there
and reads only what follows. (Held against both tokenizers' own cuts by
tests/harness/test_pieces.py.)
"""

from __future__ import annotations


def starts_piece(text: str, i: int) -> bool:
    """Whether a piece starts at `text[i]` in both encodings when a newline comes right before
    it, whatever came before the newline: a character there that is neither whitespace nor a
    slash, or spaces and tabs and then a character that is not whitespace (an indented line)."""
    if i >= len(text):
        return False
    char = text[i]
    if char == " " or char == "\t":
        line = text[i : i + 200].lstrip(" \t")  # a longer indent is counted with the newline
        return bool(line) and not line[0].isspace()
    return char != "/" and not char.isspace()  # Python's whitespace holds the patterns' `\s`


def last_piece_start(text: str, low: int = 0) -> int | None:
    """The last index at or after `low` (and above 0) where `text` starts a piece whatever
    follows it: just after a newline, where `starts_piece`. None when there is none: the text
    then counts only whole."""
    i = text.rfind("\n", low, len(text) - 1)  # a final newline has nothing after it in `text`
    while i != -1:
        if starts_piece(text, i + 1):
            return i + 1
        i = text.rfind("\n", low, i)
    return None


# ASCII letters -> "a", digits -> "0", apostrophes dropped, anything else -> " ".
_CLASSES = bytes(
    ord("a") if chr(b).isalpha() else ord("0") if chr(b).isdigit() else ord(" ") for b in range(128)
).ljust(256, b" ")


# ASCII letters and digits -> "a", apostrophes dropped, anything else -> " ".
_ALNUM = _CLASSES.replace(b"0", b"a")


def runs_at_least(text: str) -> int:
    """A weaker lower bound than `pieces_at_least` at a fifth of its cost (one pass instead
    of seven): the runs of ASCII letters and digits (joined across apostrophes). No piece
    holds letters or digits of two runs, so each run holds at least one token. 0 for
    non-ASCII text."""
    if not text.isascii():
        return 0
    return (b" " + text.encode("ascii").translate(_ALNUM, b"'")).count(b" a")


def pieces_at_least(text: str) -> int:
    """A lower bound on the tokens of `text` in cl100k_base and o200k_base, from byte counts
    alone (0 for non-ASCII text). Both encodings first cut text into pieces and no token spans
    two: every run of ASCII digits is cut into pieces of at most 3 digits holding nothing
    else, and letters separated by anything but an apostrophe never share a piece (an
    apostrophe may join contractions, so the runs it separates count as one). Each piece is at
    least one token. A CSV export is proven over a limit this way at a fraction of the
    tokenizer's cost."""
    if not text.isascii():
        return 0
    classes = b" " + text.encode("ascii").translate(_CLASSES, b"'")
    letter_runs = classes.count(b" a") + classes.count(b"0a")
    digit_runs = classes.count(b" 0") + classes.count(b"a0")
    # Each run of L digits makes ceil(L / 3) pieces: one for the run, and floor((L - 1) / 3)
    # more, counted as "000" once the first digit of every run is dropped.
    beyond_first = classes.replace(b" 0", b" ").replace(b"a0", b"a").count(b"000")
    return letter_runs + digit_runs + beyond_first


def split_point(text: str, size: int) -> int | None:
    """An index in [size/2, size) where cl100k and o200k both start a new piece whatever
    follows: just after a newline and before a letter or digit (no pattern of either encoding
    spans that boundary). None when the text is not much longer or has no such point there."""
    if len(text) <= size + size // 2:
        return None
    i = text.rfind("\n", size // 2, size)
    while i != -1:
        if text[i + 1].isalnum():
            return i + 1
        i = text.rfind("\n", size // 2, i)
    return None
