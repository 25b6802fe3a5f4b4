"""A command's output as command_roles.py reads it, read once per text: its text without ANSI
colours, its lines, the first numbered line of each number, the failing tests it reports and
the failure sections pytest printed. A replay asks the role of every value a source shows
(evals/simulated/sightings.py), and these depend on the text alone, not on the value asked."""

from __future__ import annotations

import re
from dataclasses import dataclass

from evals.sources.text_roles import GREP_LINE, NUMBERED_LINE
from harness.memo import Memo

ANSI = re.compile(r"\x1b\[[0-9;]*m")
BLANK_NUMBERED = re.compile(r"^\s*(?P<line>\d+)\s*$")
_TEST = r"(?P<file>[\w./\-]+)::(?P<test>[\w.:]+)(?:\[[^\]]*\])?"
_FAILED = re.compile(rf"^(?:FAILED|ERROR)\s+{_TEST}(?:\s+-\s+(?P<message>.*))?$")
_SECTION = re.compile(r"^_{3,} (?P<test>[\w.:]+?)(?:\[[^\]]*\])? _{3,}$")
_FAILED_VERBOSE = re.compile(rf"^{_TEST}\s+(?:FAILED|ERROR)\b")
MESSAGE_CHARS = 60


@dataclass(frozen=True)
class Readout:
    """`clean`: the text without ANSI colours; `lines`: its lines; `numbered`: for each line
    number a line shows (a listing's, a grep's, a blank numbered line's), the index of the
    first line showing it and that line's match; `failed`: (file, test, message) of each test
    reported failing; `sections`: (test, its first `E` line) of each failure section."""

    clean: str
    lines: tuple[str, ...]
    numbered: dict[str, tuple[int, re.Match[str]]]
    failed: tuple[tuple[str, str, str], ...]
    sections: tuple[tuple[str, str], ...]


# Outputs read, kept while their texts hold at most this many characters in all.
READOUT_CHARS = 16_000_000
_READ: Memo[str, Readout] = Memo(READOUT_CHARS, len)


def readout(text: str) -> Readout:
    """`text` read (once per process while kept)."""
    known = _READ.get(text)  # one look-up: a replay in another thread may evict it meanwhile
    return known if known is not None else _READ.put(text, read(text))


def read(text: str) -> Readout:
    """`text` read, without the memo."""
    clean = ANSI.sub("", text)
    lines = clean.splitlines()
    numbered: dict[str, tuple[int, re.Match[str]]] = {}
    failed: list[tuple[str, str, str]] = []
    sections: list[list[str]] = []  # [test, its first `E` line]
    for i, line in enumerate(lines):
        m = NUMBERED_LINE.match(line) or GREP_LINE.match(line) or BLANK_NUMBERED.match(line)
        if m:
            numbered.setdefault(m["line"], (i, m))
        f = _FAILED.match(line.strip()) or _FAILED_VERBOSE.match(line.strip())
        if f:
            message = (f.groupdict().get("message") or "").strip().removesuffix("...").strip()
            failed.append((f["file"], f["test"], message))
        if s := _SECTION.match(line):
            sections.append([s["test"], ""])
        elif sections and not sections[-1][1] and line.startswith("E "):
            sections[-1][1] = line[1:].strip()[:MESSAGE_CHARS]
    return Readout(clean, tuple(lines), numbered, tuple(failed), tuple((t, e) for t, e in sections))
