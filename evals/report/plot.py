"""Accuracy against cost as a PNG, written with the standard library only (zlib): no plotting
dependency to install. A small raster canvas, a 5x7 bitmap font, and one chart."""

from __future__ import annotations

import math
import re
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
BLACK: Color = (20, 20, 20)
GREY: Color = (200, 200, 200)
BLUE: Color = (52, 101, 164)
ORANGE: Color = (230, 120, 20)
RED: Color = (200, 30, 30)
DARK_GREY: Color = (110, 110, 110)

# 5x7 glyphs, rows top to bottom (descenders below them); text is drawn as it is spelt.
_FONT_ROWS = {
    "A": "01110 10001 10001 11111 10001 10001 10001",
    "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110",
    "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111",
    "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111",
    "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110",
    "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001",
    "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001",
    "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110",
    "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101",
    "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110",
    "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110",
    "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010",
    "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 01010 00100 00100 00100 00100",
    "Z": "11111 00001 00010 00100 01000 10000 11111",
    "0": "01110 10001 10011 10101 11001 10001 01110",
    "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111",
    "3": "11111 00010 00100 00010 00001 10001 01110",
    "4": "00010 00110 01010 10010 11111 00010 00010",
    "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110",
    "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110",
    "9": "01110 10001 10001 01111 00001 00010 01100",
    ".": "00000 00000 00000 00000 00000 01100 01100",
    ",": "00000 00000 00000 00000 01100 00100 01000",
    ":": "00000 01100 01100 00000 01100 01100 00000",
    "-": "00000 00000 00000 11111 00000 00000 00000",
    "+": "00000 00100 00100 11111 00100 00100 00000",
    "%": "11000 11001 00010 00100 01000 10011 00011",
    "$": "00100 01111 10100 01110 00101 11110 00100",
    "(": "00010 00100 01000 01000 01000 00100 00010",
    ")": "01000 00100 00010 00010 00010 00100 01000",
    "[": "01110 01000 01000 01000 01000 01000 01110",
    "]": "01110 00010 00010 00010 00010 00010 01110",
    "/": "00000 00001 00010 00100 01000 10000 00000",
    "=": "00000 00000 11111 00000 11111 00000 00000",
    "_": "00000 00000 00000 00000 00000 00000 11111",
    "*": "00000 00100 10101 01110 10101 00100 00000",
    "'": "00100 00100 01000 00000 00000 00000 00000",
    "?": "01110 10001 00001 00010 00100 00000 00100",
    " ": "00000 00000 00000 00000 00000 00000 00000",
    "<": "00010 00100 01000 10000 01000 00100 00010",
    ">": "01000 00100 00010 00001 00010 00100 01000",
    "|": "00100 00100 00100 00100 00100 00100 00100",
    "!": "00100 00100 00100 00100 00100 00000 00100",
    "#": "01010 01010 11111 01010 11111 01010 01010",
    '"': "01010 01010 00000 00000 00000 00000 00000",
    ";": "00000 01100 01100 00000 01100 00100 01000",
    "{": "00010 00100 00100 01000 00100 00100 00010",
    "}": "01000 00100 00100 00010 00100 00100 01000",
    "&": "01100 10010 10100 01000 10101 10010 01101",
    "~": "00000 00000 01000 10101 00010 00000 00000",
    # Lower case: a 5-row x-height; g, j, p, q, y take two rows under the baseline.
    "a": "00000 00000 01110 00001 01111 10001 01111",
    "b": "10000 10000 10110 11001 10001 10001 11110",
    "c": "00000 00000 01110 10000 10000 10001 01110",
    "d": "00001 00001 01101 10011 10001 10001 01111",
    "e": "00000 00000 01110 10001 11111 10000 01110",
    "f": "00110 01001 01000 11100 01000 01000 01000",
    "g": "00000 00000 01111 10001 10001 10001 01111 00001 01110",
    "h": "10000 10000 10110 11001 10001 10001 10001",
    "i": "00100 00000 01100 00100 00100 00100 01110",
    "j": "00010 00000 00110 00010 00010 00010 00010 10010 01100",
    "k": "10000 10000 10010 10100 11000 10100 10010",
    "l": "01100 00100 00100 00100 00100 00100 01110",
    "m": "00000 00000 11010 10101 10101 10001 10001",
    "n": "00000 00000 10110 11001 10001 10001 10001",
    "o": "00000 00000 01110 10001 10001 10001 01110",
    "p": "00000 00000 11110 10001 10001 10001 11110 10000 10000",
    "q": "00000 00000 01111 10001 10001 10001 01111 00001 00001",
    "r": "00000 00000 10110 11001 10000 10000 10000",
    "s": "00000 00000 01110 10000 01110 00001 11110",
    "t": "01000 01000 11100 01000 01000 01001 00110",
    "u": "00000 00000 10001 10001 10001 10011 01101",
    "v": "00000 00000 10001 10001 10001 01010 00100",
    "w": "00000 00000 10001 10001 10101 10101 01010",
    "x": "00000 00000 10001 01010 00100 01010 10001",
    "y": "00000 00000 10001 10001 10001 10001 01111 00001 01110",
    "z": "00000 00000 11111 00010 00100 01000 11111",
}
FONT = {ch: rows.split() for ch, rows in _FONT_ROWS.items()}


