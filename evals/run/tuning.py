"""Tuned baselines (`ctxlab eval --tuned`): every arm compared at its best setting.

Each arm's setting is chosen on training seeds and reported on held-out seeds, so the runs
that rank the arms are never the runs that chose their settings. The choice is the sweep's rule,
`metrics.recommend`: the cheapest setting whose accuracy interval overlaps the most accurate
one's.

    arm            default grid (2 x 2 or 2 settings; each key's middleware default first)
    full           summarize.trigger x offload.tool_token_limit
    summarize      summarize.trigger x summarize.keep
    offload        offload.tool_token_limit
    truncate       truncate.trigger x truncate.target
    mask           mask.batch x mask.keep
    context-edit   context-edit.trigger x context-edit.clear_at_least
    the others     nothing to tune: `none` and `none-unbounded` compact nothing, the ablations
                   are `full` without one technique, and the `oracle` is a bound (never tuned)

`--grid key=v1,v2` replaces (or adds) a key's values for every arm whose stack takes it, the
oracle aside; a key fixed with `--set` is swept by no grid. Settings that tie exactly on the
training seeds fall to the first in grid order, so to the middleware's defaults.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.analysis.metrics import BOUNDS, Recommendation, recommend
from evals.analysis.stability import Stability, stability
from evals.analysis.stats import DEFAULT_SEEDS, TRAIN_SEEDS
from evals.run.arms import arm_params, params_by_arm
from evals.run.cell import Cell
from evals.scenarios import get_scenario
from evals.scoring.results import EvalResult

HELDOUT_SEEDS = DEFAULT_SEEDS  # after the training seeds: 5..9 by default
# The middleware's token defaults are sized for a 128k window, and the scenarios scale them
# with their window (2,500 of 16k at small scale is 20,000 of 128k).
_SIZED_FOR = 128_000


@dataclass(frozen=True)
class WindowShare:
    """A token amount as a share of the scenario's window, for parameters that take only
    tokens (`offload.tool_token_limit`): a grid then means the same at every scale."""

    share: float

    def tokens(self, window: int) -> int:
        return max(1, round(self.share * window))


def _tokens_of_128k(tokens: int) -> WindowShare:
    return WindowShare(tokens / _SIZED_FOR)


GRIDS: dict[str, dict[str, tuple[Any, ...]]] = {
    "full": {
        "summarize.trigger": (0.85, 0.7),
        "offload.tool_token_limit": (_tokens_of_128k(20_000), _tokens_of_128k(5_000)),
    },
    "summarize": {"summarize.trigger": (0.85, 0.7), "summarize.keep": (0.1, 0.05)},
    "offload": {"offload.tool_token_limit": (_tokens_of_128k(20_000), _tokens_of_128k(5_000))},
    "truncate": {"truncate.trigger": (0.85, 0.7), "truncate.target": (0.5, 0.3)},
    "mask": {"mask.batch": (5, 10), "mask.keep": (10, 5)},
    "context-edit": {
        "context-edit.trigger": (_tokens_of_128k(100_000), _tokens_of_128k(64_000)),
        "context-edit.clear_at_least": (0.1, 0.3),
    },
}


def tuning_grid(
    arm: str,
    window: int,
    overrides: Mapping[str, Sequence[Any]] | None = None,
    *,
    fixed: Mapping[str, Any] | None = None,
) -> dict[str, list[Any]]:
    """The values each key of arm `arm` is tuned over: its default grid, with `overrides`
    replacing or adding the keys its stack takes, less the keys `fixed` sets; shares of the
    window resolved against `window`. Empty for an arm with nothing to tune."""
    if arm in BOUNDS:
        return {}
    takes = set(arm_params(arm))
    grid = {k: list(v) for k, v in GRIDS.get(arm, {}).items()}
    grid.update({k: list(v) for k, v in (overrides or {}).items() if k in takes})
    return {
        key: [v.tokens(window) if isinstance(v, WindowShare) else v for v in values]
        for key, values in grid.items()
        if key not in (fixed or {})
    }


def check_seeds(train: Sequence[int], heldout: Sequence[int]) -> None:
    """Raise unless both sets of seeds are given and share none."""
    if not train:
        raise ValueError("tuning needs at least one training seed")
    if not heldout:
        raise ValueError("tuning needs at least one held-out seed")
    shared = sorted(set(train) & set(heldout))
    if shared:
        raise ValueError(
            f"held-out seed(s) {', '.join(map(str, shared))} are also training seeds "
            f"({seed_span(train)}): a setting must be reported on seeds it was not chosen on; "
            "give --seed values outside them, or fewer --train-seeds"
        )


@dataclass(frozen=True)
class Choice:
    """The setting an arm is reported with, and why.

    `setting`: the chosen values of the keys it was tuned over; `params`: what its runs get
    (the fixed `--set` values plus the setting); `tried`: how many settings ran on the
    training seeds (a grid of one setting is run as given); `why`: the recommendation behind
    the choice, with the training numbers; `stability`: whether the training seeds less one
    make the same choice (None with one training seed)."""

    arm: str
    setting: dict[str, Any]
    params: dict[str, Any]
    tried: int
    why: Recommendation | None
    stability: Stability | None = None

    @property
    def unstable(self) -> bool:
        return self.stability is not None and not self.stability.stable

    @property
    def tuned(self) -> bool:
        return self.why is not None

    def describe(self) -> str:
        if self.why is None:
            given = f" with {_settings(self.setting)}" if self.setting else ""
            return f"{self.arm}: nothing to tune; run as given{given}"
        steady = f" {self.stability.explain()}" if self.stability else ""
        return (
            f"{self.arm}: chose {_settings(self.setting)} of {self.tried} settings on the "
            f"training seeds. {self.why.explain(unstable=self.unstable)}{steady}"
        )

    def training(self) -> dict[str, Any] | None:
        """The training numbers behind the choice, for JSON."""
        if self.why is None:
            return None
        pick = self.why.picks[0]
        return {
            "settings_tried": self.tried,
            "seeds": list(pick.seeds),
            "accuracy_mean": round(pick.accuracy.mean, 6),
            "accuracy_ci95": [round(v, 6) for v in pick.accuracy.as_list()],
            "input_tokens_mean": round(pick.input_tokens.mean, 1),
            "cost_usd_mean": round(pick.cost_usd.mean, 6),
            "tied_settings": [c.label for c in self.why.candidates],
            "why": self.why.explain(unstable=self.unstable),
            "unstable": self.unstable,
            "stability": self.stability.to_dict() if self.stability else None,
        }


@dataclass(frozen=True)
class TuningPlan:
    """Which settings each arm tries on which seeds, and where the choices are reported.

    `base` carries what every run shares: scenario, scale, model, reader, window, judge and
    the fixed (`--set`) parameters; each cell takes its arm, setting and seed."""

    base: Cell
    grids: dict[str, dict[str, list[Any]]]
    train_seeds: tuple[int, ...]
    heldout_seeds: tuple[int, ...]

    def settings(self, arm: str) -> list[dict[str, Any]]:
        grid = self.grids[arm]
        return [dict(zip(grid, vals, strict=True)) for vals in itertools.product(*grid.values())]

    def training_cells(self) -> list[Cell]:
        """Every setting of every arm with more than one, on every training seed."""
        return [
            self._cell(arm, setting, seed)
            for arm in self.grids
            if len(self.settings(arm)) > 1
            for setting in self.settings(arm)
            for seed in self.train_seeds
        ]

    def choose(self, training: Sequence[EvalResult]) -> list[Choice]:
        """Each arm's setting: the recommendation among its training runs (the first in grid
        order on an exact tie); an arm with one setting keeps it."""
        choices = []
        for arm, grid in self.grids.items():
            options = self.settings(arm)
            if len(options) == 1:
                choices.append(Choice(arm, options[0], self._params(arm, options[0]), 1, None))
                continue
            runs = [r for r in training if r.strategy == arm]
            why = recommend(runs)
            if why is None:
                raise ValueError(f"no training runs of {arm!r} to choose its setting from")
            setting = {key: why.picks[0].params[key] for key in grid}
            choices.append(Choice(arm, setting, self._params(arm, setting), len(options), why,
                                  stability(runs)))  # fmt: skip
        return choices

    def heldout_cells(self, choices: Sequence[Choice]) -> list[Cell]:
        return [self._cell(c.arm, c.setting, seed) for c in choices for seed in self.heldout_seeds]

    def every_setting(self) -> list[Cell]:
        """One cell per arm and setting, to check them all before any runs."""
        return [self._cell(arm, s, self.heldout_seeds[0]) for arm in self.grids
                for s in self.settings(arm)]  # fmt: skip

    def mark(self, results: Sequence[EvalResult], choices: Sequence[Choice]) -> list[EvalResult]:
        """The held-out runs of tuned arms, labelled with the seeds they were tuned on."""
        tuned = {c.arm for c in choices if c.tuned}
        return [replace(r, train_seeds=self.train_seeds) if r.strategy in tuned else r
                for r in results]  # fmt: skip

    def _params(self, arm: str, setting: Mapping[str, Any]) -> dict[str, Any]:
        # A fixed (`--set`) key goes only to the arms whose stack takes it.
        return {**params_by_arm(self.base.params, [arm], strict=False)[arm], **setting}

    def _cell(self, arm: str, setting: Mapping[str, Any], seed: int) -> Cell:
        return replace(self.base, strategy=arm, params=self._params(arm, setting), seed=seed)


def plan(
    base: Cell,
    arms: Sequence[str],
    *,
    train_seeds: Sequence[int] = range(TRAIN_SEEDS),
    heldout_seeds: Sequence[int] = range(TRAIN_SEEDS, TRAIN_SEEDS + HELDOUT_SEEDS),
    overrides: Mapping[str, Sequence[Any]] | None = None,
) -> TuningPlan:
    """The tuning of `arms` on `base`'s scenario. Raises ValueError on overlapping seeds, a
    `--grid` key no arm here takes (or without values), or a key both fixed and swept."""
    check_seeds(train_seeds, heldout_seeds)
    params_by_arm(base.params, arms)  # a fixed key no arm here takes is refused
    overrides = overrides or {}
    takes = sorted({k for arm in arms if arm not in BOUNDS for k in arm_params(arm)})
    for key, values in overrides.items():
        if key not in takes:
            raise ValueError(
                f"--grid {key}: no arm tuned here ({', '.join(arms)}) takes it; keys they take: "
                f"{', '.join(takes)}"
            )
        if not values:
            raise ValueError(f"--grid {key}= gives no values; expected {key}=v1,v2")
        if key in base.params:
            raise ValueError(f"{key} is both fixed (--set) and tuned (--grid); give one")
    window = get_scenario(base.scenario, train_seeds[0], base.scale).window
    if base.window is not None:
        window = min(window, base.window)
    grids = {
        arm: tuning_grid(arm, window, overrides, fixed=base.params) for arm in dict.fromkeys(arms)
    }
    return TuningPlan(base, grids, tuple(train_seeds), tuple(heldout_seeds))


def _settings(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(setting.items()))


def seed_span(seeds: Sequence[int]) -> str:
    """0, 1, 2 -> "0-2"; other sets listed."""
    ordered = sorted(seeds)
    if len(ordered) > 1 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))
