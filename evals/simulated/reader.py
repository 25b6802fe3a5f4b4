"""How the simulated model reads a request, and how it fails.

The `ideal` reader finds every fact in view (the newest occurrence of its cue). The default
`fallible` reader fails the way models fail, for reasons a context strategy controls; every
parameter is tied to a published figure (evals/README.md, "The reader"):

- attention: a fact in view is missed with a chance that grows with the request's length
  (NoLiMa, GPT-4o, normalised by its 99.3% base: 98.1% at 1k tokens ... 69.7% at 32k) and is
  worst in the middle of the request (Liu et al., "Lost in the Middle": misses in the middle
  are about 1.9x those at the edges). The newest ~2k tokens are read reliably.
- look-alikes: a reader that misses the target returns a look-alike in view (same metric for
  another firm or quarter, another order's refund) with chance `1 - 0.5^k` for k distinct
  look-alikes (Chroma, "Context Rot": one distractor hurts, four hurt more). Confidently
  wrong is scored as wrong, apart from "I don't know".
- retrieval (evals/simulated/queries.py): queries are built from the question's own words
  (`query_terms`), and grep returns at most `grep_results` lines, so a vague query can miss.
  With no saved copy to search, or none that held the answer, the reader runs again an
  earlier lookup it can see (`lookups`): the call whose arguments share most with the
  question, as real agents re-open a page or re-run a query they made rather than guess. It
  re-runs lookups only (tools named for reading, searching, fetching), never the harness's
  own tools or actions with effects. A re-run result is read with misses wherever it lands
  (not as one of the newest turns), and each question gets at most `max_rounds` retrieval
  turns, greps and re-runs alike.

Every draw is a hash of (seed, what is read, where): the same seed gives the same misses.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import regex

from evals.errors import CueTooSlowError
from evals.simulated.line_bound import line_bound, line_matches
from evals.simulated.literal_head import literal_head
from evals.simulated.plan import Cue
from harness.files.needles import needles

POINTER = re.compile(r"(/(?:large_tool_results|conversation_history)/[A-Za-z0-9._\-/]+)")
SKILL_PATH = re.compile(r"(/skills/[A-Za-z0-9._\-/]+/SKILL\.md)")
# One skills-menu item: `- **name**: description`, then the lines up to the next item.
SKILL_ENTRY = re.compile(
    r"^- \*\*(?P<name>[^*\n]+)\*\*(?::[ \t]*(?P<description>[^\n]*))?"
    r"(?P<rest>(?:\n(?!- \*\*).*)*)",
    re.MULTILINE,
)
_WORD = re.compile(r"[A-Za-z0-9]+")
PREFERENCE = re.compile(
    r"(?i)\b(use (?:bullets|bullet points|paragraphs|tables)(?:, not [a-z ]+)?)"
)
LINE_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)?\t")
# Cues run against every request the simulated model reads; a legitimate one takes
# microseconds per text, so this only ever stops a pathological regex.
CUE_SECONDS = 2.0
DONT_KNOW = "I don't know: nothing in my context or in the files it points to says."

# NoLiMa (Modarressi et al., 2025), GPT-4o without lexical overlap: (tokens, accuracy / base).
NOLIMA_GPT4O = ((1_000, 98.1), (2_000, 98.0), (4_000, 95.7), (8_000, 89.2), (16_000, 81.6),
                (32_000, 69.7))  # fmt: skip
NOLIMA_BASE = 99.3


@dataclass(frozen=True)
class Attention:
    """The chance to notice a fact in view, by request length and the fact's depth.

    `keep(tokens)`: NoLiMa's GPT-4o curve, normalised by its base score, interpolated in
    log2(tokens); past 32k, where nothing was measured, it stays at the 32k value (no
    invented decay).
    `miss(tokens, depth)`: `(1 - keep) * shape(depth)`, where `shape` is a parabola with mean
    1 over the depth and `middle_ratio` times higher in the middle than at the edges."""

    points: tuple[tuple[int, float], ...] = NOLIMA_GPT4O
    base: float = NOLIMA_BASE
    middle_ratio: float = 1.9

    def keep(self, tokens: int) -> float:
        pts = [(math.log2(t), a / self.base) for t, a in self.points]
        x = math.log2(max(tokens, 1))
        if x <= pts[0][0]:
            return min(1.0, pts[0][1])
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            if x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return pts[-1][1]

    def miss(self, tokens: int, depth: float) -> float:
        # shape(d) = a + b * 4d(1-d): mean a + 2b/3 = 1, (a + b) / a = middle_ratio.
        a = 1.0 / (1.0 + 2.0 * (self.middle_ratio - 1.0) / 3.0)
        b = a * (self.middle_ratio - 1.0)
        d = min(max(depth, 0.0), 1.0)
        return min(1.0, (1.0 - self.keep(tokens)) * (a + b * 4.0 * d * (1.0 - d)))


@dataclass(frozen=True)
class ReaderConfig:
    """What kind of reader the simulated model is. `name` labels every result.

    attention: None for a reader that never misses what is in view.
    reliable_chars: the newest text read without misses, at least (~2k tokens, where NoLiMa
        is ~99%); the previous and the current turn are read without misses too.
    confusion: chance that a reader who missed the target answers with one look-alike in
        view; with k distinct look-alikes, `1 - (1 - confusion)^k`.
    max_retrievals: retrieval calls allowed per question (greps of saved files and re-run
        lookups alike); grep_results: lines one grep shows.
    max_rounds: retrieval turns allowed per question: a round of greps, a re-run lookup
        and the grep of its saved copy cost one each (a turn is a turn, whatever it calls).
    """

    name: str = "fallible"
    attention: Attention | None = Attention()
    reliable_chars: int = 8_000
    confusion: float = 0.5
    max_retrievals: int = 3
    max_rounds: int = 2
    grep_results: int = 40


FALLIBLE = ReaderConfig()
IDEAL = ReaderConfig(name="ideal", attention=None, confusion=0.0)
READERS = {"fallible": FALLIBLE, "ideal": IDEAL}
DEFAULT_READER = "fallible"


def get_reader(name: str) -> ReaderConfig:
    if name not in READERS:
        raise ValueError(f"unknown reader {name!r}; choose one of {', '.join(READERS)}")
    return READERS[name]


def draw(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by `parts`: the same seed gives the same misses."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Reading:
    """What the reader made of a request for one cue. `status`: seen (the target), missed (in
    view but not noticed), confused (a look-alike returned instead), absent (not in view)."""

    value: str | None
    status: str


@dataclass(frozen=True)
class RequestReader:
    """A reader over one request: `texts` oldest first, `tokens` the request's length;
    `recent` the index of the first text of the newest turns (read without misses);
    `unreliable` the indexes of texts read with misses wherever they stand: the results of
    re-run lookups, which are a document read again in a long request, not the user's
    latest words (else clearing a result and re-running it would read better than keeping
    it)."""

    config: ReaderConfig
    texts: Sequence[str]
    tokens: int
    seed: int
    recent: int | None = None
    unreliable: frozenset[int] = frozenset()

    def read(self, cue: Cue, key: str, found: Sequence[tuple[int, str]] = ()) -> Reading:
        """The fact `cue` recognises, as this reader sees it; `key` names the draw. `found`:
        (offset in the joined texts, value) of the fact where its role shows it, the newest
        first (evals/simulated/sightings.py); when given, the cue is not needed."""
        hits = list(found) or occurrences(cue.patterns, self.texts)
        if not hits:
            return self._confuse(cue, key, "absent")
        total = sum(len(t) for t in self.texts) or 1
        recent = total - self.config.reliable_chars
        if self.recent is not None:
            recent = min(recent, sum(len(t) for t in self.texts[: self.recent]))
        starts = list(itertools.accumulate((len(t) for t in self.texts), initial=0))
        for k, (offset, value) in enumerate(hits):
            text = bisect.bisect_right(starts, offset) - 1
            reliable = offset >= recent and text not in self.unreliable
            if self._noticed(offset, total, reliable, f"{key}:{k}"):
                return Reading(value, "seen")
        return self._confuse(cue, key, "missed")

    def _noticed(self, offset: int, total: int, reliable: bool, key: str) -> bool:
        attention = self.config.attention
        if attention is None or reliable:
            return True
        return draw(self.seed, "attend", key) >= attention.miss(self.tokens, offset / total)

    def _confuse(self, cue: Cue, key: str, status: str) -> Reading:
        if not self.config.confusion or not cue.lookalikes:
            return Reading(None, status)
        seen = list(dict.fromkeys(v for _, v in occurrences(cue.lookalikes, self.texts)))
        if not seen:
            return Reading(None, status)
        chance = 1.0 - (1.0 - self.config.confusion) ** len(seen)
        if draw(self.seed, "confuse", key) >= chance:
            return Reading(None, status)
        pick = int(draw(self.seed, "pick", key) * len(seen))
        return Reading(seen[pick], "confused")


_QUOTED = re.compile(r"^/(?:conversation_history|large_tool_results)/\S+?:\d+:")


def occurrences(patterns: Sequence[str], texts: Sequence[str]) -> list[tuple[int, str]]:
    """(offset in the joined texts, value) of every match, the newest first; lines quoted
    from saved files by a search come after the live context, since they are old text
    however recently they were fetched."""
    found: list[tuple[bool, int, str]] = []
    start = 0
    known = _HITS.get  # most (pattern, text) were read at an earlier step: looked up inline
    for text in texts:
        for pattern in patterns:
            hits = known((pattern, text))
            if hits is None:
                hits = _hits(pattern, text)
            if hits:  # mostly none: a cue's words stand in few of a window's texts
                found.extend((quoted, start + at, value) for quoted, at, value in hits)
        start += len(text)
    return [(offset, value) for _, offset, value in sorted(found, key=lambda h: (h[0], -h[1]))]


# (pattern, text) -> its hits, kept for texts of up to HITS_CHARS characters in all, oldest out
# first: a window's texts are read again at every step and every probe of a run.
HITS_CHARS = 4_000_000
_HITS: OrderedDict[tuple[str, str], list[tuple[bool, int, str]]] = OrderedDict()
_hits_chars = 0


def _hits(pattern: str, text: str) -> list[tuple[bool, int, str]]:
    """(quoted from a saved file, offset, value) of each match of `pattern` in `text`."""
    global _hits_chars
    key = (pattern, text)
    found = _HITS.get(key)
    if found is None:
        found = []
        for at, value in cue_hits(pattern, text):
            line = text.rfind("\n", 0, at) + 1
            quoted = _QUOTED.match(text, line) is not None
            found.append((quoted, at, value.strip()))
        _HITS[key] = found
        _hits_chars += len(text)
        while _hits_chars > HITS_CHARS and _HITS:
            (_, old), _ = _HITS.popitem(last=False)
            _hits_chars -= len(old)
    return found


def find(cue: Cue, texts: Sequence[str]) -> str | None:
    """The value of the newest occurrence of `cue` in `texts` (the ideal reader)."""
    hits = occurrences(cue.patterns, texts)
    return hits[0][1] if hits else None


def cue_hits(pattern: str, text: str) -> list[tuple[int, str]]:
    """(start, group 1) of each match `cue_matches` finds. A cue that begins with a literal
    (evals/simulated/literal_head.py) is matched as the literal's occurrences, left to right,
    each followed by a match of the rest, searched on past it: only the rest is compiled, and
    it is shared by every cue of its template."""
    head = literal_head(pattern)
    if head is None:
        return [(m.start(), m.group(1)) for m in cue_matches(pattern, text)]
    literal, rest = head
    at = text.find(literal)
    if at < 0:
        return []  # the literal is in every match
    match = cue_regex(rest).match
    deadline = time.monotonic() + CUE_SECONDS
    found = []
    while at >= 0:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            m = match(text, at + len(literal), concurrent=True, timeout=left)
        except TimeoutError:
            raise _too_slow(pattern, text) from None
        if m is None:
            at = text.find(literal, at + 1)
        else:
            found.append((at, m.group(1)))
            at = text.find(literal, m.end())
    return found


def cue_matches(pattern: str, text: str) -> list[regex.Match[str]]:
    """Every match of the cue regex `pattern` in `text`, found by the `regex` engine (the one
    grep uses) within `CUE_SECONDS`. Raises `CueTooSlowError` naming the pattern past it. A
    text that holds none of the literal texts one of which every match holds (grep's needles,
    harness/files/needles.py) is not searched: it has no match, however long a search would
    take to say so."""
    found = _needles(pattern)
    if found is not None and not any(n in text for n in found):
        return []
    try:
        if found is not None and line_bound(pattern):
            return line_matches(cue_regex(pattern), text, found, CUE_SECONDS)
        # concurrent: the GIL is released, so cells replaying in threads go on meanwhile.
        return list(cue_regex(pattern).finditer(text, concurrent=True, timeout=CUE_SECONDS))
    except TimeoutError:
        raise _too_slow(pattern, text) from None


def _too_slow(pattern: str, text: str) -> CueTooSlowError:
    return CueTooSlowError(
        f"cue {pattern!r} took over {CUE_SECONDS:g} s on one text ({len(text):,} "
        "characters), the limit for a cue: avoid nested repeats such as (a|aa)+"
    )


@functools.lru_cache(maxsize=8192)
def _needles(pattern: str) -> tuple[str, ...] | None:
    return needles(pattern)


def compile_cue(pattern: str) -> regex.Pattern[str]:
    """What `cue_hits` compiles for the cue `pattern` (the rest after its literal head, or the
    whole), once per process; raises `regex.error` when it does not compile. A check of a
    scenario's cues calls this, so that checking spares the reader its compile: a head is
    plain text, so the cue compiles exactly when its rest does."""
    head = literal_head(pattern)
    return cue_regex(pattern if head is None else head[1])


@functools.lru_cache(maxsize=4096)
def cue_regex(pattern: str) -> regex.Pattern[str]:
    """The regex `pattern` compiled as the reader runs it, once per process: `regex` compiles
    slowly (~1 ms a cue)."""
    return regex.compile(pattern, regex.MULTILINE)


def strip_line_numbers(text: str) -> str:
    return "\n".join(LINE_NUMBER.sub("", line) for line in text.splitlines())


def preference(texts: Sequence[str]) -> str | None:
    """The latest report-format preference stated in `texts`."""
    for text in reversed(texts):
        found = PREFERENCE.findall(text)
        if found:
            return str(found[-1]).rstrip(" .").lower()
    return None


def skill_path(system_prompt: str, topic: str) -> str | None:
    """The SKILL.md of the first menu entry whose description names every word of `topic`.

    A model picks a skill by what its description says it is for; a name is a label, so an
    entry that shows no description (or the name alone matching) is not chosen. Entries are
    the skills menu's `- **name**: description` items, each followed by its path."""
    words = [w.lower() for w in _WORD.findall(topic)]
    for entry in SKILL_ENTRY.finditer(system_prompt):
        described = {w.lower() for w in _WORD.findall(entry.group("description") or "")}
        path = SKILL_PATH.search(entry.group("rest"))
        # A word counts in its plural too ("reports" is about a report).
        if path and words and all(w in described or f"{w}s" in described for w in words):
            return path.group(1)
    return None


def template_sections(texts: Sequence[str]) -> list[str]:
    """Section names from a template read into the context: the bullet list that follows a
    line mentioning "sections" (line numbers from `read_file` are ignored)."""
    for text in reversed(texts):
        if "sections" not in text.lower():
            continue
        lines = strip_line_numbers(text).splitlines()
        for i, line in enumerate(lines):
            if "sections" in line.lower() and line.lstrip().startswith("#"):
                out = []
                for nxt in lines[i + 1 :]:
                    s = nxt.strip()
                    if s.startswith("- "):
                        out.append(s[2:].strip())
                    elif out or (s and not s.startswith("-")):
                        break
                if out:
                    return out
    return []
