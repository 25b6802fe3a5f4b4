"""A long command piped into a log says where it is now and then, with an estimate."""

from __future__ import annotations

import io

from flows.progress import PipedProgress


def test_piped_progress_speaks_every_few_seconds_and_at_the_end() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = PipedProgress("eval", 4, every=10, stream=out, clock=lambda: now[0])
    for done, at in enumerate((3.0, 12.0, 15.0, 30.0), 1):
        now[0] = at
        progress.advance(done, f"cell {done}")
    lines = out.getvalue().splitlines()
    assert lines == [
        "eval: 2/4 runs done, 12 s elapsed, about 12 s left (cell 2)",
        "eval: 4/4 runs done, 30 s elapsed (cell 4)",
    ]


def test_long_estimates_read_in_minutes_and_hours() -> None:
    progress = PipedProgress("sweep", 100, unit="cells")
    assert (
        progress.line(1, 95.0)
        == "sweep: 1/100 cells done, 1 min 35 s elapsed, about 2 h 36 min left"
    )


def test_a_batch_shorter_than_the_interval_says_nothing() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = PipedProgress("eval", 2, every=10, stream=out, clock=lambda: now[0])
    for done, at in enumerate((2.0, 4.0), 1):
        now[0] = at
        progress.advance(done)
    assert out.getvalue() == ""
