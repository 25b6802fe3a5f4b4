"""A trace file read as JSON records without stopping at a bad one: a JSON document, or JSONL
one record a line, read line by line; a damaged document salvaged where it can be, and each
value's line found so a skipped record is named by file and line. A JSONL line that does not
parse is a damaged line: skipped, counted per file in a summary (`damage_by_file`), and fatal
only to a file of one conversation most of whose lines are damaged (`refuse_damaged`)."""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.sources.trace import (
    Skipped,
    Where,
)


def check_text(path: Path, head: bytes) -> None:
    """Refuses a file whose head is not text."""
    if b"\x00" in head:
        raise TraceFormatError(f"{path}: a binary file (NUL bytes), not a trace")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the head
            raise TraceFormatError(
                f"{path}: not UTF-8 text (byte {exc.start}), not a trace"
            ) from None


@dataclass
class Record:
    """One JSON value of a file and where it starts; for a document of many lines, its text,
    so `where_at` can name the line of any value inside it."""

    value: Any
    where: Where
    text: str | None = None
    _lines: dict[tuple[str | int, ...], int] | None = None

    def where_at(self, *path: str | int) -> Where:
        """Where the object or array at `path` (keys and indexes) inside the value starts."""
        if self.text is None:
            return self.where
        if self._lines is None:
            self._lines = value_lines(self.text)
        return Where(self.where.file, self._lines.get(path, self.where.line))


