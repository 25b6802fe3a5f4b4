"""What a scenario is: sessions of user turns, the recorded plan, probes with exact answers,
the tools over the generated data, and the sizes of each scale."""

from __future__ import annotations

import functools
import hashlib
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from evals.scenarios.format import CompactionSpec
from evals.simulated.plan import Act, Answer, Cue, Plan, PlanTurn, Step
from harness.middleware.subagents import SubAgent
from harness.profiles import ModelProfile, get_profile
from harness.tools import Tool

Scale = Literal["small", "full"]
SCALES: tuple[Scale, ...] = ("small", "full")
ProbeKind = Literal["recall", "artifact", "continuation", "decision"]
# Where a probe's answer comes from: a tool result, what the user pasted, the agent's own
# intentions (words the plan itself writes: notes paths, "Next step: ...", the report path),
# durable memory, or a skill. The sanity check's bounds follow from it.
ProbeSource = Literal["tool", "user", "agent", "memory", "skill"]
# The sources that are data (what the run read or was given); the rest pass with no data at
# all, so their share is the data-free floor every accuracy is reported beside.
DATA_SOURCES: frozenset[str] = frozenset({"tool", "user"})


def data_derived(source: str) -> bool:
    """Whether a probe with this `source` is answered from data (a tool result or pasted
    user data) rather than from the plan's own words, memory or a skill."""
    return source in DATA_SOURCES


PROBE_KINDS: tuple[ProbeKind, ...] = ("recall", "artifact", "continuation", "decision")


@dataclass(frozen=True)
class FileCheck:
    """A probe scored from a file the agent wrote instead of from an answer: the file must
    contain every string in `contains`, and with `bullets`, its sections must be bullet lists."""

    path: str
    contains: tuple[str, ...] = ()
    bullets: bool = False


@dataclass(frozen=True)
class Probe:
    """A question with an exact answer, asked as a user turn at a fixed point of the run.

    `cue` tells the simulated reader how to recognise the fact in a context; it never holds
    the answer. `distractors` are wrong values the run also shows (an answer naming one of them
    is wrong even if it also names the right one). `planted` says where the fact appeared;
    `source` where its answer can come from."""

    id: str
    kind: ProbeKind
    question: str
    answer: str
    cue: Cue
    planted: str = ""
    session: int = 0
    distractors: tuple[str, ...] = ()
    check: FileCheck | None = None
    source: ProbeSource = "tool"
    role: str = ""
    terms: tuple[str, ...] = ()
    shape: str = ""
    carried: bool = False


@dataclass(frozen=True)
class UserTurn:
    """One user message. `id` becomes the message id, so anything derived from it (the path
    of an offloaded message) is the same on every replay."""

    id: str
    text: str
    probe: str | None = None


@dataclass(frozen=True)
class ScenarioSession:
    id: str
    thread: str
    turns: tuple[UserTurn, ...]


@dataclass(frozen=True)
class Scenario:
    """A generated scenario: everything a replay needs, and what an exported copy holds."""

    name: str
    title: str
    description: str
    seed: int
    scale: Scale
    sessions: tuple[ScenarioSession, ...]
    plan: Plan
    probes: tuple[Probe, ...]
    tools: tuple[Tool, ...]
    system_prompt: str
    window: int
    params: dict[str, Any] = field(default_factory=dict)
    skills_dir: Path | None = None
    subagents: tuple[SubAgent, ...] = ()
    max_steps: int = 200
    data_files: Callable[[], dict[str, str]] = dict
    # Durable memory files (path, text) in the store before the first session: a recorded
    # run's memory as it stood when the run began.
    memory: tuple[tuple[str, str], ...] = ()
    # Each session is a week of a recurring run: the eval reports its numbers week by week.
    recurring: bool = False
    # The entity names the tools' data is about, paired off in this order by the sanity
    # check's `relabel` arm (evals/simulated/breaks.py); () where none are known.
    entities: tuple[str, ...] = ()
    # The subagents answer with recorded text (a scenario file's `tasks[].final`), not with
    # what they read in the replay: `relabel` must then swap in their answers too.
    recorded_answers: bool = False
    # What the recorded harness did to its own context (an imported trace's compactions): the
    # `original` arm replays them.
    compactions: tuple[CompactionSpec, ...] = ()

    def files(self) -> dict[str, str]:
        """The generated data as files (relative path -> text), for export."""
        return self.data_files()

    @property
    def profile(self) -> ModelProfile:
        """The simulated model's profile at this scale (its window shrinks with the scale)."""
        return replace(get_profile("simulated"), context_window=self.window)

    def probe(self, probe_id: str) -> Probe:
        for p in self.probes:
            if p.id == probe_id:
                return p
        raise KeyError(probe_id)

    def describe(self) -> dict[str, Any]:
        kinds = {k: sum(p.kind == k for p in self.probes) for k in PROBE_KINDS}
        return {
            "name": self.name,
            "title": self.title,
            "scale": self.scale,
            "seed": self.seed,
            "sessions": len(self.sessions),
            "user_turns": sum(len(s.turns) for s in self.sessions),
            "planned_steps": sum(len(t.steps) for t in (*self.plan.turns, *self.plan.tasks)),
            "probes": len(self.probes),
            "probes_by_kind": kinds,
            "data_probes": sum(data_derived(p.source) for p in self.probes),
            "tools": [t.name for t in self.tools],
            "subagents": [s.name for s in self.subagents],
            "skills": self.skills_dir.name if self.skills_dir else None,
            "window": self.window,
            "params": self.params,
            "description": self.description,
        }


