"""`grep`'s scan: every match in any file reachable, with bounded work per call.

Lines are searched one at a time. A line longer than `WINDOW` characters (a minified JSON
result is one line of megabytes) is searched in windows of `WINDOW` characters that overlap by
`OVERLAP`, so no regex attempt sees more than `WINDOW + OVERLAP` characters and the file is
streamed chunk by chunk; a match that reaches the end of a window is searched again in the next
one, so `$`, lookaheads and greedy repeats see the real line end. A match in a line longer than
`LONG_LINE` characters is reported as an excerpt of `CONTEXT` characters either side, with its
position in the line, instead of the line's head.

A regex is tried once per line, which for a file of short lines costs a call per line: where
the pattern allows (no construct that sees past a line's end differently in the whole text:
negative lookarounds, atomic groups, possessive repeats, string anchors, conditionals), a file of
at most `WHOLE_CHARS` characters with short `\n`-ended lines is first searched whole, in
multiline mode, for the next line that can match: a line that matches alone holds a match of
the whole text that starts in it, so the lines skipped hold none, and each line found is then
searched alone exactly as before. A pattern every match of which holds one of a few literal
texts (`needles.py`) needs no regex for that: lines are sought with `str.find`, whatever
constructs the pattern uses, and a line holding no needle is never given to the regex.

Regexes run on the `regex` engine, which takes a timeout: the whole call shares one wall-clock
budget, and running out raises `SearchStopped` with what was found so far still yielded.
Globs (`glob()` and grep's file filter) compile to `regex` patterns matched under the same
kind of budget.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harness.errors import HarnessError
from harness.files.needles import needles
from harness.files.paths import MAX_PATH, FileError, dir_prefix, quoted
from harness.files.stored_file import StoredFile

if TYPE_CHECKING:
    import regex  # loaded by the first search that needs it (~3 MB and 35 ms)

WINDOW = 1 << 16
OVERLAP = 4_096
LONG_LINE = 2_000
CONTEXT = 200
MAX_MATCH_SHOWN = 1_000
MAX_PATTERN_CHARS = 1_000
SEARCH_SECONDS = 10.0
# A glob compiles to a backtracking regex: more wildcards than this could take exponential time.
MAX_GLOB_WILDCARDS = 32
WHOLE_CHARS = 1 << 22
# Constructs under which a line that matches alone might not match inside the whole text.
_LINE_BOUND = ("(?!", "(?<!", "(?>", "(?(", "\\A", "\\Z", "*+", "++", "?+", "}+", "(?-")
# Tried at line starts only: unanchored, it would walk up to LONG_LINE characters from each one.
_LONG = re.compile(rf"^[^\n]{{{LONG_LINE + 1}}}", re.MULTILINE)

Unit = Literal["match", "line", "file"]


class SearchStopped(HarnessError):
    """A search or glob ran out of its time budget; the message tells the model what to do."""


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """One match in a text file; `line_no` counts from 1. `line` is the whole line, or for a
    line over `LONG_LINE` characters the text around the match, which starts at character
    `excerpt_start` of the line. `column` is where the match starts in the line."""

    path: str
    line_no: int
    line: str
    column: int = 0
    excerpt_start: int | None = None


class Deadline:
    """A wall-clock budget shared by every match attempt of one call."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise SearchStopped(self.message())
        return left

    def message(self) -> str:
        return (
            f"search stopped after {self.seconds:g} s: the pattern is too expensive for this "
            "much text. Narrow the pattern (avoid nested repeats such as (a+)+), the path or "
            "the glob"
        )


class Matcher:
    """Finds the next match at or after a position: `str.find` for literal text, the `regex`
    engine under the deadline otherwise."""

    def __init__(self, literal: str | None, pattern: regex.Pattern[str] | None) -> None:
        self.literal = literal
        self.pattern = pattern
        # Texts every match holds one of: a line holding none is not searched.
        self.needles = None if pattern is None else needles(pattern.pattern)
        # The same pattern over a whole text, in multiline mode, when that is sound.
        self.whole = None
        if (
            self.needles is None
            and pattern is not None
            and not any(c in pattern.pattern for c in _LINE_BOUND)
        ):
            import regex

            self.whole = regex.compile(pattern.pattern, pattern.flags | regex.MULTILINE)

    @property
    def skips(self) -> bool:
        """Whether `next_line` can pass over the lines of a whole text that cannot match."""
        return self.needles is not None or self.whole is not None

    def may_match(self, line: str) -> bool:
        """False when `line` holds none of the needles, so the pattern cannot match in it."""
        return self.needles is None or any(n in line for n in self.needles)

    def find(self, text: str, pos: int, deadline: Deadline) -> tuple[int, int] | None:
        if self.literal is not None:
            at = text.find(self.literal, pos)
            return None if at < 0 else (at, at + len(self.literal))
        assert self.pattern is not None
        return _search(self.pattern, text, pos, deadline)

    def next_line(self, text: str, pos: int, deadline: Deadline) -> int | None:
        """A position at or after `pos` in the next line that may match: the nearest needle,
        else where the next match of the whole-text pattern starts."""
        if self.needles is not None:
            deadline.remaining()
            found = [at for n in self.needles if (at := text.find(n, pos)) >= 0]
            return min(found) if found else None
        assert self.whole is not None
        span = _search(self.whole, text, pos, deadline)
        return None if span is None else span[0]


