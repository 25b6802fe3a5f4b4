"""The synthetic long-run scenarios, generated deterministically from a seed and a scale."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals.errors import UnknownScenarioError
from evals.scenarios.base import SCALES, Scenario, ScenarioSession, check_scale, load_spec
from evals.scenarios.from_file import is_scenario_file, load_scenario_file, read_spec

# name -> module with `build(seed, scale) -> Scenario`
SCENARIOS = {
    "competitive-analysis": "evals.scenarios.competitive_analysis",
    "support-transcript": "evals.scenarios.support_transcript",
    "research-subagents": "evals.scenarios.research_subagents",
    "long-horizon": "evals.scenarios.long_horizon",
}


def list_scenarios() -> list[str]:
    return list(SCENARIOS)


def scenario_summary(name: str) -> dict[str, Any]:
    """Name, title and description from the spec, without generating anything (a scenario
    file is validated and read)."""
    if is_scenario_file(name):
        loaded = read_spec(name)
        return {"name": loaded.name, "title": loaded.title, "description": loaded.description}
    spec = load_spec(_check(name))
    return {"name": name, "title": spec.title, "description": spec.description}


def get_scenario(
    name: str, seed: int = 0, scale: str = "small", options: Mapping[str, Any] | None = None
) -> Scenario:
    """The scenario `name` for `seed` and `scale`, or the scenario file `name` (a path ending
    in .yaml or .yml: evals/scenarios/from_file.py). `options`: the scenario's own parameters
    (`{"weeks": 52}`; keys without a dot, see `check_options`). Cached: a scenario is
    immutable data and pure tools, so every cell of a sweep can share one."""
    check_options(name, options or {})
    if is_scenario_file(name):
        return load_scenario_file(name, seed, scale)
    return _built_in(name, seed, scale, tuple(sorted((options or {}).items())))


def check_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise ValueError naming an option scenario `name` does not take, or a bad value."""
    takes: dict[str, Any] = {}
    if not is_scenario_file(name):
        takes = getattr(importlib.import_module(SCENARIOS[_check(name)]), "PARAMS", {})
    for key, value in options.items():
        if key not in takes:
            have = f"its parameters: {', '.join(takes)}" if takes else "it takes none"
            raise ValueError(
                f"scenario {name!r} has no parameter {key!r} ({have}; strategy parameters "
                "have a dot: memory.policy)"
            )
        takes[key](value)


@functools.lru_cache(maxsize=16)
def _built_in(name: str, seed: int, scale: str, options: tuple[tuple[str, Any], ...]) -> Scenario:
    module = importlib.import_module(SCENARIOS[_check(name)])
    return module.build(seed, check_scale(scale), **dict(options))


def export_scenario(scenario: Scenario, directory: str | Path) -> list[Path]:
    """Write a scenario to files: its description, sessions, plan and probes as JSON, and the
    generated data (exports, articles, transcripts) as they are."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    documents: dict[str, Any] = {
        "scenario.json": scenario.describe(),
        "sessions.json": [_session(s) for s in scenario.sessions],
        "probes.json": [asdict(p) for p in scenario.probes],
        "plan.json": asdict(scenario.plan),
    }
    written = []
    for name, doc in documents.items():
        path = root / name
        path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
        written.append(path)
    for relative, text in scenario.files().items():
        path = root / "data" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _session(s: ScenarioSession) -> dict[str, Any]:
    return {"id": s.id, "thread": s.thread, "turns": [asdict(t) for t in s.turns]}


def _check(name: str) -> str:
    if name.lower().endswith((".yaml", ".yml")):
        raise UnknownScenarioError(f"no scenario file {name}")
    if name not in SCENARIOS:
        raise UnknownScenarioError(
            f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}"
        )
    return name


__all__ = [
    "SCALES",
    "SCENARIOS",
    "Scenario",
    "UnknownScenarioError",
    "check_options",
    "export_scenario",
    "get_scenario",
    "list_scenarios",
    "scenario_summary",
]
