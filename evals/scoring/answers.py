"""Scoring a natural answer against a probe's expected value.

Both sides go through the same normalisation, so the rule is symmetric and a formatting
choice never decides a verdict: case, markdown emphasis, quotes and sentence punctuation
go; thousands separators go ("9,474.58" is 9474.58); currency signs and codes go; a scale
after a number is spelled one way ("$1,234.5M" and "1234.5 million" are both
"1234.5 million", which stays different from "1234.5 billion"). Punctuation inside a token
stays (101.8, /notes/a.md, FX-52553, +31), so a look-alike stays a different value.

An answer that names a distractor is wrong, except where the distractor sits inside the
user's own words quoted back with the expected value ("You asked: 'Use bullets, not
paragraphs.'"): the contrast is the user's, not a hedge of the agent's."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from evals.scenarios.base import Probe
from evals.simulated import DONT_KNOW

# The shortest run of words taken as quoting the user rather than sharing a phrase with them.
MIN_QUOTE_WORDS = 3

_ADMISSIONS = ("i don't know", "i do not know", "i'm not sure", "i am not sure")
# A number with thousands separators not inside a longer number: `(?<![\d.,])\d{1,3}` with its
# first digit matched before the look behind, so the engine skips to digits at C speed.
_THOUSANDS = re.compile(r"\d(?<![\d.,]\d)\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d,])")
# A currency sign, or a currency word standing as a word of its own: `[$€£¥]|\b(?:usd|...)\b`
# in two passes (a sign is no word character, so removing signs moves no word boundary), the
# words' opening boundary tested per match (`_currency_word`): a pattern that opens with `\b`
# is tried at every position, one that opens with a letter only where the letter stands.
_CURRENCY_SIGN = re.compile(r"[$€£¥]")
_CURRENCY_WORD = re.compile(r"(?:usd|eur|gbp|jpy|dollars?|euros?|pounds?)\b")
# What the currency passes cannot match without: a text holding none of these is not scanned (a long
# tool output costs ~30 ms a scan), which changes nothing it returns.
_CURRENCY_CUES = ("$", "€", "£", "¥", "usd", "eur", "gbp", "jpy", "dollar", "pound")
# A scale after a number, spelled out: millions, billions, thousands in one pass (their words
# open with different letters, so at most one names the scale after a given digit, and none
# is written out as another's word).
_SCALE = re.compile(r"(\d)\s*(?:(m|mn|mio|mln|millions?)|(b|bn|billions?)|(k|thousands?))\b")
_SCALE_WORDS = (" million", " billion", " thousand")
# Punctuation not inside a token (between two letters or digits) is sentence punctuation;
# `/`, `+`, `#`, `@`, `_` and `%` always belong to the value they touch. The character is
# matched first and its neighbours looked at after (the one before from behind the one
# after it): looking behind at every position first made this pass twice as slow.
_LOOSE_PUNCT = re.compile(r"[^\w\s/+#@%](?:(?![^\W_])|(?<![^\W_].))", re.S)


def normalize(text: str) -> str:
    """The comparable form of an answer or an expected value (see the module doc)."""
    text = unicodedata.normalize("NFKC", text).lower()
    if "," in text:
        text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
    if any(cue in text for cue in _CURRENCY_CUES):
        text = _CURRENCY_SIGN.sub(" ", text)
        text = _CURRENCY_WORD.sub(functools.partial(_currency_word, text), text)
    text = _SCALE.sub(_spelled, text)
    text = _LOOSE_PUNCT.sub(" ", text)
    return " ".join(text.split())


def _spelled(m: re.Match[str]) -> str:
    return m.group(1) + _SCALE_WORDS[(m.lastindex or 2) - 2]


def _currency_word(text: str, m: re.Match[str]) -> str:
    """A currency word goes where it opens a word (`\b` before it: no word character before);
    inside a word (`xusd`) it stays. A rejected match is all letters, so no match that opens
    inside it is lost: one there would have a letter before it."""
    at = m.start()
    if at and (text[at - 1].isalnum() or text[at - 1] == "_"):  # what `\w` matches
        return m.group()
    return " "


def mentions(text: str, value: str) -> bool:
    """Whether normalised `text` names `value` as a whole (41.2 is not in 141.2 nor in
    41.25)."""
    wanted, pattern = _whole(value)
    if pattern is None:
        return False
    # Every match starts where `wanted` stands, so the search starts at its first place (the
    # look-behind still sees the text before it): a long text without it is not scanned.
    at = text.find(wanted)
    return at >= 0 and pattern.search(text, at) is not None


@functools.lru_cache(maxsize=4096)
def _whole(value: str) -> tuple[str, re.Pattern[str] | None]:
    """`value` normalised, and the pattern that finds it as a whole (None when it is empty):
    a probe's value is looked for in every text of its request."""
    wanted = normalize(value)
    if not wanted:
        return wanted, None
    return wanted, re.compile(r"(?<![\w.])" + re.escape(wanted) + r"(?![\w]|\.\d)")


def is_correct(probe: Probe, answer: str, said: Sequence[str] = ()) -> bool:
    """Right when the answer names the expected value and no distractor outside the user's
    own words (`said`: what the user wrote) quoted back with it."""
    text = normalize(answer)
    if not text or not mentions(text, probe.answer):
        return False
    outside = _without_quotes(text, probe.answer, said)
    expected = normalize(probe.answer)
    return not any(mentions(outside, d) for d in probe.distractors if normalize(d) not in expected)


def outcome(
    probe: Probe, answer: str, said: Sequence[str] = (), correct: bool | None = None
) -> str:
    """right, unknown (said nothing, or opened by saying it does not know and named no
    distractor) or wrong (anything else). `correct`: `is_correct`'s verdict on the same
    answer, when the caller has it."""
    if is_correct(probe, answer, said) if correct is None else correct:
        return "right"
    text = normalize(answer)
    admits = text == normalize(DONT_KNOW) or text.startswith(_ADMISSIONS)
    if not text or (admits and not any(mentions(text, d) for d in probe.distractors)):
        return "unknown"
    return "wrong"


def _without_quotes(text: str, expected: str, said: Sequence[str]) -> str:
    """`text` with each longest run of words found verbatim in one of the user's messages
    (at least `MIN_QUOTE_WORDS` long, naming `expected`) cut out."""
    sources = _sources(tuple(said))
    if not sources:
        return text
    words = text.split()
    kept: list[str] = []
    i = 0
    while i < len(words):
        end = i
        while end < len(words) and any(f" {' '.join(words[i : end + 1])} " in s for s in sources):
            end += 1
        run = " ".join(words[i:end])
        if end - i >= MIN_QUOTE_WORDS and mentions(run, expected):
            kept.append("|")  # keeps the text on either side from joining into one value
            i = end
        else:
            kept.append(words[i])
            i += 1
    return " ".join(kept)


@functools.lru_cache(maxsize=16)
def _sources(said: tuple[str, ...]) -> tuple[str, ...]:
    # What the user wrote, normalised once per scenario rather than once per answer scored.
    return tuple(f" {normalize(s)} " for s in said)
