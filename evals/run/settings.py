"""A cell's settings from `--set KEY=VALUE` (or a Python mapping), split once: dotted keys are
the harness's `StrategySettings` (`summarize.trigger`), the others the scenario's
`ScenarioOptions` (`weeks`). Both travel unchanged to the middleware and the scenario."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.scenarios.options import ScenarioOptions
from harness.settings import StrategySettings


@dataclass(frozen=True, eq=False, repr=False)
class Settings(Mapping[str, Any]):
    """The strategy settings and scenario options of a cell. As a mapping it reads as the
    dotted keys and options together, as results record them (`{"summarize.trigger": 0.7}`)."""

    strategy: StrategySettings = field(default_factory=StrategySettings)
    scenario: ScenarioOptions = field(default_factory=ScenarioOptions)

    @classmethod
    def of(cls, params: Mapping[str, Any] | Settings | None) -> Settings:
        """Split `params`: the one place a key's dot decides whose it is."""
        if isinstance(params, Settings):
            return params
        params = params or {}
        return cls(
            StrategySettings.parse({k: v for k, v in params.items() if "." in k}),
            ScenarioOptions.of({k: v for k, v in params.items() if "." not in k}),
        )

    @classmethod
    def parse(cls, items: Iterable[str]) -> Settings:
        """`--set` as given, in order: `["summarize.trigger=0.7", "weeks=52"]`."""
        return cls.of(dict(parse_setting(item) for item in items))

    def only(self, keys: Iterable[str]) -> Settings:
        """These settings with only the strategy settings in `keys` (options all kept)."""
        return Settings(self.strategy.only(keys), self.scenario)

    def _all(self) -> dict[str, Any]:
        return {**self.strategy.dotted(), **self.scenario.as_dict()}

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


def parse_setting(text: str) -> tuple[str, Any]:
    """`summarize.trigger=0.7` -> ("summarize.trigger", 0.7). Values are JSON when they parse
    (numbers, true/false, lists), else strings ("messages:40" stays a string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected key=value, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """`["summarize.trigger=0.6,0.85"]` -> {"summarize.trigger": [0.6, 0.85]}: the `--grid`
    options of `ctxlab sweep` and `ctxlab eval --tuned`."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--grid expects key=v1,v2; got {item!r}")
        grid[key.strip()] = [parse_setting(f"{key}={v}")[1] for v in raw.split(",") if v]
    return grid


__all__ = ["Settings", "parse_grid", "parse_setting"]
