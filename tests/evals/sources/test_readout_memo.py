"""A command's output is read once per text (evals/sources/readout.py): what the memo recalls
equals reading the text again, and equals what command_roles.py read per value before."""

from __future__ import annotations

import re

from evals.sources.readout import read, readout
from evals.sources.text_roles import GREP_LINE, NUMBERED_LINE

_TEXTS = (
    "    10\tdef load(path):\n    11\t    return open(path)\n    12\n    10\tagain\n",
    "src/app.py:41:    retries = 3\nsrc/app.py-42-    timeout = 30\n",
    "\x1b[31mFAILED\x1b[0m tests/test_a.py::test_one - ValueError: bad input...\n"
    "FAILED tests/test_a.py::test_two - KeyError: 'x'\n"
    "tests/test_b.py::test_three FAILED\n",
    "____ test_one ____\n\n    def test_one():\n>       f()\nE   ValueError: bad input here\n"
    "E   second line\n____ test_two[1] ____\nE   KeyError: 'x'\n",
    "no numbers here\njust words\n",
    "",
)


def _numbered_by_loop(lines: list[str], value: str) -> tuple[int, str] | None:
    """What command_roles._neighbour found per value: the first line numbered `value`."""
    blank = re.compile(r"^\s*(?P<line>\d+)\s*$")
    for i, line in enumerate(lines):
        m = NUMBERED_LINE.match(line) or GREP_LINE.match(line) or blank.match(line)
        if m and m["line"] == value:
            return i, m.group()
    return None


def _plain(text: str) -> tuple[object, ...]:
    """A readout as plain values (a match object equals only itself)."""
    got = readout(text)
    numbered = {k: (i, m.group(), m.groupdict()) for k, (i, m) in got.numbered.items()}
    return got.clean, got.lines, numbered, got.failed, got.sections


def _fresh(text: str) -> tuple[object, ...]:
    got = read(text)
    numbered = {k: (i, m.group(), m.groupdict()) for k, (i, m) in got.numbered.items()}
    return got.clean, got.lines, numbered, got.failed, got.sections


def test_the_memo_answers_what_reading_again_does() -> None:
    for _ in range(2):  # the second round is answered from the memo
        for text in _TEXTS:
            assert _plain(text) == _fresh(text)
    assert readout(_TEXTS[0]).numbered["10"][0] == 0  # the first line of a number, not the last


def test_numbered_lines_are_the_first_of_each_number() -> None:
    for text in _TEXTS:
        got = readout(text)
        clean = re.sub(r"\x1b\[[0-9;]*m", "", text)
        assert got.clean == clean and list(got.lines) == clean.splitlines()
        for value in ("10", "11", "12", "41", "42", "7"):
            found = got.numbered.get(value)
            want = _numbered_by_loop(clean.splitlines(), value)
            assert (None if found is None else (found[0], found[1].group())) == want


def test_failures_and_sections_are_read() -> None:
    failed = readout(_TEXTS[2]).failed
    assert failed == (
        ("tests/test_a.py", "test_one", "ValueError: bad input"),
        ("tests/test_a.py", "test_two", "KeyError: 'x'"),
        ("tests/test_b.py", "test_three", ""),
    )
    assert readout(_TEXTS[3]).sections == (
        ("test_one", "ValueError: bad input here"),
        ("test_two", "KeyError: 'x'"),
    )
