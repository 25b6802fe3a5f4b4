"""Cues for recorded runs, built from the words around a value, never from the value itself.

A fact the agent wrote down (a figure, a name, a reason) is found again in what it had read:
each place it appeared gives a pattern, the label before it (or, at the start of a line, the
words after it) around a capture group of the value's shape. Where the label, with a name in
it swapped for another, shows other values (the export's look-alike firms), those values are
the fact's distractors and that pattern its look-alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, NamedTuple

from evals.simulated.plan import Cue
from evals.sources.shelf import Source, SourceKind, containing, holding

NUMBER = r"-?[0-9][0-9,]*(?:\.[0-9]+)?"
PATH = r"/[\w./\-]*[\w\-]"
WORD = r"[^\s.,;:()]+"
# A run of capitalised words with a lowercase letter somewhere: a name ("Fjordline Shipping").
NAME = re.compile(r"\b[A-Z][\w&'\-]*(?: [A-Z][\w&'\-]*)*")
LABEL_CHARS = 80
MAX_PATTERNS = 6
MAX_LOOKALIKES = 8
# A long trace asks about tens of thousands of values and labels, each several times around
# its use: more than `re`'s own cache of 512 holds, and compiling again was most of an import.
COMPILED = 8192


@dataclass(frozen=True)
class Found:
    """A cue for a value, the wrong values its look-alikes show, and the kinds of text it
    appeared in."""

    cue: Cue
    distractors: tuple[str, ...]
    kinds: tuple[SourceKind, ...]
    unique: bool = True  # some pattern shows this value and no other


def shape(value: str) -> str:
    """A regex for values of `value`'s form: a number, a path, one token of the characters it
    is made of, or as many words."""
    if re.fullmatch(NUMBER, value):
        return NUMBER
    if value.startswith("/") and re.fullmatch(PATH, value):
        return PATH
    if re.fullmatch(r"[#@$]?\w[\w.\-/#@$+]*", value) and value[-1].isalnum():
        # An id, a file name, a date (`#W2611340`, `src/parser.py`, `U-7731`): what it is made
        # of, ending on a letter or digit, so neither the quote of a JSON string nor the
        # sentence's full stop or question mark is taken with it.
        extra = "".join(sorted({re.escape(c) for c in value if not (c.isalnum() or c == "_")}))
        return rf"[\w{extra}]*[^\W_]" if extra else r"\w*[^\W_]"
    words = value.split()
    word = WORD if all(re.fullmatch(WORD, w) for w in words) else r"\S+"
    return word + "".join(rf" {word}" for _ in words[1:])


def spans(value: str, text: str, first: bool = False) -> list[int]:
    """Where `value` stands as a whole token in `text` (not inside a longer number or word):
    what `bound(value)` finds, found with `str.find` (a regex compiled per value was a third
    of a long trace's walk; tests/evals/sources/test_trace_import_linear.py holds them equal).
    `first`: only the first place, all that whether the value stands at all needs."""
    if not value:
        return [m.start() for m in bound(value).finditer(text)][: 1 if first else None]
    # A slash ends a number (the id in `/orders/48213`, the text of `sed 's/limit = 35507/'`)
    # but not a name: "reports" in src/reports/x.py is part of the path.
    before = ".-" if value.isdigit() else ".-/"
    after = "-" if value.isdigit() else "-/"
    out: list[int] = []
    start, n, end_of = text.find(value), len(value), len(text)
    while start >= 0:
        end = start + n
        prev = text[start - 1] if start else ""
        if prev and (prev.isalnum() or prev == "_" or prev in before):
            start = text.find(value, start + 1)
            continue
        if end < end_of:
            c = text[end]
            if (
                c.isalnum()
                or c == "_"
                or c in after
                or (
                    c == "."
                    and end + 1 < end_of
                    and (text[end + 1].isalnum() or text[end + 1] == "_")
                )
            ):
                start = text.find(value, start + 1)
                continue
        out.append(start)
        if first:
            break
        start = text.find(value, end)
    return out


def bound(value: str) -> re.Pattern[str]:
    """The regex `spans` answers for: `value` with no word character, `.`, `-` (or, but for a
    number, `/`) before it, and none of those but a `.` ending a sentence after it."""
    slash = "" if value.isdigit() else "/"
    return re.compile(rf"(?<![\w.\-{slash}]){re.escape(value)}(?![\w\-{slash}]|\.\w)")


_compiled = lru_cache(maxsize=COMPILED)(re.compile)


class Label(NamedTuple):
    """A pattern, the label before the value ("" when the words after it were used), and the
    literal text any match contains (to skip texts without it before running the regex)."""

    pattern: str
    label: str
    anchor: str


def label_pattern(value: str, text: str, start: int) -> Label | None:
    """The pattern the words around `text[start:]` (which holds `value`) make, or None when
    the line gives too few words to tell it from anything else."""
    line_start = text.rfind("\n", 0, start) + 1
    begin = max(line_start, start - LABEL_CHARS)
    if begin > line_start:
        space = text.find(" ", begin, start)
        begin = space + 1 if space >= 0 else begin
    label = text[begin:start]
    group = f"({shape(value)})"
    if len(label.strip()) >= 6:
        return Label(re.escape(label) + group, label, label)
    end = start + len(value)
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    after = text[end : min(line_end, end + LABEL_CHARS // 2)]
    cut = after.rfind(" ")
    after = after[:cut] if cut > 8 else after
    return Label(group + re.escape(after), "", after) if len(after.strip()) >= 6 else None


def lookalike_pattern(pattern: str, label: str) -> Label | None:
    """`pattern` with the last name in its label swapped for any other name, or None when the
    label names nothing (or the name ends it: nothing would bound the swap)."""
    names = [m for m in NAME.finditer(label) if any(c.islower() for c in m.group())]
    if not names:
        return None
    m = names[-1]
    after = label[m.end() :]
    if not after:
        return None
    guard = re.escape(m.group() + after[0])
    swapped = rf"(?!{guard})[^\n,.;:]{{1,40}}?"
    head = re.escape(label[: m.start()])
    anchor = max(label[: m.start()], after, key=len)
    return Label(
        head + swapped + re.escape(after) + pattern[len(re.escape(label)) :], label, anchor
    )


def find_cue(
    value: str, sources: Sequence[Source], context: str = "", *,
    distractors: Literal["all", "unique", "none"] = "all",
) -> Found | None:  # fmt: skip
    """A cue for `value` from every place `sources` show it; None when none shows it with
    enough words around it. With `context` (the words around the value where it was used),
    a tool result counts only where its label shares the most words with it: a figure that
    also turns up by chance in an unrelated row is not that row's figure. `distractors`
    says when to list them: always, only for a unique cue, or never (for callers that do
    not read them: in a long trace a label like `record ` shows every record, and listing
    them at each step was quadratic)."""
    patterns: list[str] = []
    lookalikes: list[str] = []
    anchors: dict[str, str] = {}
    labels: list[str] = []
    kinds: list[SourceKind] = []
    for source in holding(sources, value):
        for start in spans(value, source.text):
            made = label_pattern(value, source.text, start)
            if made is None or made.pattern in patterns:
                continue
            pattern, label = made.pattern, made.label
            if _first_value(pattern, source.text, start) != value:
                continue
            anchors[pattern] = made.anchor
            patterns.append(pattern)
            kinds.append(source.kind)
            labels.append(label)
            if label:
                look = lookalike_pattern(pattern, label)
                if look is not None and look.pattern not in lookalikes:
                    lookalikes.append(look.pattern)
                    anchors[look.pattern] = look.anchor
    if not patterns:
        return None
    if context:
        keep = _closest(labels, kinds, context)
        patterns, kinds, labels = ([xs[i] for i in keep] for xs in (patterns, kinds, labels))  # type: ignore[assignment]
    # A label that also shows other values ("file_path: ") cannot tell the fact apart: it is
    # kept only when nothing better is found, and its other values count as distractors.
    ambiguous = {p for p in patterns if _values([p], sources, anchors, value, 1)}
    unique = len(ambiguous) < len(patterns)
    if unique:
        keep = [i for i, p in enumerate(patterns) if p not in ambiguous]
        patterns = [patterns[i] for i in keep]
        kinds = [kinds[i] for i in keep]
    patterns = patterns[-MAX_PATTERNS:]  # the newest forms: the ones a replay meets last
    # A look-alike showing many values swapped something generic (a sentence's first word),
    # not a name: it would make every name in the coverage a distractor.
    lookalikes = [
        p for p in lookalikes
        if len(_values([p], sources, anchors, value, MAX_LOOKALIKES + 1)) <= MAX_LOOKALIKES
    ][-MAX_PATTERNS:]  # fmt: skip
    wanted = distractors == "all" or distractors == "unique" and unique
    wrong = _values([*patterns, *ambiguous, *lookalikes], sources, anchors, value) \
        if wanted else set()  # fmt: skip
    return Found(
        Cue(tuple(patterns), tuple(lookalikes)),
        tuple(sorted(wrong)),
        tuple(dict.fromkeys(kinds)),
        unique,
    )


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if len(w) > 1}


def _closest(labels: list[str], kinds: list[SourceKind], context: str) -> list[int]:
    """Indexes to keep: every non-tool form, and the tool forms whose label shares the most
    words with `context` (all of them when none shares any)."""
    wanted = words(context)
    overlap = [
        len(words(label) & wanted) if k == "tool" else -1
        for label, k in zip(labels, kinds, strict=True)
    ]
    best = max(overlap)
    return [i for i, n in enumerate(overlap) if n < 0 or best <= 0 or n == best]


def _first_value(pattern: str, text: str, start: int) -> str | None:
    line_start = text.rfind("\n", 0, start) + 1
    m = _compiled(pattern).search(text, line_start)
    return m.group(1).strip() if m else None


def _values(
    patterns: Sequence[str],
    sources: Sequence[Source],
    anchors: dict[str, str],
    but: str,
    enough: int | None = None,
) -> set[str]:
    """Every value but `but` the patterns show in `sources` (the first `enough` found, when
    that is all the caller asks). A pattern matches within one line, so only the lines
    holding its anchor are searched (a whole export per pattern took seconds)."""
    found: set[str] = set()
    for pattern in patterns:
        compiled = _compiled(pattern)
        anchor = anchors.get(pattern, "")
        for source in containing(sources, anchor):
            for line in _lines_with(source.text, anchor):
                found.update(m.group(1).strip() for m in compiled.finditer(line))
            found.discard(but)
            if enough is not None and len(found) >= enough:
                return found
    return found


def _lines_with(text: str, anchor: str) -> list[str]:
    if not anchor:
        return text.splitlines()
    lines: dict[int, str] = {}
    at = text.find(anchor)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at + len(anchor))
        lines.setdefault(start, text[start : len(text) if end < 0 else end])
        at = text.find(anchor, at + 1)
    return list(lines.values())