def _search(
    pattern: regex.Pattern[str], text: str, pos: int, deadline: Deadline
) -> tuple[int, int] | None:
    try:
        # concurrent: the GIL is released, so a tool running in a worker thread does not
        # stall the event loop for the length of the budget.
        m = pattern.search(text, pos, concurrent=True, timeout=deadline.remaining())
    except TimeoutError:
        raise SearchStopped(deadline.message()) from None
    return None if m is None else m.span()


def scan(
    files: Iterable[StoredFile], matcher: Matcher, unit: Unit, deadline: Deadline
) -> Iterator[GrepMatch]:
    """Matches in `files` in order: every match (`unit="match"`; a short line counts once), the
    first of each line, or the first of each file."""
    for f in files:
        deadline.remaining()
        if matcher.literal is not None and f.blob_id is None and matcher.literal not in f.chunk(0):
            continue
        whole = _whole_text(f) if matcher.skips else None
        found = _skip_ahead(f.path, whole, matcher, deadline) if whole is not None else None
        for hit in found or _scan_file(f, matcher, unit, deadline):
            yield hit
            if unit == "file":
                break


def _whole_text(f: StoredFile) -> str | None:
    """The file's text when a whole-text search may pick its lines: small, every line `\n`-ended
    (no `\r` that a line drops) and at most `LONG_LINE` characters."""
    if (f.chars if f.blob_id else len(f.chunk(0))) > WHOLE_CHARS:
        return None
    text = "".join(f.text_from(0))
    return None if "\r" in text or _LONG.search(text) else text


def _skip_ahead(path: str, text: str, matcher: Matcher, deadline: Deadline) -> Iterator[GrepMatch]:
    """The first match of each line that matches, a line of at most `LONG_LINE` characters
    being one hit as in `_scan_file`; only the lines the whole-text search points at are
    searched alone."""
    pos, line, counted = 0, 0, 0
    while (at := matcher.next_line(text, pos, deadline)) is not None:
        if at == len(text) and (not text or text.endswith("\n")):
            return  # past the final newline: no line is there
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line += text.count("\n", counted, start)
        counted = start
        span = matcher.find(text[start:end], 0, deadline)
        if span is not None:
            yield _hit(path, line, text[start:end], 0, span[0], span[1], True)
        pos = end + 1
        if pos > len(text):
            return


def _scan_file(
    f: StoredFile, matcher: Matcher, unit: Unit, deadline: Deadline
) -> Iterator[GrepMatch]:
    buf = ""  # the current line's text still needed: lead context plus what is unsearched
    buf_col = 0  # where buf starts in the line
    start = 0  # where the unsearched part starts in buf
    skip_line = False
    for line, col, text, ends in f.fragments(0, 0, WINDOW):
        if skip_line:  # the line already matched: pass over the rest of it
            if ends:
                skip_line, buf, buf_col, start = False, "", 0, 0
            continue
        if ends and col == 0:  # a whole line in one piece: the common case
            if not matcher.may_match(text):
                continue
            one = unit if len(text) > LONG_LINE else "line"
            for hit, _, _ in _matches(f.path, line, text, 0, 0, len(text), True, matcher, one,
                                      deadline):  # fmt: skip
                yield hit
            continue
        buf += text
        if not ends and len(buf) - start < WINDOW + OVERLAP:
            continue
        end = len(buf) if ends else len(buf) - OVERLAP
        hits = _matches(f.path, line, buf, buf_col, start, end, ends, matcher, unit, deadline)
        resume = end
        for hit, deferred, hit_end in hits:
            if deferred:
                resume = hit.column - buf_col
                break
            yield hit
            # The next window starts after this match, never inside it: the matches found are
            # the same non-overlapping ones a search of the whole line finds.
            resume = max(resume, hit_end)
            if unit != "match":
                skip_line = not ends
                break
        if ends:
            buf, buf_col, start = "", 0, 0
        else:
            keep = max(0, resume - CONTEXT)
            buf, buf_col, start = buf[keep:], buf_col + keep, resume - keep


