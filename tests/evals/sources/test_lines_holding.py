"""The lines of a text that hold a value, found once the text is split (evals/sources/
text_roles.lines_holding): the same lines, in the same order, as testing every line of
`text.splitlines()` for the value, whatever ends the lines and however often the value stands,
and from memory the same as computed (a text's entry never answers for another text)."""

from __future__ import annotations

from evals.sources.text_roles import lines_holding

_TEXTS = (
    "",
    "one line, no break",
    "a = 1\nb = 11\n\nc = 111\n",
    "crlf 7\r\nline 77\r\n\r\nend 7",
    "form\x0cfeed 5\x0b5 tab\x1c5\x1d\x1e5\x85x5\u2028y5\u2029z5",
    "5555\n55\n5\n",
    "trailing\n",
    "\n\n\nvalue\n\n",
    "src/app.py:41:    retries = 3\nsrc/app.py-42-    timeout = 30\nsrc/app.py",
)
_VALUES = ("1", "11", "7", "5", "55", "value", "src/app.py", "app", "3\n", "\r", "", "absent")


def _by_every_line(value: str, text: str) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(text.splitlines()) if value in line]


def test_the_lines_found_are_those_holding_the_value() -> None:
    for _ in range(2):  # the second round reads the texts' lines from memory
        for text in _TEXTS:
            for value in _VALUES:
                assert lines_holding(value, text) == _by_every_line(value, text), (value, text)
