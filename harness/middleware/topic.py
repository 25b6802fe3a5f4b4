"""Topic-change detection, so summarization can fire when the subject changes, not only when
the window fills up.

`TopicDetector` is the protocol (plug in an embedding model, a classifier, a rule).
`LexicalTopicShift` works offline: it asks how many of the content words of the new user
message were already used in the conversation so far (by the user or the assistant, tool
output aside). A follow-up question reuses the conversation's vocabulary; a new subject
mostly does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from harness.messages import Message

_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]*[a-z0-9]|[a-z0-9]")
# Function words and conversational filler: they occur in every turn whatever the subject.
_STOP = frozenset(
    """
    about after again also and any are because been before being between both but can could
    did does doing done each even every for from further had has have having her here hers
    him his how into its just let lets like make more most much must need now off once only
    other our ours out over own please same she should some such than that the their theirs
    them then there these they this those through too under until very was were what when
    where which while who whom why will with would you your yours yourself okay thanks thank
    yes want next tell give show know think write find use using used get got see look new
    one two
    """.split()  # noqa: SIM905
)


@runtime_checkable
class TopicDetector(Protocol):
    def is_new_topic(self, earlier: Sequence[Message], latest: Message) -> bool:
        """Whether `latest` (a new user message) moves away from the subject of `earlier`."""
        ...


def content_words(text: str) -> set[str]:
    """Lowercased words of three letters or more, function words out, plurals folded."""
    words = set()
    for word in _WORD.findall(text.lower()):
        word = word.removesuffix("'s")
        if len(word) < 3 or word in _STOP:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return words


class LexicalTopicShift:
    """A new topic when under `min_overlap` of the new message's content words occurred
    earlier in the conversation. Messages with fewer than `min_words` content words ("ok, go
    on") never count as a new topic."""

    def __init__(self, min_overlap: float = 0.2, min_words: int = 4) -> None:
        if not 0 <= min_overlap <= 1:
            raise ValueError("min_overlap must be between 0 and 1")
        self.min_overlap = min_overlap
        self.min_words = min_words

    def overlap(self, earlier: Iterable[Message], latest: Message) -> float | None:
        """The share of `latest`'s content words seen earlier; None when it has too few."""
        new = content_words(latest.content)
        if len(new) < self.min_words:
            return None
        seen: set[str] = set()
        for m in earlier:
            if m.role in ("user", "assistant"):
                seen |= content_words(m.content)
        return len(new & seen) / len(new)

    def is_new_topic(self, earlier: Sequence[Message], latest: Message) -> bool:
        share = self.overlap(earlier, latest)
        return share is not None and share < self.min_overlap

    def __repr__(self) -> str:
        return f"LexicalTopicShift(min_overlap={self.min_overlap}, min_words={self.min_words})"
