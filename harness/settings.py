"""Strategy settings: the middleware constructor parameters a strategy runs with, grouped by
middleware, parsed once from dotted keys (`{"summarize.trigger": 0.7}`, `--set
summarize.trigger=0.7`) and carried unchanged to the stack that builds the middleware.

Which keys a stack takes depends on its strategy, so `for_stack` checks them against the
middleware it is building; the values are range-checked by the constructors themselves
(`middleware/params.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from harness.errors import HarnessError


def _frozen(groups: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({name: MappingProxyType(dict(p)) for name, p in groups.items()})


@dataclass(frozen=True)
class StrategySettings:
    """`{"summarize": {"trigger": 0.7}, "offload": {"tool_token_limit": 5000}}`, read-only.
    Build it with `StrategySettings.parse` from dotted keys."""

    groups: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _frozen({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", _frozen(self.groups))

    @classmethod
    def parse(cls, params: Mapping[str, Any] | StrategySettings | None) -> StrategySettings:
        """Group dotted keys by the middleware before the dot. A key without one names no
        middleware: an error (scenario options are split off before this)."""
        if isinstance(params, StrategySettings):
            return params
        groups: dict[str, dict[str, Any]] = {}
        for key, value in (params or {}).items():
            owner, dot, param = key.partition(".")
            if not dot or not owner or not param:
                raise HarnessError(
                    f"unknown strategy parameter {key!r}: strategy parameters are "
                    "<middleware>.<parameter>, e.g. summarize.trigger"
                )
            groups.setdefault(owner, {})[param] = value
        return cls(groups)

    def dotted(self) -> dict[str, Any]:
        """Back to dotted keys, as runs record them."""
        return {f"{name}.{k}": v for name, p in self.groups.items() for k, v in p.items()}

    def keys(self) -> list[str]:
        return list(self.dotted())

    def only(self, keys: Iterable[str]) -> StrategySettings:
        """The settings whose dotted key is in `keys`."""
        wanted = set(keys)
        return StrategySettings.parse({k: v for k, v in self.dotted().items() if k in wanted})

    def over(self, defaults: StrategySettings) -> StrategySettings:
        """`defaults` with these settings in their place where both set a key."""
        return StrategySettings.parse({**defaults.dotted(), **self.dotted()})

    def for_stack(
        self, valid: Iterable[str], names: Iterable[str], *, strict: bool = True, label: str = ""
    ) -> dict[str, dict[str, Any]]:
        """The constructor parameters of each middleware in `names`, checked against the
        `valid` dotted keys of their constructors. Keys for other middleware raise when
        `strict`, else are left out (a subagent on another strategy ignores its parent's)."""
        valid, names = set(valid), set(names)
        grouped: dict[str, dict[str, Any]] = {}
        for key, value in self.dotted().items():
            owner, _, param = key.partition(".")
            if key not in valid:
                if strict or owner in names:
                    raise HarnessError(
                        f"unknown strategy parameter {key!r} for {label or 'this stack'}; valid "
                        f"keys: {', '.join(sorted(valid))}"
                    )
                continue
            grouped.setdefault(owner, {})[param] = value
        return grouped

    def __bool__(self) -> bool:
        return bool(self.groups)

    def __reduce__(self) -> tuple[Any, ...]:
        # A read-only mapping does not pickle; a cell carrying these crosses to worker processes.
        return (StrategySettings.parse, (self.dotted(),))


__all__ = ["StrategySettings"]
