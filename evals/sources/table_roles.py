"""What a value is in a table a tool printed (a CSV export, a TSV or `|` listing under a header
row): the cell of a column in the row that other cells of that row name, so a question can
ask for it as a person would ("the `value` of the row whose `company` is `Fjordline Shipping`
and `region` is `NA`") without quoting the text around it (evals/sources/roles.py).

A row is named by the fewest other cells that no other row of the table shares, cells
without digits first (a figure naming a row is often another probe's answer, which the
question would then give away, leaks.py). A value that fills more than one cell, or a row no
three cells tell apart, has no role there.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

from evals.sources.text_roles import role
from harness.memo import Memo

_SEPARATORS = (",", "\t", "|")
_HEADER_CELL = re.compile(r"[A-Za-z_][\w .\-]{0,40}")
MIN_COLUMNS = 3
MAX_NAMING = 3


def table_role(value: str, text: str, result: str) -> dict[str, Any] | None:
    """The `table_cell` role of `value` in a table of `text` (the `result` it names), or None
    when it fills no single cell of one."""
    for header, rows, where in _parsed(text):
        cells = where.get(value, ())
        if len(cells) != 1:
            continue
        r, c = cells[0]
        naming = _naming(rows, r, c, value)
        if naming is None:
            return None
        said = " and ".join(f"`{header[k]}` is `{rows[r][k]}`" for k in naming)
        terms = [header[c], *(rows[r][k] for k in naming), *(header[k] for k in naming)]
        return role("table_cell", f"the `{header[c]}` of the row whose {said} in {result}",
                    terms, value)  # fmt: skip
    return None


# A text's tables, parsed once while the texts parsed hold at most this many characters in
# all: a replay asks of every value a source shows, and parsing the source's lines again for
# each value was most of the cost of naming a table's cell.
PARSED_CHARS = 16_000_000
_Table = tuple[list[str], list[list[str]], dict[str, list[tuple[int, int]]]]
_PARSED: Memo[str, list[_Table]] = Memo(PARSED_CHARS, len)


def _parsed(text: str) -> list[_Table]:
    """`_tables(text)`, each with the cells (row, column) each value fills, in reading order."""
    known = _PARSED.get(text)  # one look-up: a replay in another thread may evict it meanwhile
    if known is not None:
        return known
    out: list[_Table] = []
    for header, rows in _tables(text):
        where: dict[str, list[tuple[int, int]]] = {}
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                where.setdefault(cell, []).append((r, c))
        out.append((header, rows, where))
    return _PARSED.put(text, out)


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each table of `text`: a header row of names, and the rows after it with as many cells."""
    out: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        found = _header(lines[i])
        if found is None:
            i += 1
            continue
        sep, header = found
        rows = []
        i += 1
        while i < len(lines):
            cells = _cells(lines[i], sep)
            if len(cells) != len(header):
                break
            rows.append(cells)
            i += 1
        if len(rows) >= 2:
            out.append((header, rows))
    return out


def _header(line: str) -> tuple[str, list[str]] | None:
    for sep in _SEPARATORS:
        cells = _cells(line, sep)
        if len(cells) >= MIN_COLUMNS and all(_HEADER_CELL.fullmatch(c) for c in cells):
            return sep, cells
    return None


def _cells(line: str, sep: str) -> list[str]:
    stripped = line.strip()
    if sep == "|":
        stripped = stripped.strip("|")
    return [c.strip() for c in stripped.split(sep)] if sep in stripped else []


def _naming(rows: list[list[str]], r: int, c: int, value: str) -> tuple[int, ...] | None:
    """The fewest columns (at most `MAX_NAMING`) whose cells in row `r` no other row shares all
    of, cells without digits first; None when no such columns are found."""
    row = rows[r]
    usable = [k for k in range(len(row)) if k != c and row[k] and value not in row[k]]
    usable.sort(key=lambda k: any(ch.isdigit() for ch in row[k]))
    for size in range(1, MAX_NAMING + 1):
        for combo in combinations(usable, size):
            if all(any(other[k] != row[k] for k in combo)
                   for n, other in enumerate(rows) if n != r):  # fmt: skip
                return tuple(sorted(combo))
    return None
