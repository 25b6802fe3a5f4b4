"""A scenario's own options (`--set weeks=52`): the keys without a dot, which the scenario's
builder takes (its `PARAMS`), as opposed to the dotted strategy settings of the harness."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScenarioOptions:
    """`weeks=52` and the like, in the order given; read-only."""

    items: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, options: Mapping[str, Any] | ScenarioOptions | None) -> ScenarioOptions:
        if isinstance(options, ScenarioOptions):
            return options
        return cls(tuple((options or {}).items()))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


__all__ = ["ScenarioOptions"]