def read_records(path: Path, skipped: list[Skipped]) -> Generator[Record]:
    """The JSON values of `path`: the one document of a JSON file, or each line of a JSONL
    file (read a line at a time, so a large session never sits in memory as text). A line
    that is not JSON goes to `skipped`; a truncated document yields what it held up to the
    cut. Raises `TraceFormatError` when nothing in the file is JSON."""
    with open(path, "rb") as f:
        check_text(path, f.read(4096))
    file = str(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        first_line, first = _first_value(f)
        if first is _TOO_LONG:  # only JSONL has lines that long worth reading past
            skipped.append(_too_long(file, first_line))
            yield from _lines(f, _next_line(f), first_line + 1, file, skipped)
            return
        if first is not _NOTHING:
            rest = _next_line(f)
            while isinstance(rest, str) and rest and not rest.strip():
                rest = _next_line(f)
            if not rest:  # one value on one line: a JSON document
                yield Record(first, Where(file, first_line))
                return
            yield Record(first, Where(file, first_line))
            yield from _lines(f, rest, first_line + 1, file, skipped)
            return
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise TraceFormatError(
            f"{path}: a JSON document of {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,} a "
            "document may have (a JSONL file is read a line at a time, at any size)"
        )
    text = path.read_text(encoding="utf-8", errors="replace").lstrip("\ufeff")
    try:
        yield Record(json.loads(text), Where(file, 1), text)
        return
    except RecursionError:
        raise TraceFormatError(f"{path}: line 1: JSON nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        error = exc
    if _looks_like_jsonl(text):
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from _lines(f, _next_line(f), 1, file, skipped)
        return
    kept = salvage(text)
    if kept is None:
        raise TraceFormatError(
            f"{path}: not JSON ({error.msg} at line {error.lineno}) and no line of it is"
        )
    value, line = kept
    skipped.append(Skipped(Where(file, line), "the file is cut off here: kept what came before"))
    yield Record(value, Where(file, 1), text)


_NOTHING = object()
_TOO_LONG = object()
# A record longer than this could never replay (`ctxlab eval` refuses scenario files over
# 32 MiB), and reading it whole would cost memory in proportion: it is skipped, read past in
# chunks of a megabyte.
MAX_LINE_CHARS = 32 * 1024 * 1024
# A JSON document (not JSONL) is parsed whole, so its size bounds the memory an import takes.
MAX_DOCUMENT_BYTES = 512 * 1024 * 1024


def _next_line(f: Any) -> Any:
    """The next line of `f` ("" at the end), or `_TOO_LONG` for a line over the cap, which
    is read past without being held."""
    line = f.readline(MAX_LINE_CHARS + 1)
    if len(line) <= MAX_LINE_CHARS or line.endswith("\n"):
        return line
    while True:
        chunk = f.readline(1 << 20)
        if not chunk or chunk.endswith("\n"):
            return _TOO_LONG


def _too_long(file: str, number: int) -> Skipped:
    return Skipped(Where(file, number), f"a line over {MAX_LINE_CHARS:,} characters: skipped")


def _first_value(f: Any) -> tuple[int, Any]:
    """The first non-blank line of `f` as a JSON value (or `_NOTHING`, or `_TOO_LONG`), and
    its number."""
    number = 0
    while True:
        line = _next_line(f)
        number += 1
        if line is _TOO_LONG:
            return number, _TOO_LONG
        if not line:
            return number, _NOTHING
        if line.strip():
            try:
                return number, json.loads(line.lstrip("\ufeff"))
            except (json.JSONDecodeError, RecursionError):
                return number, _NOTHING


def _lines(
    f: Any, pending: Any, number: int, file: str, skipped: list[Skipped]
) -> Iterator[Record]:
    """Each line of `f` (after `pending`, line `number`) as a record; bad lines skipped."""
    line = pending
    while True:
        if line is _TOO_LONG:
            skipped.append(_too_long(file, number))
        elif not line:
            return
        elif line.strip():
            try:
                yield Record(json.loads(line), Where(file, number))
            except RecursionError:
                skipped.append(Skipped(Where(file, number), "JSON nested too deeply to read"))
            except json.JSONDecodeError as exc:
                skipped.append(_damaged(Where(file, number), line, exc))
        line = _next_line(f)
        number += 1


# A line of a JSONL file that does not parse (cut short, a redaction pasted into its JSON): its
# skip reason starts so, and `damaged_lines` counts them by it.
DAMAGED = "damaged line"


def _damaged(where: Where, line: str, exc: json.JSONDecodeError) -> Skipped:
    how = "cut off" if exc.pos >= len(line.rstrip()) else "not JSON"
    return Skipped(where, f"{DAMAGED}, {how}: {exc.msg.removesuffix(' at')} at column {exc.colno}")


def is_damaged(skip: Skipped) -> bool:
    """True for the skip of a JSONL line that did not parse."""
    return skip.reason.startswith(DAMAGED)


def _first(skip: Skipped) -> str:
    return f"the first at line {skip.where.line}, {skip.reason.removeprefix(DAMAGED + ', ')}"


def refuse_damaged(path: Path, records: int, skipped: list[Skipped]) -> None:
    """Raises `TraceFormatError` when the damaged lines of `path` (in `skipped`) outnumber the
    `records` read from it: a file whose lines are one conversation cannot be rebuilt from a
    minority of them. Fewer, and each is skipped and the rest read."""
    damaged = [s for s in skipped if is_damaged(s) and s.where.file == str(path)]
    if len(damaged) <= records:
        return
    raise TraceFormatError(
        f"{path}: {len(damaged)} of {len(damaged) + records} lines are damaged (not JSON), too "
        f"many to rebuild the conversation from the rest; {_first(damaged[0])}"
    )


def damage_by_file(skipped: list[Skipped]) -> list[Skipped]:
    """`skipped` for a summary: the damaged lines of each file as one entry in the place of
    the first, counting them ("3 damaged lines skipped"); every line stays in `skipped`."""
    counts = Counter(s.where.file for s in skipped if is_damaged(s))
    out: list[Skipped] = []
    for s in skipped:
        if not is_damaged(s):
            out.append(s)
        elif counts[s.where.file]:
            n = counts.pop(s.where.file)
            said = f"{n} damaged line{'s' * (n != 1)} skipped ({_first(s)})"
            out.append(Skipped(Where(s.where.file), said))
    return out


def _looks_like_jsonl(text: str) -> bool:
    """True when most non-blank lines of `text` are JSON objects of their own, or damaged ones
    (a line opening an object at its first column that does not parse), some sound."""
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    good = damaged = 0
    for line in lines:
        try:
            good += isinstance(json.loads(line), dict)
        except json.JSONDecodeError:
            damaged += line.startswith('{"')
    return len(lines) > 1 and good > 0 and (good + damaged) * 2 >= len(lines)


# A string as one run of plain characters between escapes: ~5x faster than a per-character
# alternation on documents of megabytes.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')

_PUNCT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')


def value_lines(text: str, max_depth: int = 4) -> dict[tuple[str | int, ...], int]:
    """The 1-based line where each object or array of the JSON `text` starts, by its path
    (keys and indexes), down to `max_depth`: one pass over strings and brackets."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    lines: dict[tuple[str | int, ...], int] = {}
    stack: list[list[Any]] = []  # [is_object, key or index, awaiting a key]
    for m in _PUNCT.finditer(text):
        token = m.group()
        top = stack[-1] if stack else None
        if token[0] == '"':
            if top is not None and top[0] and top[2]:
                top[1], top[2] = token[1:-1], False  # a key: escapes matter not for lookup
        elif token in ("{", "["):
            if len(stack) <= max_depth:
                lines[tuple(e[1] for e in stack)] = bisect.bisect_left(newlines, m.start()) + 1
            stack.append([token == "{", None if token == "{" else 0, token == "{"])
        elif token in ("}", "]"):
            if stack:
                stack.pop()
        elif top is not None:  # a comma: the next key, or the next element
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
    return lines


def salvage(text: str) -> tuple[Any, int] | None:
    """A document cut off mid-way, closed after its last complete inner value: the value and
    the line where the kept part ends. None when nothing complete is inside."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token in ("{", "["):
            stack.append("}" if token == "{" else "]")
        elif token in ("}", "]"):
            if not stack:
                break
            stack.pop()
            if stack:
                cuts.append((m.end(), "".join(reversed(stack))))
    for end, closers in reversed(cuts[-20:]):
        try:
            return json.loads(text[:end] + closers), text.count("\n", 0, end) + 1
        except json.JSONDecodeError:
            continue
    return None
