"""Range checks for middleware constructor parameters.

A parameter reaches a constructor from Python or from `--set key=value` (parsed as JSON), so a
count can arrive as -5, 1.5, "high" or True. Each check raises a `ValueError` that names the
dotted key (`offload.tool_token_limit`) and the valid range at construction, so a degenerate
value never reaches a loop that would spin on it.
"""

from __future__ import annotations

from harness.middleware.cutoff import Threshold, ThresholdSpec


def whole(key: str, value: object, *, minimum: int = 0) -> int:
    """`value` as an int of at least `minimum` (an integral float such as 1e3 is accepted)."""
    return _whole(key, value, minimum, also="")


def whole_or_none(key: str, value: object, *, minimum: int = 0) -> int | None:
    """`whole`, or None."""
    return None if value is None else _whole(key, value, minimum, also=" or null")


def _whole(key: str, value: object, minimum: int, *, also: str) -> int:
    n = int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise ValueError(f"{key} must be a whole number >= {minimum}{also}, got {value!r}")
    return n


def number(
    key: str, value: object, *, low: float = 0.0, high: float | None = None, open_high: bool = False
) -> float:
    """`value` as a float in [low, high] ([low, high) when `open_high`; unbounded above when
    `high` is None)."""
    return _number(key, value, low, high, open_high, also="")


def number_or_none(key: str, value: object, *, low: float = 0.0) -> float | None:
    """`number` (unbounded above), or None."""
    return None if value is None else _number(key, value, low, None, False, also=" or null")


def _number(
    key: str, value: object, low: float, high: float | None, open_high: bool, *, also: str
) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        x = float(value)
        if x >= low and (high is None or (x < high if open_high else x <= high)):
            return x
    upper = "" if high is None else f" and {'<' if open_high else '<='} {high:g}"
    raise ValueError(f"{key} must be a number >= {low:g}{upper}{also}, got {value!r}")


def flag(key: str, value: object) -> bool:
    """`value` as a bool: "yes", 1 or "false" are refused rather than read as truthy."""
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def threshold(key: str, spec: ThresholdSpec | object) -> Threshold:
    """`Threshold.parse(spec)`, its error prefixed with `key`."""
    try:
        return Threshold.parse(spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{key}: {exc}") from None


__all__ = ["flag", "number", "number_or_none", "threshold", "whole", "whole_or_none"]