# -- fixed inputs --------------------------------------------------------------------------


def datasets_dir() -> Path:
    """`$CTXLAB_DATASETS`, else the repository's `datasets/`."""
    env = os.environ.get("CTXLAB_DATASETS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "datasets"


@functools.cache
def load_data(relative: str) -> Any:
    """A YAML file under `datasets/` (cached: these files are fixed inputs)."""
    with open(datasets_dir() / relative, encoding="utf-8") as f:
        return yaml.safe_load(f)


class ScaleSpec(pydantic.BaseModel):
    """Sizes of one scale; the keys beyond `window` and `params` belong to the scenario."""

    model_config = pydantic.ConfigDict(extra="allow", frozen=True)

    window: int = pydantic.Field(gt=1000)
    params: dict[str, Any] = pydantic.Field(default_factory=dict)

    def get(self, key: str) -> Any:
        return (self.model_extra or {})[key]


class ScenarioSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    description: str
    scales: dict[Scale, ScaleSpec]


def load_spec(name: str) -> ScenarioSpec:
    return ScenarioSpec.model_validate(load_data(f"specs/{name}.yaml"))


# -- deterministic generation --------------------------------------------------------------


def rng(seed: int, *parts: object) -> random.Random:
    """An independent random stream per purpose: adding a draw in one place never shifts the
    draws of another, so unrelated facts stay put when a generator changes."""
    digest = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def check_scale(scale: str) -> Scale:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
    return scale  # type: ignore[return-value]


class Script:
    """Builds a scenario's sessions, plan and probes together, so that the user turns the
    replay sends and the turns the simulated model expects can never drift apart."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.seed = seed
        self._sessions: list[tuple[str, str, list[UserTurn]]] = []
        self._turns: list[PlanTurn] = []
        self._tasks: list[PlanTurn] = []
        self._probes: list[Probe] = []

    def session(self, session_id: str) -> None:
        thread = f"{self.name}-{self.seed}-{session_id}"
        self._sessions.append((session_id, thread, []))

    @property
    def _index(self) -> int:
        return len(self._sessions) - 1

    def _user(self, text: str, probe: str | None = None) -> None:
        turns = self._sessions[-1][2]
        msg_id = f"msg_{self._index}_{sum(len(s[2]) for s in self._sessions):04d}"
        turns.append(UserTurn(id=msg_id, text=text, probe=probe))

    def turn(self, text: str, steps: tuple[Step, ...], final: str) -> None:
        self._user(text)
        self._turns.append(PlanTurn(prompt=text, steps=steps, final=final, session=self._index))

    def ask(self, probe: Probe) -> None:
        """A probe asked now, as the next user turn."""
        self._probes.append(replace(probe, session=self._index))
        self._user(probe.question, probe.id)
        answer = Answer(id=probe.id, cue=probe.cue)
        self._turns.append(PlanTurn(prompt=probe.question, steps=(answer,), session=self._index))

    def check(self, probe: Probe) -> None:
        """A probe scored from a file once the current session ends."""
        if probe.check is None:
            raise ValueError(f"probe {probe.id} has no file check")
        self._probes.append(replace(probe, session=self._index))

    def task(self, prompt: str, steps: tuple[Step, ...]) -> None:
        self._tasks.append(PlanTurn(prompt=prompt, steps=steps, final="No notable findings."))

    def build(self) -> tuple[tuple[ScenarioSession, ...], Plan, tuple[Probe, ...]]:
        ids = [p.id for p in self._probes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate probe ids in {self.name}")
        sessions = tuple(
            ScenarioSession(sid, thread, tuple(turns)) for sid, thread, turns in self._sessions
        )
        return (
            sessions,
            Plan(turns=tuple(self._turns), tasks=tuple(self._tasks)),
            tuple(self._probes),
        )


def act(
    text: str, *calls: tuple[str, dict[str, Any]], slots: tuple[tuple[str, Cue], ...] = ()
) -> Act:
    """A recorded step: `act("Reading.", call("read_article", article_id="a-1"))`. What it
    writes down goes in `{{slot}}`s, each read by its cue from the request at replay time."""
    return Act(text, tuple(calls), tuple(slots))


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return (name, arguments)


@dataclass(frozen=True)
class Generation:
    """One generated scenario's `build`: its seed, its checked scale and the spec's sizes at
    that scale. `scenario` fills in what every generated scenario takes from these."""

    name: str
    seed: int
    scale: Scale
    spec: ScenarioSpec

    @property
    def sizes(self) -> ScaleSpec:
        return self.spec.scales[self.scale]

    @property
    def extra(self) -> dict[str, Any]:
        """The sizes that belong to the scenario (beyond `window` and `params`)."""
        return dict(self.sizes.model_extra or {})

    def script(self) -> Script:
        return Script(self.name, self.seed)

    def scenario(self, script: Script, **rest: Any) -> Scenario:
        """The scenario of `script`'s sessions, plan and probes; `rest` is what the scenario
        adds of its own (tools, system prompt, subagents, ...)."""
        sessions, plan, probes = script.build()
        return Scenario(
            name=self.name, title=self.spec.title, description=self.spec.description,
            seed=self.seed, scale=self.scale, sessions=sessions, plan=plan, probes=probes,
            window=self.sizes.window, params=dict(self.sizes.params), **rest,
        )  # fmt: skip


def generation(name: str, seed: int, scale: str) -> Generation:
    """Where a generated scenario's `build` starts: `scale` checked, the spec loaded."""
    return Generation(name, seed, check_scale(scale), load_spec(name))
