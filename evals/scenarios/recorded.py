"""What a scenario file records of the run it was imported from, beyond the run itself: the
recorded harness's own compactions (for the `original` arm) and the values the sanity
check's `relabel` may swap."""

from __future__ import annotations

import pydantic

from evals.errors import ScenarioFileError
from evals.scenarios.format import CompactionSpec, ProbeSpec, ScenarioFile


def recorded_compactions(spec: ScenarioFile, path: str) -> tuple[CompactionSpec, ...]:
    """The recorded harness's compactions in `source.compactions`; refused in one line."""
    raw = spec.source.get("compactions") or []
    try:
        if not isinstance(raw, list):
            raise TypeError(f"a {type(raw).__name__}, not a list")
        return tuple(CompactionSpec.model_validate(c) for c in raw)
    except (pydantic.ValidationError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise ScenarioFileError(f"{path}: source.compactions: {first}") from None


def relabelled(probes: list[ProbeSpec]) -> tuple[str, ...]:
    """What the sanity check's `relabel` swaps in a recorded run's tool results: the values
    of its uncarried tool probes named by role, grouped by shape and, within a shape, by role
    (the key or symbol), so values of the same role pair first (`entity_pairs` pairs
    neighbours): a question then finds another value of its kind where its own stood."""
    named = [p for p in probes if p.role is not None and p.source == "tool" and not p.carried]
    named.sort(key=lambda p: (p.role.shape if p.role else "", p.role.terms[:1] if p.role else []))
    return _apart(list(dict.fromkeys(p.answer for p in named)))


def _apart(values: list[str]) -> tuple[str, ...]:
    """`values` reordered so that no neighbour pair (a swap) holds one value inside the other:
    swapping `cls.keys` with `cls.keys.add` turns `cls.keys.add(k)` into `cls.keys(k)`, where
    the first value still stands, and a question about it is answered as if nothing moved."""
    rest, out = list(values), []
    while rest:
        a = rest.pop(0)
        b = next((v for v in rest if a not in v and v not in a), None)
        out.append(a)
        if b is not None:
            rest.remove(b)
            out.append(b)
    return tuple(out)