class Canvas:
    """An RGB raster with the few drawing operations a scatter chart needs."""

    def __init__(self, width: int, height: int, background: Color = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def dot(self, x: int, y: int, color: Color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i : i + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        for y in range(max(y0, 0), min(y1, self.height - 1) + 1):
            for x in range(max(x0, 0), min(x1, self.width - 1) + 1):
                self.dot(x, y, color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: Color, width: int = 1) -> None:
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        half = width // 2
        for k in range(steps + 1):
            x = round(x0 + (x1 - x0) * k / steps)
            y = round(y0 + (y1 - y0) * k / steps)
            self.rect(x - half, y - half, x - half + width - 1, y - half + width - 1, color)

    def circle(self, cx: int, cy: int, r: int, color: Color, *, fill: bool = True) -> None:
        for y in range(cy - r, cy + r + 1):
            for x in range(cx - r, cx + r + 1):
                d = (x - cx) ** 2 + (y - cy) ** 2
                if d <= r * r and (fill or d >= (r - 2) ** 2):
                    self.dot(x, y, color)

    def text(self, x: int, y: int, text: str, color: Color = BLACK, scale: int = 2) -> int:
        """Draw `text` with its top-left corner at (x, y); returns the width drawn."""
        cursor = x
        for ch in text:
            glyph = FONT.get(ch) or FONT.get(ch.upper(), FONT["?"])
            for gy, row in enumerate(glyph):
                for gx, bit in enumerate(row):
                    if bit == "1":
                        x0, y0 = cursor + gx * scale, y + gy * scale
                        self.rect(x0, y0, x0 + scale - 1, y0 + scale - 1, color)
            cursor += 6 * scale
        return cursor - x

    def png(self) -> bytes:
        rows = b"".join(
            b"\x00" + bytes(self.pixels[3 * y * self.width : 3 * (y + 1) * self.width])
            for y in range(self.height)
        )

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")
        )  # fmt: skip


def _ticks(top: float) -> tuple[float, float]:
    """A round tick step (1, 2 or 5 times a power of ten) and the axis end it gives."""
    if top <= 0:
        return 1.0, 5.0
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step, step * math.ceil(top / step)


def text_width(text: str, scale: int = 2) -> int:
    return 6 * scale * len(text)


def wrap(text: str, chars: int) -> list[str]:
    """`text` in lines of at most `chars` characters, broken after a space or a comma where it
    can be, inside a word where it cannot."""
    lines, line = [], ""
    for piece in re.findall(r"[^ ,]+[ ,]*|[ ,]+", text):
        if line and len(line) + len(piece.rstrip()) > chars:
            lines.append(line.rstrip())
            line = ""
        while len(piece.rstrip()) > chars:
            lines.append(piece[:chars])
            piece = piece[chars:]
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


@dataclass(frozen=True)
class Point:
    label: str
    cost: float
    accuracy: float  # 0..1
    front: bool = False
    recommended: bool = False
    overflow: float = 0.0  # the share of its runs that overflowed the model's window


LINE = 22  # a line of scale-2 text: 14 px of glyph, 4 of descender, 4 of gap
WIDTH = 1040
LEFT, RIGHT, PLOT_HEIGHT = 100, 40, 400
# The settings table under the chart: where each column starts, in pixels.
TABLE_X = {"#": 30, "accuracy": 80, "cost $": 200, "overflow": 300, "setting": 420}
SETTING_CHARS = (WIDTH - 16 - TABLE_X["setting"]) // 12


def scatter(points: Sequence[Point], path: str | Path, *, title: str, x_label: str) -> Path:
    """Accuracy (y) against cost (x). Each setting is a numbered marker, named in a table under
    the chart, so no name is cut or laid over another however many settings there are. The
    Pareto front is joined by a line, the recommended setting ringed, a setting whose runs
    overflowed the window crossed out."""
    ranked = sorted(points, key=lambda p: (-p.accuracy, p.cost, p.label))
    title_lines = wrap(title, (WIDTH - 20) // 12)
    rows = [(n, p, wrap(p.label + (" (recommended)" if p.recommended else ""), SETTING_CHARS))
            for n, p in enumerate(ranked, start=1)]  # fmt: skip
    top = 10 + LINE * len(title_lines) + 30
    bottom = top + PLOT_HEIGHT
    table_top = bottom + 112
    height = table_top + LINE * (1 + sum(len(lines) for _, _, lines in rows)) + 12
    c = Canvas(WIDTH, height)
    for k, line in enumerate(title_lines):
        c.text(10, 10 + LINE * k, line)
    step, x_max = _ticks(max((p.cost for p in points), default=0.0) * 1.1)
    plot_w = WIDTH - LEFT - RIGHT

    def px(cost: float) -> int:
        return LEFT + round(plot_w * cost / x_max)

    def py(acc: float) -> int:
        return top + round(PLOT_HEIGHT * (1 - acc))

    _accuracy_grid(c, py)
    decimals = max(0, -math.floor(math.log10(step)))
    k = 0
    while k * step <= x_max + 1e-12:
        x = px(k * step)
        c.line(x, top, x, bottom, GREY)
        tick = f"{k * step:.{decimals}f}"
        c.text(x - text_width(tick) // 2, bottom + 10, tick)
        k += 1
    c.line(LEFT, top, LEFT, bottom, BLACK, 2)
    c.line(LEFT, bottom, WIDTH - RIGHT, bottom, BLACK, 2)
    c.text(LEFT + plot_w // 2 - text_width(x_label) // 2, bottom + 40, x_label)
    legend(c, LEFT, bottom + 72)
    c.text(12, top - 24, "accuracy")
    front = sorted((p for p in points if p.front), key=lambda p: p.cost)
    for a, b in zip(front, front[1:], strict=False):
        c.line(px(a.cost), py(a.accuracy), px(b.cost), py(b.accuracy), ORANGE, 3)
    spots: dict[tuple[int, int], list[int]] = {}
    for n, p, _lines in rows:
        x, y = px(p.cost), py(p.accuracy)
        marker(c, x, y, p)
        # Settings drawn on (nearly) the same spot share one label: "2,3".
        near = next((s for s in spots if abs(s[0] - x) <= 4 and abs(s[1] - y) <= 4), (x, y))
        spots.setdefault(near, []).append(n)
    bounds = (LEFT + 2, top - 20, WIDTH - 4, bottom - 2)
    label_spots(c, {spot: ",".join(map(str, ns)) for spot, ns in spots.items()}, bounds)
    settings_table(c, rows, table_top)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(c.png())
    return out


def _accuracy_grid(c: Canvas, py: Callable[[float], int]) -> None:
    """Gridlines and labels at 0, 20, ..., 100% accuracy."""
    for k in range(6):
        y = py(k / 5)
        c.line(LEFT, y, WIDTH - RIGHT, y, GREY)
        c.text(LEFT - 60, y - 7, f"{k * 20}%")


def marker(c: Canvas, x: int, y: int, p: Point) -> None:
    c.circle(x, y, 7, ORANGE if p.front else BLUE)
    if p.recommended:
        c.circle(x, y, 13, BLACK, fill=False)
    if p.overflow > 0:
        c.line(x - 9, y - 9, x + 9, y + 9, RED, 3)
        c.line(x - 9, y + 9, x + 9, y - 9, RED, 3)


Box = tuple[int, int, int, int]


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_spots(c: Canvas, labels: dict[tuple[int, int], str], bounds: Box) -> list[Box]:
    """Each marker's number beside it: the first free place on rings of growing distance
    around the marker, clear of every marker and of the labels placed before, joined to its
    marker by a leader line once it has had to move away. Returns the labels' boxes."""
    # Clear of the recommended setting's ring too (radius 13).
    taken: list[Box] = [(x - 13, y - 13, x + 13, y + 13) for x, y in labels]
    for (x, y), text in sorted(labels.items()):
        w, h = text_width(text), 14
        chosen, ring = _free_place(x, y, w, h, taken, bounds)
        if chosen is None:  # no free place left anywhere: just right of its marker
            chosen = (x + 14, y - 9, x + 18 + w, y + 9)
        elif ring > 1:
            ex = min(max(x, chosen[0]), chosen[2])
            ey = min(max(y, chosen[1]), chosen[3])
            c.line(x, y, ex, ey, DARK_GREY)
        taken.append(chosen)
        c.rect(chosen[0], chosen[1], chosen[2], chosen[3], WHITE)
        c.text(chosen[0] + 2, chosen[1] + 2, text)
    return taken[len(labels) :]


def _free_place(
    x: int, y: int, w: int, h: int, taken: Sequence[Box], bounds: Box
) -> tuple[Box | None, int]:
    """The first box of w x h (plus a 2 px margin) inside `bounds` and clear of `taken`, on
    rings around (x, y); and the ring it is on."""
    reach_max = max(bounds[2] - bounds[0], bounds[3] - bounds[1])
    ring = 1
    while 6 + 10 * ring <= reach_max:
        reach, tries = 6 + 10 * ring, 8 + 4 * ring  # more places on the wider rings
        for k in range(tries):
            # Upper right first, then alternately either side of it: below the marker last.
            turn = (k + 1) // 2 * (1 if k % 2 else -1)
            angle = -math.pi / 4 + 2 * math.pi * turn / tries
            dx, dy = math.cos(angle), math.sin(angle)
            # The box's side nearest the marker touches the ring.
            lx = round(x + reach * dx - w * (1 - dx) / 2)
            ly = round(y + reach * dy - h * (1 - dy) / 2)
            box = (lx - 2, ly - 2, lx + w + 2, ly + h + 2)
            inside = bounds[0] <= box[0] and box[2] <= bounds[2]
            inside = inside and bounds[1] <= box[1] and box[3] <= bounds[3]
            if inside and not any(_overlaps(box, t) for t in taken):
                return box, ring
        ring += 1
    return None, ring


def settings_table(c: Canvas, rows: Sequence[tuple[int, Point, list[str]]], y: int) -> None:
    """Number, accuracy, cost, overflow and the setting's name in full (wrapped), one row per
    marker; the number in the marker's colour."""
    for column, x in TABLE_X.items():
        c.text(x, y, column)
    c.line(TABLE_X["#"], y + LINE - 4, WIDTH - 16, y + LINE - 4, GREY)
    y += LINE
    for n, p, lines in rows:
        cells = {"accuracy": f"{p.accuracy:.1%}", "cost $": f"{p.cost:.4f}",
                 "overflow": f"{p.overflow:.0%}" if p.overflow else "-"}  # fmt: skip
        c.text(TABLE_X["#"], y, str(n), ORANGE if p.front else BLUE)
        for column, text in cells.items():
            c.text(TABLE_X[column], y, text, RED if column == "overflow" and p.overflow else BLACK)
        for k, line in enumerate(lines):
            c.text(TABLE_X["setting"], y + LINE * k, line)
        y += LINE * len(lines)


def legend(c: Canvas, x: int, y: int) -> None:
    """What the marks mean, in one row with its top-left corner at (x, y)."""
    c.line(x, y + 7, x + 30, y + 7, ORANGE, 3)
    c.circle(x + 15, y + 7, 6, ORANGE)
    x += 40 + c.text(x + 40, y, "Pareto front") + 30
    c.circle(x + 15, y + 7, 6, BLUE)
    x += 40 + c.text(x + 40, y, "not on the front") + 30
    c.circle(x + 15, y + 7, 6, ORANGE)
    c.circle(x + 15, y + 7, 12, BLACK, fill=False)
    x += 40 + c.text(x + 40, y, "recommended") + 30
    marker(c, x + 15, y + 7, Point("", 0, 0, overflow=1))
    c.text(x + 40, y, "overflowed")


# -- week by week (a recurring scenario) -----------------------------------------------------

SERIES_COLORS: tuple[Color, ...] = (BLUE, ORANGE, RED, DARK_GREY, (60, 150, 60), (140, 70, 160))
PANEL_HEIGHT = 260


def weeks_chart(
    panels: Sequence[tuple[str, Mapping[str, Sequence[tuple[int, float]]], bool]],
    path: str | Path,
    *,
    title: str,
) -> Path:
    """Stacked line charts over weeks, one per panel `(y label, {series: [(week, value)]},
    as percent)`, the same series in the same colour in every panel, named in a legend."""
    names = list(dict.fromkeys(n for _, series, _ in panels for n in series))
    color = {n: SERIES_COLORS[k % len(SERIES_COLORS)] for k, n in enumerate(names)}
    title_lines = wrap(title, (WIDTH - 20) // 12)
    top = 10 + LINE * len(title_lines) + LINE * len(names) + 50
    height = top + len(panels) * (PANEL_HEIGHT + 90) + 10
    c = Canvas(WIDTH, height)
    for k, line in enumerate(title_lines):
        c.text(10, 10 + LINE * k, line)
    for k, name in enumerate(names):
        y = 10 + LINE * (len(title_lines) + k) + 8
        c.line(LEFT, y + 7, LEFT + 40, y + 7, color[name], 4)
        c.text(LEFT + 52, y, name)
    weeks = [w for _, series, _ in panels for points in series.values() for w, _ in points]
    last = max(weeks, default=1)
    plot_w = WIDTH - LEFT - RIGHT
    for label, series, percent in panels:
        values = [v for points in series.values() for _, v in points]
        step, y_max = (0.2, 1.0) if percent else _ticks(max(values, default=0.0) * 1.1)
        bottom = top + PANEL_HEIGHT

        def px(week: float) -> int:
            return LEFT + round(plot_w * (week - 1) / max(last - 1, 1))

        def py(value: float, y_max: float = y_max, bottom: int = bottom) -> int:
            return bottom - round(PANEL_HEIGHT * value / y_max)

        c.text(12, top - 24, label)
        k = 0
        while k * step <= y_max + 1e-12:
            y = py(k * step)
            c.line(LEFT, y, WIDTH - RIGHT, y, GREY)
            tick = f"{k * step:.0%}" if percent else f"{k * step:,.0f}"
            c.text(LEFT - 12 - text_width(tick), y - 7, tick)
            k += 1
        for week in range(1, last + 1):
            if week == 1 or week % 4 == 0 or week == last:
                c.line(px(week), bottom, px(week), bottom + 5, BLACK)
            if week == 1 or week % 8 == 0 or week == last:
                c.text(px(week) - text_width(str(week)) // 2, bottom + 10, str(week))
        c.line(LEFT, top, LEFT, bottom, BLACK, 2)
        c.line(LEFT, bottom, WIDTH - RIGHT, bottom, BLACK, 2)
        c.text(LEFT + plot_w // 2 - text_width("week") // 2, bottom + 34, "week")
        for name, points in series.items():
            ordered = sorted(points)
            for (w0, v0), (w1, v1) in zip(ordered, ordered[1:], strict=False):
                c.line(px(w0), py(v0), px(w1), py(v1), color[name], 3)
        top = bottom + 90
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(c.png())
    return out


# Line colours of the recall-at-retained-tokens chart, one per arm (cycled).
ARM_COLORS: tuple[Color, ...] = (BLUE, ORANGE, RED, (60, 150, 60), (140, 80, 170), DARK_GREY,
                                 (20, 150, 160), (170, 120, 60))  # fmt: skip


def recall_lines(
    arms: Sequence[tuple[str, Sequence[tuple[int, float, float | None]]]],
    path: str | Path,
    *,
    title: str,
) -> Path:
    """Recall at retained tokens: per arm, accuracy (y) against the tokens in the window when
    the probe was asked (x, log2), the fallible reader solid with dots, the ideal reader thin
    with rings. `arms`: (label, [(bin's upper edge, accuracy, ideal accuracy or None)])."""
    title_lines = wrap(title, (WIDTH - 20) // 12)
    top = 10 + LINE * len(title_lines) + 30
    bottom = top + PLOT_HEIGHT
    height = bottom + 80 + LINE * (len(arms) + 1)
    c = Canvas(WIDTH, height)
    for k, line in enumerate(title_lines):
        c.text(10, 10 + LINE * k, line)
    edges = sorted({e for _, rows in arms for e, _, _ in rows}) or [1_000]
    lo, hi = math.log2(edges[0]), math.log2(edges[-1])
    plot_w = WIDTH - LEFT - RIGHT

    def px(tokens: int) -> int:
        span = hi - lo or 1.0
        return LEFT + 20 + round((plot_w - 40) * (math.log2(tokens) - lo) / span)

    def py(acc: float) -> int:
        return top + round(PLOT_HEIGHT * (1 - acc))

    _accuracy_grid(c, py)
    for e in edges:
        tick = f"{e / 1000:g}k"
        c.line(px(e), top, px(e), bottom, GREY)
        c.text(px(e) - text_width(tick) // 2, bottom + 10, tick)
    c.line(LEFT, top, LEFT, bottom, BLACK, 2)
    c.line(LEFT, bottom, WIDTH - RIGHT, bottom, BLACK, 2)
    label = "tokens in the window when the probe was asked (up to)"
    c.text(LEFT + plot_w // 2 - text_width(label) // 2, bottom + 40, label)
    c.text(12, top - 24, "accuracy")
    for n, (name, rows) in enumerate(arms):
        color = ARM_COLORS[n % len(ARM_COLORS)]
        pts = [(px(e), py(a)) for e, a, _ in rows]
        ideal = [(px(e), py(i)) for e, _, i in rows if i is not None]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            c.line(x0, y0, x1, y1, color, 3)
        for (x0, y0), (x1, y1) in zip(ideal, ideal[1:], strict=False):
            c.line(x0, y0, x1, y1, color, 1)
        for x, y in pts:
            c.circle(x, y, 5, color)
        for x, y in ideal:
            c.circle(x, y, 7, color, fill=False)
        y = bottom + 72 + LINE * n
        c.line(LEFT, y + 7, LEFT + 30, y + 7, color, 3)
        c.text(LEFT + 40, y, name)
    c.text(LEFT, bottom + 72 + LINE * len(arms), "solid: fallible reader; thin, rings: ideal")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(c.png())
    return out
