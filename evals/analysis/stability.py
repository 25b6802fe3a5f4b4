"""Whether a recommendation survives a change of seeds: the sweep's rule (`metrics.recommend`)
re-run on subsets of the seeds, and how many of them pick the same setting.

An interval over a handful of seeds is wide, and which setting is "cheapest among those tied
with the best" can flip with one seed: on one sweep the rule picked 0.7 on 16 of the 28
two-seed subsets of eight seeds and 0.9 on the other 12. A recommendation that some subset
disagrees with is reported as unstable, so no one takes it for a finding. The subsets are
every one of `size` seeds, by default all seeds but one (leave one out: as many subsets as
seeds, and the largest that still differ)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.analysis.metrics import recommend
from evals.scoring.results import EvalResult


@dataclass(frozen=True)
class Stability:
    """The recommendation on all seeds (`picked`, its labels), and on each subset of `size`
    seeds: `agree` of the `subsets` pick the same, `others` counts what the rest picked."""

    picked: tuple[str, ...]
    size: int
    seeds: int
    subsets: int
    agree: int
    others: dict[str, int]

    @property
    def stable(self) -> bool:
        return self.agree == self.subsets

    def explain(self) -> str:
        how = (
            "leaving one seed out"
            if self.size == self.seeds - 1
            else f"on subsets of {self.size} of the {self.seeds} seeds"
        )
        if self.stable:
            return f"Stable: the same setting is recommended on all {self.subsets} subsets ({how})."
        rest = "; ".join(f"{name} on {n}" for name, n in self.others.items())
        return (
            f"Unstable: {how}, the recommendation is {' and '.join(self.picked)} on only "
            f"{self.agree} of {self.subsets} subsets ({rest}); run more seeds before relying "
            "on it."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "stable": self.stable,
            "subset_size": self.size,
            "subsets": self.subsets,
            "agree": self.agree,
            "others": dict(self.others),
            "why": self.explain(),
        }


def stability(results: Sequence[EvalResult], *, size: int | None = None) -> Stability | None:
    """The recommendation over `results`, re-made on every subset of `size` of their seeds
    (default: all but one). None with fewer than two seeds (no subset to compare) or nothing
    to recommend."""
    seeds = sorted({r.seed for r in results})
    picked = recommend(results)
    if len(seeds) < 2 or picked is None:
        return None
    size = len(seeds) - 1 if size is None else size
    if not 1 <= size < len(seeds):
        raise ValueError(f"subset size must be 1 to {len(seeds) - 1}, got {size}")
    picks: Counter[tuple[str, ...]] = Counter()
    for subset in itertools.combinations(seeds, size):
        keep = set(subset)
        again = recommend([r for r in results if r.seed in keep])
        picks[tuple(again.labels) if again else ()] += 1
    mine = tuple(picked.labels)
    others = {" and ".join(labels) or "nothing": n for labels, n in picks.most_common()
              if labels != mine}  # fmt: skip
    return Stability(mine, size, len(seeds), sum(picks.values()), picks[mine], others)
