"""Was a probe's value available at its point of use? A verdict that needs no reader, so a user
can audit it probe by probe (evals/README.md, "Availability"):

- `in_view`: the value is in the request the model got when the probe was asked: in its
  source (a tool result, the user's message) or in text derived from it (an offload's
  preview, a summary, a note the agent wrote);
- `one_read`: not in view, but a path the request names (an offloaded result under
  `/large_tool_results/`, saved history under `/conversation_history/`) is a file that holds
  it: one read away;
- `lost`: neither; also a probe the run never reached (it died of overflow first).

The value is matched as the scorer matches an answer (`answers.mentions`: normalised, whole),
so a value the verdict calls in view is one a right answer could have quoted. The question
itself is left out of the request (an answer quoting it back proves nothing).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evals.scoring.answers import mentions, normalize
from evals.scoring.normalized import CUT, pieces
from evals.simulated.reader import POINTER
from evals.simulated.request import render
from harness.memo import Memo
from harness.messages import Message

IN_VIEW, ONE_READ, LOST = "in_view", "one_read", "lost"
VERDICTS = (IN_VIEW, ONE_READ, LOST)
# Characters of context shown on each side of the value in `evidence`.
AROUND = 80
_ALNUM = re.compile(r"[^\W_]+")
# The words `normalize` writes a scale out as (`answers._SCALE_WORDS`).
_SCALE_WORDS = ("million", "billion", "thousand")


@dataclass(frozen=True)
class Availability:
    """A verdict and its evidence: the window text around the value (`in_view`), the path and
    the file's text around it (`one_read`), or why there is none (`lost`)."""

    verdict: str
    evidence: str = ""


NOT_REACHED = Availability(LOST, "not reached: the run ended before the probe was asked")


def availability(
    value: str,
    system_prompt: str,
    messages: Sequence[Message],
    read: Callable[[str], str | None],
    question: str = "",
    normal: Callable[[str], str] = normalize,
) -> Availability:
    """The verdict for `value` in the request (`system_prompt`, `messages`, as the model was
    shown them); `read(path)` gives a saved file's text (None when there is none). `normal`:
    `normalize`, or a memo of it for a caller that audits the same texts again."""
    asked = question.strip()
    texts = [system_prompt, *(render(m) for m in messages if m.content.strip() != asked)]
    for text in reversed(texts):
        if mentioned(text, value, normal):
            return Availability(IN_VIEW, excerpt(text, value))
    paths = [p.rstrip(".,;:)") for text in reversed(texts) for p in POINTER.findall(text)]
    for path in dict.fromkeys(paths):
        content = read(path)
        if content and mentioned(content, value, normal):
            return Availability(ONE_READ, f"{path}: {excerpt(content, value)}")
    return Availability(LOST, f"not in the request ({len(texts) - 1} messages) nor in the "
                              f"{len(set(paths))} saved files it names")  # fmt: skip


def mentioned(text: str, value: str, normal: Callable[[str], str] = normalize) -> bool:
    """`mentions(normal(text), value)`, normalising only the pieces of `text` (`pieces`: cut
    before each line-opening `#`) that may mention `value`, when its normal form holds no `#`:
    a long history file is then normalised where the value may be, not whole. Its normal form
    is the pieces' joined by spaces, each after the first opening with `#`, so a match without
    `#` lies inside one piece's, and the joining space passes the match's look-arounds as the
    piece's own end or start does."""
    if not may_mention(text, value):
        return False
    if CUT not in text or _crosses_cuts(value):
        return mentions(normal(text), value)
    return any(may_mention(p, value) and mentions(normal(p), value) for p in pieces(text))


@functools.lru_cache(maxsize=1024)
def _crosses_cuts(value: str) -> bool:
    # A value whose normal form holds `#` could match across two pieces.
    return "#" in normalize(value)


def may_mention(text: str, value: str) -> bool:
    """False only when `mentions(normalize(text), value)` is: some run of letters and digits
    of the normalised value is missing from the text case-folded with its commas dropped.
    Normalising only ever replaces characters by spaces, drops commas inside numbers and
    writes scale words out, so every such run of `normalize(text)` (a scale word's letters
    aside) is in that form of the text; checking it costs a fraction of the normalisation."""
    runs = _runs(value)
    if not runs:
        return True
    folded = _FOLDED.get(text)  # one look-up: a replay in another thread may evict it meanwhile
    if folded is None:
        folded = _FOLDED.put(text, unicodedata.normalize("NFKC", text).lower().replace(",", ""))
    return all(r in folded for r in runs)


# Texts case-folded for `may_mention`, kept while they hold at most this many characters in
# all, oldest out first: every probe of a run is audited against the window's texts, most of
# them the texts the probe before it was audited against.
FOLDED_CHARS = 4_000_000
_FOLDED: Memo[str, str] = Memo(FOLDED_CHARS, len)


@functools.lru_cache(maxsize=1024)
def _runs(value: str) -> tuple[str, ...]:
    # A probe's value is checked against every text of its request: normalised once.
    return tuple(
        r for r in _ALNUM.findall(normalize(value)) if not any(r in w for w in _SCALE_WORDS)
    )


def excerpt(text: str, value: str) -> str:
    """The text around the newest occurrence of `value` (case-insensitive; the value's first
    word when the scorer's normalisation matched a different spelling), on one line."""
    low = text.lower()
    at = low.rfind(value.lower())
    if at < 0:
        first = value.split()[0].lower() if value.split() else ""
        at = low.rfind(first) if first else -1
    at = max(at, 0)
    start, end = max(at - AROUND, 0), min(at + len(value) + AROUND, len(text))
    body = " ".join(text[start:end].split())
    return f"{'...' if start else ''}{body}{'...' if end < len(text) else ''}"


def shares(verdicts: Sequence[str | None]) -> dict[str, float | None]:
    """The share of each verdict among the probes that have one (file checks have none)."""
    judged = [v for v in verdicts if v is not None]
    return {v: round(judged.count(v) / len(judged), 6) if judged else None for v in VERDICTS}
