"""Which values of a real trace a probe may ask for, and why the others were not (counted by
reason in the import summary; evals/README.md "Roles, hygiene and carried values").

A probe's answer must be distinctive: not an English word or phrase (a word is a value of
letters only that the tokenizer holds as one common token, or a run of such words), not a
fragment (`1,`, `2,5`, `{1,3}`, a lone sign), not a one- or two-digit number that stands
everywhere. Its source sighting must be causal (the value stands there under a role,
roles.py), and something must come between that sighting and the use: a step of the agent,
or at least `MIN_TOKENS_BETWEEN` tokens.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

from harness.tokens import TokenCounter

MIN_TOKENS_BETWEEN = 200
# Fewer probes than this make a run's accuracy noise: its import is refused, with the reasons
# its candidates were rejected (a ctxlab thread and a foreign trace alike).
MIN_PROBES = 5
# Why a candidate value made no probe, as the summary counts them.
REASONS = {
    "word": "a dictionary word or English phrase",
    "fragment": "a fragment (punctuation-joined numbers, a regex quantifier, a lone sign)",
    "short_number": "a one- or two-digit number",
    "in_prompt": "in the system prompt, always in view",
    "common": "stands in too many places to be any one source's fact",
    "no_role": "no source shows it under a role (only as part of other text)",
    "nothing_between": "used right where it was read: no step and under "
    f"{MIN_TOKENS_BETWEEN} tokens between",
    "ambiguous": "its role names more than one value",
    "unread": "no whole value of its source under its role: a reader could not answer",
    "leak": "its question gives a probe's answer away",
    "over_cap": "over the per-trace cap",
}
# A trace where fewer than this share of its candidates survive is flagged in the summary.
FLAG_BELOW = 0.5

_LETTERS = re.compile(r"[A-Za-z]+(?:['\-][A-Za-z]+)?")
_NUMBERISH = re.compile(r"[\d,.;:+\-*/]+")
_QUANTIFIER = re.compile(r"\{\d*,?\d*\}|[*+?]")


@lru_cache(maxsize=1)
def _counter() -> TokenCounter:
    return TokenCounter()


def is_word(text: str) -> bool:
    """An English word: letters only, and one token of the tokenizer's vocabulary as a word
    of running text (" however", " reservation"); names a coder made up (`sympify`) are not."""
    if not _LETTERS.fullmatch(text):
        return False
    if text[1:] != text[1:].lower():
        return False  # CamelCase or an acronym: a name someone gave
    return _counter().count_text(" " + text.lower()) == 1


def rejection(value: str) -> str | None:
    """Why `value` is no answer a probe may have (a key of `REASONS`), or None when it is
    distinctive."""
    text = value.strip()
    if len(text) < 3 and not text.isdigit() or _QUANTIFIER.fullmatch(text):
        return "fragment"
    if text.isdigit() and len(text.lstrip("0") or "0") <= 2:
        return "short_number"
    if _NUMBERISH.fullmatch(text):
        # Digits joined by signs that are no number (`1,`, `2,5`, `3.`): a piece of a list
        if not re.fullmatch(r"-?\d+(?:\.\d+)?|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,4}[\-/.:]\d"
                            r"{1,2}[\-/.:]\d{1,4}", text):  # fmt: skip
            return "fragment"
        if len(re.sub(r"\D", "", text)) <= 2:
            return "short_number"
    if not re.search(r"[A-Za-z0-9]", text):
        return "fragment"
    words = text.split()
    if len(words) > 1 and not any(c.isdigit() for c in text):
        return "word"  # a phrase: what it says, not a value a source holds
    if words and all(is_word(w.strip(".,;:!?\"'()")) or not w.strip(".,;:!?\"'()")
                     for w in words):  # fmt: skip
        return "word"
    return None


class Rejections(Counter[str]):
    """Candidates rejected, by reason; `candidates` counts every value considered."""

    def __init__(self) -> None:
        super().__init__()
        self.candidates = 0

    def as_counts(self) -> dict[str, int]:
        return {f"rejected_{k}": v for k, v in sorted(self.items()) if v}


def rejected_counts(counts: dict[str, int]) -> Counter[str]:
    """The rejections by reason in a scenario's `probe_counts` (its `rejected_<reason>` keys)."""
    return Counter({k.removeprefix("rejected_"): v for k, v in counts.items()
                    if k.startswith("rejected_")})  # fmt: skip


def rejections_line(candidates: int, rejected: Counter[str]) -> str:
    """One line of an import summary: the candidates and how many each rule rejected."""
    said = ", ".join(f"{n} {reason}" for reason, n in rejected.most_common() if n)
    return f"probes: {candidates} candidates, rejected {said or 'none'}"


def require_probes(doc: dict[str, Any], what: str, least: int) -> None:
    """Refuses the scenario `doc` of `what` ("trace ID", "run ID") when it has fewer than
    `least` probes (at least one): its accuracy would be noise. The reason names what its
    candidates were rejected for. Raises `ValueError`."""
    n = len(doc["probes"])
    if n >= max(1, least):
        return
    counts = doc["probe_counts"]
    rejected = sorted(((v, k) for k, v in rejected_counts(counts).items() if v), reverse=True)
    why = ", ".join(f"{v} {k}" for v, k in rejected) or "nothing it used was read earlier"
    found = "no probes" if n == 0 else f"only {n} probe{'s' * (n != 1)} (under {least})"
    raise ValueError(f"{what}: {found} from {counts.get('candidates', 0)} "
                     f"candidates (rejected: {why})")  # fmt: skip
