"""Which values of a real trace a probe may ask for, and why the others were not (counted by
reason in the import summary; evals/README.md "Roles, hygiene and carried values").

A probe's answer must be distinctive: not an English word or phrase (a word is a value of
letters only that an English dictionary lists in any case, `DEN` as `den`, or that the
tokenizer holds as one common token; a phrase is a run of words of letters, while a command
line such as `adb shell getprop ro.build.type` is none), not a fragment (`1,`, `2,5`, `{1,3}`,
a lone sign), not a one- or two-digit number that stands everywhere, not an ordinal (`5th`).
Its source sighting must be causal (the value stands there under a role,
roles.py), and something must come between that sighting and the use: a step of the agent,
or at least `MIN_TOKENS_BETWEEN` tokens.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Any

from evals.sources.values import FILE_NAME, shape_of
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
    "ordinal": "an ordinal (`5th`, `22nd`): a day or a place in a list, no value of its own",
    "in_prompt": "in the system prompt, always in view",
    "common": "stands in too many places to be any one source's fact",
    "no_role": "no source shows it under a role (only as part of other text)",
    "not_a_path": "only a path's shape would name it, and it is no path (`w/o`, `and/or`)",
    "shape_only": "only its shape would name it, which says nothing of it (a name or a number "
    "a user's message holds)",
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
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.I)
_PATH_CHARS = re.compile(r"[\w.\-~]*/[\w.\-~/]*")
# Endings that make a listed word another word of it (`records`, `followed`, `mapped`):
# the word lists hold the headwords only.
_ENDINGS = (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"),
            ("ing", ""), ("ing", "e"), ("er", ""), ("est", ""), ("ly", ""))  # fmt: skip


@lru_cache(maxsize=1)
def _counter() -> TokenCounter:
    return TokenCounter()


@lru_cache(maxsize=1)
def _dictionary() -> AbstractSet[str]:
    """The entries of the GCIDE and Webster's word lists (the `english-words` package), as
    they come: `_listed` reads only their lower-case words (testing the ~340,000 entries
    once took ~0.1 s of a process's start; a replay asks about ~100 words)."""
    from english_words import get_english_words_set

    return get_english_words_set(["gcide", "web2"])


def _listed(text: str, entries: AbstractSet[str]) -> bool:
    """A lower-case entry of letters: a capitalised one is a proper name (Seattle, Garcia),
    not a word."""
    return text.isalpha() and text.islower() and text in entries


def in_dictionary(word: str) -> bool:
    """Whether `word`, in any case, is a listed word or one of its plain inflections."""
    entries, text = _dictionary(), word.lower()
    if _listed(text, entries):
        return True
    for ending, back in _ENDINGS:
        stem = text[: -len(ending)] + back
        if (
            text.endswith(ending)
            and len(stem) >= 3
            and (
                _listed(stem, entries)
                or stem[-1] == stem[-2]
                and _listed(stem[:-1], entries)  # mapped: map
            )
        ):
            return True
    return False


def is_word(text: str) -> bool:
    """An English word: letters only, and in the dictionary in any case (`DEN` is "den", an
    airport code that is a word all the same), or, unless CamelCase or an acronym, one token
    of the tokenizer's vocabulary as a word of running text (" however", " reservation");
    names a coder made up (`sympify`, `QuerySet`) are not."""
    if not _LETTERS.fullmatch(text):
        return False
    if in_dictionary(text):
        return True
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
    if _ORDINAL.fullmatch(text):
        return "ordinal"
    if _NUMBERISH.fullmatch(text):
        # Digits joined by signs that are no number (`1,`, `2,5`, `3.`): a piece of a list
        if not re.fullmatch(r"-?\d+(?:\.\d+)?|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,4}[\-/.:]\d"
                            r"{1,2}[\-/.:]\d{1,4}", text):  # fmt: skip
            return "fragment"
        if len(re.sub(r"\D", "", text)) <= 2:
            return "short_number"
    if not re.search(r"[A-Za-z0-9]", text):
        return "fragment"
    # Punctuation and markup around words (`# Weekly report`, `**Note**`) leave a phrase one.
    words = [w.strip(".,;:!?\"'()#*`") for w in text.split()]
    if len(words) > 1 and all(not w or _LETTERS.fullmatch(w) for w in words):
        return "word"  # a phrase: what it says; a command line (`ro.build.type`) is a value
    if words and all(not w or is_word(w) for w in words):
        return "word"
    return None


def path_shaped(value: str) -> bool:
    """Whether `value` is what a person calls a path: a file name with an extension files have,
    a path from a root (`/`, `./`, `~/`) or to a folder (`docs/`), three parts or more, or two
    parts not both dictionary words or abbreviations (`django/db`; not `w/o`, `and/or`, `I/O`).
    Digits and signs alone (`24/7`, `12/05/2024`) are no path."""
    if FILE_NAME.search(value):
        return True
    if not _PATH_CHARS.fullmatch(value) or not re.search(r"[A-Za-z]", value):
        return False
    parts = [p for p in value.split("/") if p]
    if value.startswith(("/", "./", "../", "~/")) or value.endswith("/") or len(parts) >= 3:
        return True
    return any(len(p) >= 3 and not p.isupper() and not in_dictionary(p) for p in parts)


def shape_refusal(value: str, user: bool) -> str | None:
    """Why the shape of `value` may not name it where it is the one value of that shape in its
    source ("the path the user gave"), a key of `REASONS`, or None when it may: `not_a_path`,
    the path shape without a path; `shape_only` (in a `user`'s message), a name or a plain
    number, which the user may have given many of (`Seattle`, `600`)."""
    if _ORDINAL.fullmatch(value.strip()):
        return "ordinal"  # "the id the user gave" of `5th`
    shape = shape_of(value)
    if shape == "file path" and not path_shaped(value):
        return "not_a_path"
    if user and (shape == "number" or shape == "identifier" and not re.search(r"\d", value)):
        return "shape_only"
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
