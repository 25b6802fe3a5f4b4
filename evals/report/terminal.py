"""Tables and prose that fit the terminal they are printed on: the real width (`COLUMNS` first,
then the terminal's; 80 when piped), columns dropped in a stated order when the rest would not
fit, cells wrapped at spaces and never cut (no ellipsis in a number), prose wrapped at words.
`--json` is the format for machines; this is for people."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PIPED_WIDTH = 80


@dataclass(frozen=True)
class Column:
    """A table column. `drop`: 0 never leaves; otherwise the highest goes first when the
    table is too wide (equal ranks leave together, right to left)."""

    header: str
    justify: str = "right"
    drop: int = 0


def console(*, stderr: bool = False) -> Any:
    """A Rich console at the width the output really has: `COLUMNS` when set, else the
    terminal's, else (piped) 80."""
    from rich.console import Console

    out = Console(stderr=stderr, highlight=False, emoji=False)
    if not out.is_terminal and not _columns():
        out = Console(stderr=stderr, highlight=False, emoji=False, width=PIPED_WIDTH)
    return out


def _columns() -> int | None:
    import os

    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    width: int,
    title: str = "",
    caption: str = "",
) -> tuple[Any, list[str]]:
    """A Rich table of `rows` (plain strings, not markup) no wider than `width`: columns are
    dropped by their `drop` rank until every cell fits whole, wrapped only at its spaces.
    Returns the table and the headers it left out."""
    keep = list(range(len(columns)))
    dropped: list[str] = []
    while True:
        shown = [columns[k] for k in keep]
        cells = [[r[k] for k in keep] for r in rows]
        lows, highs = _extents(shown, cells)
        rank = max((c.drop for c in shown), default=0)
        if sum(lows) + _frame(len(shown)) <= width or rank == 0:
            widths = _share(lows, highs, width - _frame(len(shown)))
            return _table(shown, cells, widths, title, caption), dropped
        gone = [k for k in keep if columns[k].drop == rank]
        dropped += [columns[k].header for k in gone]
        keep = [k for k in keep if k not in gone]


def fits(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int) -> bool:
    """Whether the columns that are never dropped fit `width` with every cell whole."""
    keep = [k for k, c in enumerate(columns) if c.drop == 0]
    lows, _ = _extents([columns[k] for k in keep], [[r[k] for k in keep] for r in rows])
    return sum(lows) + _frame(len(keep)) <= width


def _frame(n: int) -> int:
    """Characters a Rich table with `n` columns spends on borders and padding."""
    return 3 * n + 1


def _extents(
    columns: Sequence[Column], rows: Sequence[Sequence[str]]
) -> tuple[list[int], list[int]]:
    """Each column's narrowest width with no word broken, and its width on one line."""
    lows, highs = [], []
    for k, col in enumerate(columns):
        texts = [col.header, *(row[k] for row in rows)]
        lows.append(max((len(w) for t in texts for w in t.split()), default=0))
        highs.append(max(len(t) for t in texts))
    return lows, highs


def _share(lows: Sequence[int], highs: Sequence[int], room: int) -> list[int]:
    """Widths from each column's narrowest up: the spare room puts whole columns on one line,
    those that need least first (a number's interval before a long name), and what is left
    goes to the rest in turn."""
    widths = list(lows)
    spare = room - sum(widths)
    for k in sorted(range(len(widths)), key=lambda i: highs[i] - lows[i]):
        need = highs[k] - widths[k]
        if 0 < need <= spare:
            widths[k], spare = highs[k], spare - need
    while spare > 0 and any(w < h for w, h in zip(widths, highs, strict=True)):
        for k in range(len(widths)):
            if spare > 0 and widths[k] < highs[k]:
                widths[k], spare = widths[k] + 1, spare - 1
    return widths


def _table(columns: Sequence[Column], rows: Sequence[Sequence[str]], widths: Sequence[int],
           title: str, caption: str) -> Any:  # fmt: skip
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title) if title else None, caption=Text(caption) if caption else None)
    for col, w in zip(columns, widths, strict=True):
        # Fixed widths, so Rich never squeezes a column below its longest word; fold, not
        # ellipsis, for a word wider than the whole terminal (a path): nothing is hidden.
        table.add_column(Text(col.header), justify=col.justify, overflow="fold", width=w)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def print_fitted(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    caption: str = "",
    out: Any = None,
) -> list[str]:
    """Print the table fitted to the console (`console()` unless given); a note names the
    columns left out. Returns their headers."""
    out = out or console()
    table, dropped = fit(columns, rows, width=out.width, title=title, caption=caption)
    out.print(table)
    if dropped:
        say(f"(not shown at {out.width} columns: {', '.join(dropped)}; a wider terminal or "
            "COLUMNS shows them, --json has them all)", out=out)  # fmt: skip
    return dropped


def say(text: str, *, out: Any = None) -> None:
    """A paragraph wrapped at words to the console's width (read as text, never markup)."""
    (out or console()).print(text, markup=False, highlight=False, emoji=False, overflow="fold")


def print_markdown(lines: Sequence[str], *, out: Any = None) -> None:
    """A markdown report (a suite's, the weeks') on the terminal: each table fitted, keeping
    its first four columns and leaving out the others from the right; the prose wrapped."""
    out = out or console()
    k = 0
    while k < len(lines):
        if not lines[k].startswith("|"):
            say(lines[k].lstrip("#").strip() if lines[k].startswith("#") else lines[k], out=out)
            k += 1
            continue
        block = []
        while k < len(lines) and lines[k].startswith("|"):
            block.append(_cells(lines[k]))
            k += 1
        head, align, rows = block[0], block[1] if len(block) > 1 else [], block[2:]
        columns = [
            Column(h, "right" if a.endswith(":") else "left", drop=max(n - 3, 0))
            for n, (h, a) in enumerate(zip(head, [*align, *[""] * len(head)], strict=False))
        ]
        print_fitted(columns, [[*r, *[""] * len(head)][: len(head)] for r in rows], out=out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]
