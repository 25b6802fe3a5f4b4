"""The figures of the reports, drawn with matplotlib (the Agg and SVG renderers, no display and
no pyplot state: sweeps draw from threads): accuracy against cost with the Pareto front, the
week-by-week panels of a recurring scenario, and recall at retained tokens. Each is written as a
PNG and, beside it, an SVG whose text stays text (searchable, restylable)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Colour-blind-safe (Okabe-Ito), then line styles and markers: lines of equal values stay
# apart by their dashes and markers even where their colours sit on one another.
COLORS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
DASHES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
FRONT, OTHER, OVERFLOW = "#E69F00", "#0072B2", "#C62828"
WIDTH_IN = 10.0
LABEL_CHARS = 34  # a setting's name is wrapped at this many characters on the figure


@dataclass(frozen=True)
class Point:
    label: str
    cost: float
    accuracy: float  # 0..1
    front: bool = False
    recommended: bool = False
    overflow: float = 0.0  # the share of its runs that overflowed the model's window


def style(k: int) -> dict[str, Any]:
    """The k-th series' colour, dashes and marker: no two of the first 32 series alike."""
    return {"color": COLORS[k % len(COLORS)], "linestyle": DASHES[(k // len(COLORS)) % 4],
            "marker": MARKERS[k % len(MARKERS)]}  # fmt: skip


def scatter(points: Sequence[Point], path: str | Path, *, title: str, x_label: str) -> Path:
    """Accuracy (y) against cost (x), every setting named beside its marker (settings on one
    spot share a label); the Pareto front joined, the recommended setting ringed, a setting
    whose runs overflowed the window crossed out. Returns the PNG's path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import PercentFormatter

    fig = Figure(figsize=(WIDTH_IN, 6.5), layout="constrained")
    FigureCanvasAgg(fig)  # labels are placed by their size on this renderer
    ax = fig.add_subplot()
    ax.set_title(_wrap(title, 90), fontsize=11, loc="left")
    front = sorted((p for p in points if p.front), key=lambda p: p.cost)
    if front:
        ax.plot([p.cost for p in front], [p.accuracy for p in front], color=FRONT, lw=2,
                zorder=2)  # fmt: skip
    for p in points:
        ax.scatter(p.cost, p.accuracy, s=60, color=FRONT if p.front else OTHER, zorder=3,
                   edgecolors="#333333", linewidths=0.7)  # fmt: skip
        if p.recommended:
            ax.scatter(p.cost, p.accuracy, s=260, facecolors="none", edgecolors="black",
                       linewidths=1.5, zorder=4)  # fmt: skip
        if p.overflow > 0:
            ax.scatter(p.cost, p.accuracy, s=140, marker="x", color=OVERFLOW, linewidths=2.2,
                       zorder=5)  # fmt: skip
    x_max = max((p.cost for p in points), default=0.0) * 1.15 or 1.0
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlim(left=0, right=x_max)
    _label_points(fig, ax, points, x_max)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(x_label)
    ax.set_ylabel("accuracy")
    ax.grid(True, color="#dddddd", lw=0.6)
    keys = [
        Line2D([], [], color=FRONT, lw=2, marker="o", label="Pareto front"),
        Line2D([], [], color=OTHER, lw=0, marker="o", label="not on the front"),
        Line2D([], [], color="black", lw=0, marker="o", markerfacecolor="none",
               markersize=12, label="recommended"),
        Line2D([], [], color=OVERFLOW, lw=0, marker="x", markersize=9, mew=2,
               label="overflowed (share of runs in its label)"),
    ]  # fmt: skip
    ax.legend(handles=keys, loc="lower right", fontsize=8, framealpha=0.9)
    return save(fig, path)


def _label_points(fig: Any, ax: Any, points: Sequence[Point], x_max: float) -> None:
    """Names beside markers (left of those in the right third, so they stay on the figure),
    settings at one spot in one label, each label moved down (then up) in steps until it
    overlaps no label placed before it."""
    spots: dict[tuple[float, float], list[Point]] = {}
    for p in sorted(points, key=lambda p: (-p.accuracy, p.cost, p.label)):
        spots.setdefault((round(p.cost, 9), round(p.accuracy, 6)), []).append(p)
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    for (cost, acc), group in spots.items():
        # Settings on one spot: "a\n= b", so the stack reads as one label, not two.
        names = "\n= ".join(_wrap(_name(p), LABEL_CHARS) for p in group)
        for k in range(40):
            dy = 8 - 12 * ((k + 1) // 2) * (1 if k % 2 else -1)
            moved = {"arrowprops": {"arrowstyle": "-", "color": "#888888", "lw": 0.6}} if k else {}
            left = cost > 0.66 * x_max
            text = ax.annotate(names, (cost, acc), xytext=(-9 if left else 9, dy),
                               textcoords="offset points", ha="right" if left else "left",
                               fontsize=7.5, va="center", zorder=6,
                               bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                                     "alpha": 0.8}, **moved)  # fmt: skip
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in placed):
                break
            text.remove()
        placed.append(box)


def _name(p: Point) -> str:
    overflow = f" (overflow {p.overflow:.0%})" if p.overflow else ""
    return f"{p.label}{overflow}"


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def weeks_chart(
    panels: Sequence[tuple[str, Mapping[str, Sequence[tuple[int, float]]], bool]],
    path: str | Path,
    *,
    title: str,
) -> Path:
    """Stacked line charts over weeks, one per panel `(y label, {series: [(week, value)]},
    as percent)`, each series in the same style in every panel and named in one legend."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    names = list(dict.fromkeys(n for _, series, _ in panels for n in series))
    fig = Figure(figsize=(WIDTH_IN, 2.6 * len(panels) + 1.2 + 0.25 * len(names)),
                 layout="constrained")  # fmt: skip
    fig.suptitle(_wrap(title, 90), fontsize=11, x=0.01, ha="left")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, series, percent) in zip(axes, panels, strict=True):
        for name, points in series.items():
            k = names.index(name)
            ordered = sorted(points)
            # Markers every few weeks, each series from another week: equal lines still
            # show every one of their markers.
            ax.plot([w for w, _ in ordered], [v for _, v in ordered], label=name, lw=1.6,
                    markevery=(k % 4, 4), markersize=5, **style(k))  # fmt: skip
        ax.set_ylabel(_wrap(label, 22), fontsize=9)
        if percent:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
            ax.set_ylim(-0.02, 1.05)
        ax.grid(True, color="#dddddd", lw=0.6)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel("week")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower left", fontsize=8, ncols=1, frameon=False)
    return save(fig, path)


def recall_lines(
    arms: Sequence[tuple[str, Sequence[tuple[int, float, float | None]]]],
    path: str | Path,
    *,
    title: str,
) -> Path:
    """Recall at retained tokens: per arm, accuracy (y) against the tokens in the window when
    the probe was asked (x, log scale), the fallible reader solid, the ideal reader dashed in
    the arm's colour, each arm named at the end of its line. `arms`: (label, [(bin's upper
    edge, accuracy, ideal accuracy or None)])."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    fig = Figure(figsize=(WIDTH_IN, 6.0), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(_wrap(title, 90), fontsize=11, loc="left")
    edges = sorted({e for _, rows in arms for e, _, _ in rows})
    for k, (name, rows) in enumerate(arms):
        look = style(k)
        # Each arm a hair apart on the log axis: arms with equal recall stay side by side.
        dodge = 2 ** (0.05 * (k - (len(arms) - 1) / 2))
        xs = [e * dodge for e, _, _ in rows]
        ax.plot(xs, [a for _, a, _ in rows], lw=2, label=f"{name} (fallible)",
                markevery=1, **{**look, "linestyle": "-"})  # fmt: skip
        ideal = [(e, i) for e, _, i in rows if i is not None]
        if ideal:
            ax.plot([e * dodge for e, _ in ideal], [i for _, i in ideal], lw=1, color=look["color"],
                    linestyle="--", marker=look["marker"], markerfacecolor="none",
                    label=f"{name} (ideal)")  # fmt: skip
        if rows:
            ax.annotate(name, (xs[-1], rows[-1][1]), xytext=(6, 4 - 9 * (k % 3)),
                        textcoords="offset points", fontsize=8, color=look["color"])  # fmt: skip
    if edges:
        ax.set_xscale("log", base=2)
        ax.set_xticks(edges)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v / 1000:g}k"))
        ax.set_xlim(edges[0] / 1.3, edges[-1] * 1.8)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("tokens in the window when the probe was asked (up to)")
    ax.set_ylabel("accuracy")
    ax.grid(True, color="#dddddd", lw=0.6)
    ax.legend(fontsize=8, loc="lower left", ncols=2, framealpha=0.9)
    return save(fig, path)


def save(fig: Any, path: str | Path) -> Path:
    """`path` as a PNG and the same figure beside it as an SVG with its text kept as text;
    no dates in either, so the same numbers give the same files. Returns the PNG's path."""
    from matplotlib import rc_context

    out = Path(path).with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "ctxlab"}):
        fig.savefig(out.with_suffix(".svg"), metadata={"Date": None})
    return out


def svg_of(png: Path) -> Path:
    """The SVG written beside a figure's PNG."""
    return png.with_suffix(".svg")