def _matches(
    path: str,
    line: int,
    buf: str,
    buf_col: int,
    start: int,
    end: int,
    final: bool,
    matcher: Matcher,
    unit: Unit,
    deadline: Deadline,
) -> Iterator[tuple[GrepMatch, bool, int]]:
    """Matches starting in `buf[start:end]`, each with where in `buf` it ends and whether it
    must be searched again in the next window: it reaches the end of `buf`, which is not the
    end of the line. A match that fills the whole window is kept as found, so the scan always
    moves on."""
    pos = start
    while pos <= end:
        span = matcher.find(buf, pos, deadline)
        if span is None or span[0] >= end and not (final and span[0] == end == len(buf)):
            break
        s, e = span
        deferred = not final and e == len(buf) and s > start
        yield _hit(path, line, buf, buf_col, s, e, final), deferred, e
        if deferred or unit != "match":
            return
        pos = e if e > s else s + 1


def _hit(path: str, line: int, buf: str, buf_col: int, s: int, e: int, final: bool) -> GrepMatch:
    if final and buf_col == 0 and len(buf) <= LONG_LINE:
        return GrepMatch(path, line + 1, buf, s)
    lo = max(0, s - CONTEXT)
    hi = min(len(buf), min(e, s + MAX_MATCH_SHOWN) + CONTEXT)
    return GrepMatch(path, line + 1, buf[lo:hi], buf_col + s, buf_col + lo)


def anchor(pattern: str, base: str) -> str:
    return pattern if pattern.startswith("/") else dir_prefix(base) + pattern


def file_filter(glob: str | None, base: str, deadline: Deadline) -> Callable[[str], bool] | None:
    if not glob:
        return None
    if "/" in glob:
        whole = glob_regex(anchor(glob, base))
        return lambda p: fullmatch(whole, p, deadline)
    name = glob_regex(glob)
    return lambda p: fullmatch(name, p.rpartition("/")[2], deadline)


def fullmatch(pattern: regex.Pattern[str], path: str, deadline: Deadline) -> bool:
    try:
        return pattern.fullmatch(path, concurrent=True, timeout=deadline.remaining()) is not None
    except TimeoutError:
        raise SearchStopped(deadline.message()) from None


def compile_regex(pattern: str) -> regex.Pattern[str]:
    """`pattern` for the `regex` engine (it takes a timeout), with `re`'s error messages:
    the model was told to write a Python regular expression."""
    import regex

    try:
        re.compile(pattern)
        return regex.compile(pattern)
    except (re.error, regex.error) as exc:
        raise FileError(
            f"invalid regex {quoted(pattern)}: {exc}. Set regex=false to search for "
            "the literal text"
        ) from None


def glob_regex(pattern: str) -> regex.Pattern[str]:
    if len(pattern) > MAX_PATH:
        raise FileError(f"glob pattern is {len(pattern)} characters long; the limit is {MAX_PATH}")
    # Repeated stars add nothing but backtracking: "***" is "**", "**/**/" is "**/".
    pattern = re.sub(r"\*{3,}", "**", pattern)
    pattern = re.sub(r"(?:\*\*/){2,}", "**/", pattern)
    wildcards = len(re.findall(r"\*+|\?|\[|\{", pattern))
    if wildcards > MAX_GLOB_WILDCARDS:
        raise FileError(
            f"glob pattern has {wildcards} wildcards; the limit is {MAX_GLOB_WILDCARDS}. "
            "Use fewer wildcards, or grep with a glob filter"
        )
    import regex

    return regex.compile(_glob_to_regex(pattern))


def _glob_to_regex(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body[0] in "!^"
            chars = "".join(c if c == "-" else re.escape(c) for c in body[negate:])
            out.append(f"[^/{chars}]" if negate else f"[{chars}]")
            i = end + 1
        elif ch == "{" and (end := pattern.find("}", i)) != -1:
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_to_regex(o) for o in options) + ")")
            i = end + 1
        else:
            out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
            i += 1
    return "".join(out)


__all__ = [
    "CONTEXT",
    "Deadline",
    "GrepMatch",
    "LONG_LINE",
    "MAX_PATTERN_CHARS",
    "Matcher",
    "SEARCH_SECONDS",
    "SearchStopped",
    "anchor",
    "compile_regex",
    "file_filter",
    "fullmatch",
    "glob_regex",
    "scan",
]
