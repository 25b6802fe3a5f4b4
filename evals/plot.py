"""Accuracy against cost as a PNG, written with the standard library only (zlib): no plotting
dependency to install. A small raster canvas, a 5x7 bitmap font, and one chart."""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
BLACK: Color = (20, 20, 20)
GREY: Color = (200, 200, 200)
BLUE: Color = (52, 101, 164)
ORANGE: Color = (230, 120, 20)

# 5x7 glyphs, rows top to bottom; lower case is drawn as upper case.
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
        for ch in text.upper():
            glyph = FONT.get(ch, FONT["?"])
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


@dataclass(frozen=True)
class Point:
    label: str
    cost: float
    accuracy: float  # 0..1
    front: bool = False
    recommended: bool = False


def scatter(points: Sequence[Point], path: str | Path, *, title: str, x_label: str) -> Path:
    """Accuracy (y) against cost (x); the Pareto front joined by a line, the recommended
    setting ringed."""
    width, height = 960, 630
    left, right, top, bottom = 100, 40, 60, 110
    c = Canvas(width, height)
    c.text(left, 10, title[:70], scale=2)
    step, x_max = _ticks(max((p.cost for p in points), default=0.0) * 1.1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(cost: float) -> int:
        return left + round(plot_w * cost / x_max)

    def py(acc: float) -> int:
        return top + round(plot_h * (1 - acc))

    for k in range(6):
        y = py(k / 5)
        c.line(left, y, width - right, y, GREY)
        c.text(left - 60, y - 7, f"{k * 20}%")
    decimals = max(0, -math.floor(math.log10(step)))
    k = 0
    while k * step <= x_max + 1e-12:
        x = px(k * step)
        c.line(x, top, x, height - bottom, GREY)
        tick = f"{k * step:.{decimals}f}"
        c.text(x - text_width(tick) // 2, height - bottom + 10, tick)
        k += 1
    c.line(left, top, left, height - bottom, BLACK, 2)
    c.line(left, height - bottom, width - right, height - bottom, BLACK, 2)
    c.text(left + plot_w // 2 - text_width(x_label) // 2, height - 68, x_label)
    legend(c, left, height - 30)
    c.text(12, top - 22, "accuracy")
    front = sorted((p for p in points if p.front), key=lambda p: p.cost)
    for a, b in zip(front, front[1:], strict=False):
        c.line(px(a.cost), py(a.accuracy), px(b.cost), py(b.accuracy), ORANGE, 3)
    used: list[tuple[int, int]] = []
    for p in sorted(points, key=lambda p: (p.cost, p.accuracy)):
        x, y = px(p.cost), py(p.accuracy)
        c.circle(x, y, 7, ORANGE if p.front else BLUE)
        if p.recommended:
            c.circle(x, y, 13, BLACK, fill=False)
        label_y = y - 24
        while any(abs(label_y - uy) < 16 and abs(x - ux) < 160 for ux, uy in used):
            label_y += 18
        used.append((x, label_y))
        label = p.label[:28]
        lx = min(x + 10, width - right - text_width(label))
        c.text(lx, label_y, label, BLACK)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(c.png())
    return out


def legend(c: Canvas, x: int, y: int) -> None:
    """What the marks mean, in one row with its top-left corner at (x, y)."""
    c.line(x, y + 7, x + 30, y + 7, ORANGE, 3)
    c.circle(x + 15, y + 7, 6, ORANGE)
    x += 40 + c.text(x + 40, y, "Pareto front") + 30
    c.circle(x + 15, y + 7, 6, BLUE)
    x += 40 + c.text(x + 40, y, "not on the front") + 30
    c.circle(x + 15, y + 7, 6, ORANGE)
    c.circle(x + 15, y + 7, 12, BLACK, fill=False)
    c.text(x + 40, y, "recommended")
