"""Progress of a long command when its output is piped (CI logs, `| tee`): a line on stderr at
most every `every` seconds with what is done and an estimate of what is left, so a run of
minutes is never silent (and one of seconds adds nothing). On a terminal the commands draw a
Rich bar instead (`rich_bar`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress


class PipedProgress:
    """Counts finished units and says so now and then; the estimate is the mean time of a
    finished unit times the units left."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        unit: str = "runs",
        every: float = 10.0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.unit, self.every = label, total, unit, every
        self._stream = stream
        self._clock = clock
        self._start = clock()
        self._said = self._start

    def advance(self, done: int, note: str = "") -> None:
        """`done` units of `total` have finished (the last just now)."""
        now = self._clock()
        # A batch shorter than `every` says nothing; a long one also says when it ended.
        finished_long = done >= self.total and self._said > self._start
        if now - self._said < self.every and not finished_long:
            return
        self._said = now
        print(self.line(done, now - self._start, note), file=self._stream or sys.stderr, flush=True)

    def line(self, done: int, elapsed: float, note: str = "") -> str:
        text = f"{self.label}: {done}/{self.total} {self.unit} done, {_duration(elapsed)} elapsed"
        if 0 < done < self.total:
            text += f", about {_duration(elapsed / done * (self.total - done))} left"
        return f"{text} ({note})" if note else text


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return (
        f"{minutes} min {seconds:02d} s"
        if minutes < 60
        else f"{minutes // 60} h {minutes % 60:02d} min"
    )


def rich_bar(head: str, tail: str | None = None, **options: Any) -> Progress:
    """The terminal's bar of a batch (eval runs, sweep cells): `head`, the bar, done of total,
    the time taken and the time left, then `tail`; `options` go to `rich.progress.Progress`."""
    from rich.progress import (  # Rich only once a bar is drawn: the CLI starts faster
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn(head), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), *([TextColumn(tail)] if tail else [])]  # fmt: skip
    return Progress(*columns, **options)
