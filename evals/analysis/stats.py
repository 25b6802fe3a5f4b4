"""Statistics over seeds: means with percentile bootstrap intervals, paired differences between
two arms on the same seeds and probes, and ties.

Pure functions over plain numbers; the resampling seed is fixed, so an interval is as
reproducible as the runs behind it. Two arms whose intervals overlap are a tie: they are never
ranked against each other."""

from __future__ import annotations

import math
import random
import statistics
import sys
from array import array
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

RESAMPLES = 2_000
LEVEL = 0.95
# The seeds a report runs unless told otherwise: enough for an interval to mean something.
DEFAULT_SEEDS = 5
# The seeds `ctxlab eval --tuned` chooses each arm's setting on (0..N-1); it reports on the
# DEFAULT_SEEDS seeds that follow. As many as a report: the choice rests on intervals too, and
# over three seeds an interval is the spread of three values.
TRAIN_SEEDS = 5


@dataclass(frozen=True)
class Interval:
    """A mean and its bootstrap interval [low, high]."""

    mean: float
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        return self.low <= other.high and other.low <= self.high

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def as_list(self) -> list[float]:
        return [self.low, self.high]


def bootstrap(
    values: Sequence[float], *, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> Interval:
    """The mean of `values` and its percentile bootstrap interval. One value (or values all
    equal) gives a point: there is no spread to resample."""
    if not values:
        raise ValueError("no values to bootstrap")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if len(set(values)) == 1:  # exactly the value: equal arms must compare equal
        return Interval(values[0], values[0], values[0])
    mean = statistics.fmean(values)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[int(tail * resamples)]
    high = means[int((1 - tail) * resamples) - 1]
    # A resampled mean can round a hair past the sample mean; the interval must hold it.
    return Interval(mean, min(low, mean), max(high, mean))


def paired_difference(
    arm: Mapping[Hashable, float],
    base: Mapping[Hashable, float],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """`arm - base`, paired by key (a seed, or a seed and a probe): the mean difference and
    its bootstrap interval over the keys both have. Keys only one side has are left out."""
    common = [k for k in arm if k in base]
    if not common:
        raise ValueError("no seeds or probes in common: a paired difference needs both arms")
    diffs = [arm[k] - base[k] for k in common]
    return bootstrap(diffs, resamples=resamples, level=level, seed=seed)


def tied(a: Interval, b: Interval) -> bool:
    """Whether two arms' intervals overlap, so neither may be ranked above the other."""
    return a.overlaps(b)


def no_difference(diff: Interval) -> bool:
    """Whether a paired difference's interval holds 0 (the arms tie)."""
    return diff.contains(0.0)


def trace_bootstrap(
    traces: Mapping[Hashable, Sequence[float]],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """The pooled mean of every trace's values (say, each probe's 1/0) with an interval that
    resamples whole traces, not values: probes of one trace share its agent, task and window,
    so they are not independent, and resampling them alone makes the interval too narrow.
    Traces without values are left out; one trace gives a point."""
    groups = [list(v) for v in traces.values() if len(v)]
    if not groups:
        raise ValueError("no traces with values to bootstrap")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    sums = [math.fsum(g) for g in groups]
    sizes = [len(g) for g in groups]
    mean = math.fsum(sums) / sum(sizes)
    flat = {v for g in groups for v in g}
    if len(groups) == 1 or len(flat) == 1:
        return Interval(mean, mean, mean)
    n = len(groups)
    picks = draws(random.Random(seed), n, n * resamples)
    means = []
    for start in range(0, n * resamples, n):
        picked = picks[start : start + n]
        means.append(math.fsum(map(sums.__getitem__, picked)) / sum(map(sizes.__getitem__, picked)))
    means.sort()
    tail = (1 - level) / 2
    low = means[int(tail * resamples)]
    high = means[int((1 - tail) * resamples) - 1]
    return Interval(mean, min(low, mean), max(high, mean))


def draws(rng: random.Random, n: int, count: int) -> list[int]:
    """`count` numbers of `rng.randrange(n)`, the same ones in the same order, without a call
    per number (a suite's summary draws hundreds of thousands). randrange takes the top
    `n.bit_length()` bits of the generator's next 32-bit word, again while they reach `n`;
    `getrandbits` hands out many words at once, the first least significant. `rng` ends past
    where randrange would have left it: draw nothing else from it."""
    k = n.bit_length()
    if k > 32:
        return [rng.randrange(n) for _ in range(count)]
    # Up to 8 bits, the top byte of a word holds them: the bytes whose bits reach `n` are
    # deleted and the others turned into their bits, without a Python step per word.
    top = bytes(b >> (8 - k) for b in range(256)) if k <= 8 else b""
    over = bytes(b for b in range(256) if b >> (8 - k) >= n) if k <= 8 else b""
    out: list[int] = []
    while len(out) < count:
        # The words `count` numbers take on average (each is kept with chance n / 2**k).
        size = ((count - len(out)) << k) // n + 64
        raw = rng.getrandbits(32 * size).to_bytes(4 * size, "little")
        if k <= 8:
            out += raw[3::4].translate(top, over)
            continue
        words = array("I", raw)
        if sys.byteorder == "big":
            words.byteswap()
        out += [r for w in words if (r := w >> (32 - k)) < n]
    del out[count:]
    return out


def paired_trace_difference(
    arm: Mapping[Hashable, Mapping[Hashable, float]],
    base: Mapping[Hashable, Mapping[Hashable, float]],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """`arm - base` paired within each trace by key (a seed and a probe), resampled by trace
    (`trace_bootstrap` over the per-key differences). Traces and keys only one side has are
    left out."""
    diffs = {
        trace: [values[k] - base[trace][k] for k in values if k in base[trace]]
        for trace, values in arm.items()
        if trace in base
    }
    if not any(diffs.values()):
        raise ValueError("no traces and probes in common: a paired difference needs both arms")
    return trace_bootstrap(diffs, resamples=resamples, level=level, seed=seed)
