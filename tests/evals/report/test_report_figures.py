"""The figures are matplotlib's, written as PNG and SVG: read back, they have a size, every
arm's name is on them as text, equal lines are told apart, and an arm that overflowed on
every run is named with its overflow."""

import struct
from pathlib import Path

from helpers.evals import result

from evals.report.markdown import write_plot, write_weeks_plot
from evals.report.plot import recall_lines, style


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_accuracy_against_cost_names_every_arm_and_keeps_overflow_off_the_front(tmp_path) -> None:
    runs = [
        *(result("full", s, accuracy=a, cost_usd=0.10) for s, a in enumerate((0.9, 0.8, 0.85))),
        *(result("mask [mask.keep=6]", s, accuracy=0.5, cost_usd=0.04) for s in range(3)),
        *(result("none", s, accuracy=0.1, cost_usd=0.01, overflowed=True) for s in range(3)),
    ]
    png = write_plot(runs, tmp_path / "p.png", title="competitive-analysis <small>")
    width, height = png_size(png)
    assert 800 <= width <= 1400 and 500 <= height <= 1000
    svg = png.with_suffix(".svg").read_text()
    assert "<text" in svg  # text kept as text, not outlines
    for name in ("full", "mask [mask.keep=6]", "none (overflow 100%)", "Pareto front",
                 "competitive-analysis &lt;small&gt;", "cost per run (USD)"):  # fmt: skip
        assert name in svg, name


def test_equal_lines_stay_distinguishable(tmp_path) -> None:
    looks = {tuple(style(k).values()) for k in range(32)}
    assert len(looks) == 32
    same = [(1000, 0.9, 1.0), (2000, 0.8, 0.9), (4000, 0.7, 0.8)]
    png = recall_lines([("full", same), ("mask", same)], tmp_path / "r.png", title="recall")
    svg = png.with_suffix(".svg").read_text()
    assert png_size(png)[0] >= 800
    for name in ("full (fallible)", "mask (ideal)", "tokens in the window"):
        assert name in svg


def test_the_weeks_chart_names_each_setting(tmp_path) -> None:
    week = {"memory_tokens": 100, "input_tokens": 1000, "cost_usd": 0.01, "accuracy": 0.8,
            "probes": {"pref": 1.0}}  # fmt: skip
    runs = [result("full", s, weeks=(week, week, week), params={"memory.policy": policy})
            for policy in ("append", "off") for s in range(2)]  # fmt: skip
    png = write_weeks_plot(runs, tmp_path / "w.png", title="weeks")
    svg = png.with_suffix(".svg").read_text()
    assert "full, memory.policy=append" in svg and "full, memory.policy=off" in svg
    assert png_size(png)[1] > 400
