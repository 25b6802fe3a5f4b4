"""`normalize` of the long texts an availability audit reads, each piece normalised once per
process.

The audit of every probe normalises the request's texts and the saved files it names. Most of
them were normalised for an earlier probe, or by the same trace's other cell, and the history
file under `/conversation_history/` grows by a section per summary: normalised whole each time,
the cost of a replay grew with the square of its transcript. So a text is cut into pieces at
every markdown heading that opens a line (a newline followed by `#`: each rendered message and
each history section opens with one), and each piece is normalised once.

The pieces' normal forms, joined by single spaces (empty ones left out), are exactly
`normalize(text)`: every step of `normalize` is blind to what lies across such a cut. NFKC and
case folding act per character (a newline composes with nothing and ends a final sigma's
context); no number, currency, scale or punctuation match spans a newline followed by `#`
(`\\s*` before a scale word meets `#`, not a unit; `#` is never loose punctuation); the
look-arounds look one character away, and see the same newline or `#` either way; and the
whitespace split cuts there anyway (tests/evals/scoring/test_normalized.py checks this on
generated texts).
"""

from __future__ import annotations

from evals.scoring.answers import normalize
from harness.memo import Memo

# Characters of pieces kept with their normal forms, oldest out first: a few times the largest
# scenario file of a generated suite (1.7 MB), so a trace's second cell finds the first's.
MEMO_CHARS = 4_000_000
CUT = "\n#"


class NormalMemo:
    """`normalize(text)`, from the remembered normal forms of the text's pieces."""

    def __init__(self, chars: int = MEMO_CHARS) -> None:
        self._normal: Memo[str, str] = Memo(chars, len)
        # Whole texts cut into pieces, by the same budget: the same saved file is audited for
        # several probes, and cutting and joining it again costs what its pieces' look-ups do.
        self._whole: Memo[str, str] = Memo(chars, len)

    def __call__(self, text: str) -> str:
        if CUT not in text:
            return self._piece(text)
        known = self._whole.get(text)  # one look-up: another thread may evict it meanwhile
        if known is not None:
            return known
        return self._whole.put(text, " ".join(n for n in map(self._piece, pieces(text)) if n))

    def _piece(self, piece: str) -> str:
        found = self._normal.get(piece)
        return found if found is not None else self._normal.put(piece, normalize(piece))


def pieces(text: str) -> tuple[str, ...]:
    """`text` cut before every `#` that opens a line (each piece holds no cut): their normal
    forms, joined by single spaces with empty ones left out, are `normalize(text)`. Kept per
    text: the same history file is cut for several probes, and pieces cut anew are new
    strings, each hashed again by every memo it is looked up in."""
    known = _PIECES.get(text)  # one look-up: another thread may evict it meanwhile
    if known is not None:
        return known
    parts = text.split(CUT)
    last = len(parts) - 1
    return _PIECES.put(
        text,
        tuple(("#" if i else "") + p + ("\n" if i < last else "") for i, p in enumerate(parts)),
    )


_PIECES: Memo[str, tuple[str, ...]] = Memo(MEMO_CHARS, len)


# One per process: a worker replays many cells, and a trace's cells share most of their texts.
normal_memo = NormalMemo()
