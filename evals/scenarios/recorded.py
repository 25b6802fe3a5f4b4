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
    """What the sanity check's `relabel` swaps in a recorded run's tool results, in pairs
    (`entity_pairs` pairs neighbours): the values of its uncarried tool probes named by role,
    paired within a shape, each with a value of another role where one is left (the `agentId`
    of one task with a file's name, not with another task's `agentId`: a reader that falls back
    on the newest `agentId` in view would find the partner's question's answer there). A value
    with no partner of its shape is left out: relabel leaves it, and the check lets it pass."""
    named = [p for p in probes if p.role is not None and p.source == "tool" and not p.carried]
    out: list[str] = []
    for shape in dict.fromkeys(p.role.shape for p in named if p.role):
        mine = [p for p in named if p.role and p.role.shape == shape]
        mine.sort(key=lambda p: p.role.terms[:1] if p.role else [])
        roles: dict[str, list[str]] = {}
        for p in mine:
            roles.setdefault(p.answer, p.role.terms[:1] if p.role else [])
        out += _apart([(v, r) for v, r in roles.items() if v not in out])
    return tuple(out)


def _apart(values: list[tuple[str, list[str]]]) -> list[str]:
    """`values` (each with its role) as pairs (first with second, ...), of another role where
    one is left, of which neither gives the other away; each value without a partner left
    out. A value inside the other: swapping `cls.keys` with `cls.keys.add` turns
    `cls.keys.add(k)` into `cls.keys(k)`, where the first value still stands. Line numbers
    next to each other: swapping 1207 (the blank line before a `def`) with 1208 (the `def`)
    puts 1207 on the `def`'s line, where a reader that finds the blank line by the `def` reads
    it as before."""
    rest, out = list(values), []
    while rest:
        a, role = rest.pop(0)
        fits = [v for v in rest if not _tangled(a, v[0])]
        b = next((v for v in fits if v[1] != role), fits[0] if fits else None)
        if b is not None:
            rest.remove(b)
            out += [a, b[0]]
    return out


def _tangled(a: str, b: str) -> bool:
    return a in b or b in a or a.isdigit() and b.isdigit() and abs(int(a) - int(b)) <= 1
