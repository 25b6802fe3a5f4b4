"""Load a scenario file (`ctxlab-scenario/1`, written by `ctxlab scenarios import` or by hand)
into a `Scenario` that replays like a built-in one.

The file is validated before anything runs; an error names the file, the line, the field and
(for a probe) its id. The agent's own tools answer from the recorded replies, keyed by tool,
arguments and occurrence (evals/scenarios/replies.py: a recorded step whose slots the reader
misfilled still gets the recorded reply), so a replay makes no live tool call; the harness's
file tools and subagents run for real on the replay's store.
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pydantic
import yaml

from evals.errors import ScenarioFileError, UnsafeYamlError
from evals.scenarios.base import (
    FileCheck,
    Probe,
    Scenario,
    ScenarioSession,
    UserTurn,
    check_scale,
)
from evals.scenarios.format import (
    FORMAT,
    CueSpec,
    ProbeSpec,
    ReplySpec,
    ScenarioFile,
    StepSpec,
)
from evals.scenarios.recorded import recorded_compactions, relabelled
from evals.scenarios.replies import RecordedReplies, slotted_calls
from evals.scenarios.safe_yaml import collector_waiting, read_yaml
from evals.simulated.plan import PAUSED, Act, Answer, Cue, Plan, PlanTurn, Step
from evals.simulated.shapes import role_cue
from harness.middleware.subagents import SubAgent
from harness.tools import Tool, ToolContext

SUFFIXES = (".yaml", ".yml")


# -- loading ------------------------------------------------------------------------------


def is_scenario_file(name: str) -> bool:
    """Whether `name` names a scenario file rather than a built-in scenario."""
    return name.lower().endswith(SUFFIXES) and Path(name).is_file()


def load_scenario_file(path: str | Path, seed: int = 0, scale: str = "small") -> Scenario:
    """The scenario in `path`. A recorded scenario has the run's size: `scale` only labels
    the results. Raises `ScenarioFileError` naming the line and field of the first problem."""
    resolved = Path(path).resolve()
    try:
        stamp = resolved.stat().st_mtime_ns
    except OSError as exc:
        raise ScenarioFileError(f"cannot read scenario file {path}: {exc}") from None
    return _load(str(resolved), stamp, seed, check_scale(scale))


def read_spec(path: str | Path) -> ScenarioFile:
    """The validated contents of the scenario file `path`. Read and validated once per process
    while the file's modification time and size stay the same: a suite's cells, its index and
    its summary all ask for the same files, and validation compiles every cue."""
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise ScenarioFileError(f"cannot read scenario file {path}: {exc}") from None
    return _read_spec(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _read_spec(path: str, stamp: int, size: int) -> ScenarioFile:
    # The collector waits till the file's nodes and plain values are gone: none holds a cycle,
    # and a collection while they lived would walk them all (two or three times over, as
    # they aged), which took longer than validating them.
    with collector_waiting():
        return _validated(path)


def _validated(path: str) -> ScenarioFile:
    try:
        data, root = read_yaml(path)
    except UnsafeYamlError as exc:
        raise ScenarioFileError(str(exc)) from None
    except OSError as exc:
        raise ScenarioFileError(f"cannot read scenario file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioFileError(f"{path}: expected a mapping with `format: {FORMAT}`")
    if data.get("format") != FORMAT:
        raise ScenarioFileError(
            f"{path}:{_line(root, ('format',))}: format must be {FORMAT!r}, "
            f"got {data.get('format')!r}"
        )
    try:
        spec = ScenarioFile.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        raise ScenarioFileError(
            f"{path}:{_line(root, loc)}: {_where(data, loc)}: {err['msg']}"
        ) from None
    _cross_check(spec, root, path)
    return spec


@functools.lru_cache(maxsize=16)
def _load(path: str, stamp: int, seed: int, scale: str) -> Scenario:
    spec = read_spec(path)
    tools = _replay_tools(spec)
    by_name = {t.name: t for t in tools}
    subagents = tuple(
        SubAgent(
            name=s.name, description=s.description,
            system_prompt=s.system_prompt or f"You are the {s.name} subagent.",
            tools=tuple(by_name[n] for n in s.tools if n in by_name),
        )
        for s in spec.subagents
    )  # fmt: skip
    sessions, plan, probes = scenario_script(spec, seed)
    return Scenario(
        name=spec.name, title=spec.title or spec.name, description=spec.description,
        seed=seed, scale=scale, sessions=sessions, plan=plan, probes=probes, tools=tools,  # type: ignore[arg-type]
        system_prompt=spec.system_prompt, window=spec.model.window, params=dict(spec.params),
        skills_dir=_skills_dir(spec), subagents=subagents, max_steps=spec.model.max_steps,
        memory=tuple((m.path, m.content) for m in spec.memory),
        compactions=recorded_compactions(spec, path),
        entities=relabelled(spec.probes),
        recorded_answers=True,
    )  # fmt: skip


# A turn with probes asked inside it is replayed in parts: the part before a probe ends with
# this reply, the probe is asked, and a user message naming the turn and step resumes it.


def resume_text(turn_id: str, step: int) -> str:
    """The user message that resumes turn `turn_id` at its step `step` (0-based) after a probe
    asked inside it: one line, distinct for every turn and step."""
    return f"Go on with the task where you left off (turn {turn_id}, step {step + 1})."


def scenario_script(
    spec: ScenarioFile, seed: int
) -> tuple[tuple[ScenarioSession, ...], Plan, tuple[Probe, ...]]:
    asked: dict[str, list[ProbeSpec]] = {}
    inside: dict[str, dict[int, list[ProbeSpec]]] = {}
    for p in spec.probes:
        if p.check is not None:
            continue
        if p.at_step is None:
            asked.setdefault(p.after, []).append(p)
        else:
            inside.setdefault(p.after, {}).setdefault(p.at_step, []).append(p)
    turns: list[UserTurn] = []
    plan: list[PlanTurn] = []

    def ask(probes: list[ProbeSpec]) -> None:
        for p in probes:
            turns.append(UserTurn(id=f"probe-{p.id}", text=p.question, probe=p.id))
            plan.append(PlanTurn(prompt=p.question, steps=(_answer(p),)))

    ask(asked.get("start", []))
    for t in spec.turns:
        steps = tuple(_step(s) for s in t.steps)
        # A real trace is mostly one user turn: its probes are asked where the run used the
        # value, so the turn is cut there and resumed after the question.
        cuts = sorted(inside.get(t.id, {}))
        begin, text, turn_id = 0, t.text, t.id
        for cut in cuts:
            turns.append(UserTurn(id=turn_id, text=text))
            plan.append(PlanTurn(prompt=text, steps=steps[begin:cut], final=PAUSED))
            ask(inside[t.id][cut])
            begin, text, turn_id = cut, resume_text(t.id, cut), f"{t.id}.step-{cut + 1}"
        turns.append(UserTurn(id=turn_id, text=text))
        plan.append(PlanTurn(prompt=text, steps=steps[begin:], final=t.final))
        ask(asked.get(t.id, []))
    ask(asked.get("end", []))
    tasks = tuple(
        PlanTurn(prompt=t.prompt, steps=tuple(_step(s) for s in t.steps), final=t.final)
        for t in spec.tasks
    )
    try:
        built = Plan(turns=tuple(plan), tasks=tasks)
    except ValueError as exc:
        raise ScenarioFileError(f"{spec.name}: {exc} (give each turn and probe question a "
                                "distinct first line)") from None  # fmt: skip
    probes = tuple(
        Probe(
            id=p.id, kind=p.kind, question=p.question, answer=p.answer, cue=_answer(p).cue,
            planted=_planted(p.provenance.get("from")),
            distractors=tuple(p.distractors),
            check=FileCheck(p.check.path, tuple(p.check.contains), p.check.bullets)
            if p.check else None,
            source=p.source, carried=p.carried,
            role=p.role.phrase if p.role else "", terms=tuple(p.role.terms) if p.role else (),
            shape=p.role.shape if p.role else "",
        )
        for p in spec.probes
    )  # fmt: skip
    thread = re.sub(r"[^A-Za-z0-9_.\-]+", "-", f"{spec.name}-{seed}-recorded")
    return (ScenarioSession("recorded", thread, tuple(turns)),), built, probes


def _planted(origin: Any) -> str:
    """Where a probe's fact appeared: the first of the refs a run import lists, or the one
    word a trace import gives (`trace`, `ground-truth`)."""
    if isinstance(origin, str):
        return origin
    return ", ".join(str(o) for o in (origin or [])[:1])


def _step(s: StepSpec) -> Step:
    calls = tuple((c.tool, c.arguments) for c in s.calls)
    slots = tuple((name, _cue(cue)) for name, cue in s.slots.items())
    return Act(s.note, calls, slots)


def _answer(p: ProbeSpec) -> Answer:
    """The decision point of probe `p`: its cue (else one built from its role) and the role's
    search terms and shape, what retrieval searches with."""
    if p.role is None:
        return Answer(p.id, _cue(p.cue))
    cue = _cue(p.cue) if p.cue.patterns else role_cue(p.role.terms, p.role.shape)
    return Answer(p.id, cue, tuple(p.role.terms), p.role.shape, p.role.kind, p.role.phrase)


def _cue(c: CueSpec) -> Cue:
    return Cue(tuple(c.patterns), tuple(c.lookalikes))


def _cross_check(spec: ScenarioFile, root: Any, path: str | Path) -> None:
    turn_ids = [t.id for t in spec.turns]
    places = {"start", "end", *turn_ids}
    seen: set[str] = set()
    for i, p in enumerate(spec.probes):
        where = f"{path}:{_line(root, ('probes', i))}: probe {p.id!r}"
        if p.id in seen:
            raise ScenarioFileError(f"{where}: duplicate probe id")
        seen.add(p.id)
        if p.after not in places:
            raise ScenarioFileError(
                f"{where}: after: {p.after!r} is not a turn id (nor start or end)"
            )
        if p.at_step is not None:
            turn = next((t for t in spec.turns if t.id == p.after), None)
            if turn is None:
                raise ScenarioFileError(f"{where}: at_step needs `after` to name a turn")
            if p.at_step > len(turn.steps):
                raise ScenarioFileError(
                    f"{where}: at_step: {p.at_step} is past turn {turn.id!r}, which has "
                    f"{len(turn.steps)} steps"
                )
    if len(set(turn_ids)) != len(turn_ids):
        dupe = next(t for t in turn_ids if turn_ids.count(t) > 1)
        raise ScenarioFileError(f"{path}: duplicate turn id {dupe!r}")
    tools = {t.name for t in spec.tools}
    for i, r in enumerate(spec.replies):
        if r.tool not in tools:
            raise ScenarioFileError(
                f"{path}:{_line(root, ('replies', i))}: replies[{i}].tool: {r.tool!r} is not "
                "one of the file's tools"
            )
    for i, s in enumerate(spec.subagents):
        unknown = set(s.tools) - tools
        if unknown:
            raise ScenarioFileError(
                f"{path}:{_line(root, ('subagents', i))}: subagent {s.name!r} names unknown "
                f"tools {sorted(unknown)}"
            )


def _line(root: Any, loc: tuple[Any, ...]) -> int:
    """The line (1-based) of the YAML node at `loc`, or of the deepest node found on the way."""
    node = root
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            nxt = node.value[key] if key < len(node.value) else None
        else:
            nxt = None
        if nxt is None:
            break
        node = nxt
    return int(node.start_mark.line) + 1 if node is not None else 1


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """`probes[3].answer (probe 'recall-x')`: the field, and the probe or turn it is in."""
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    if len(loc) >= 2 and loc[0] in ("probes", "turns") and isinstance(loc[1], int):
        items = data.get(loc[0]) or []
        item = items[loc[1]] if loc[1] < len(items) else None
        if isinstance(item, dict) and "id" in item:
            out += f" ({loc[0][:-1]} {item['id']!r})"
    return out


# -- the recorded tools -------------------------------------------------------------------


class _Missing:
    """An argument the call left out (told apart from an explicit null)."""


def _replay_tools(spec: ScenarioFile) -> tuple[Tool, ...]:
    tools = []
    steps = [s for turn in spec.turns for s in turn.steps]
    steps += [s for task in spec.tasks for s in task.steps]
    slotted = slotted_calls(steps)
    recorded: dict[str, list[ReplySpec]] = {}
    for r in spec.replies:
        recorded.setdefault(r.tool, []).append(r)
    for t in spec.tools:
        replies = RecordedReplies(t.name, recorded.get(t.name, []), slotted.get(t.name, []))
        props = t.parameters.get("properties") or {}
        model = _args_model(t.name, tuple(str(k) for k in props))

        async def call(ctx: ToolContext, _replies: RecordedReplies = replies, **kwargs: Any) -> str:
            given = {k: v for k, v in kwargs.items() if not isinstance(v, _Missing)}
            return _replies.reply(ctx.state.store, given)

        tools.append(
            Tool(
                name=t.name,
                description=t.description,
                parameters=t.parameters,
                fn=call,
                args_model=model,
                context_param="ctx",
            )  # fmt: skip
        )
    return tuple(tools)


_MISSING = _Missing()


@functools.lru_cache(maxsize=256)
def _args_model(tool: str, names: tuple[str, ...]) -> type[pydantic.BaseModel]:
    """The arguments model of a recorded tool: every parameter optional, any value, nothing
    else. One per tool name and parameters: a suite's files declare the same few tools again
    and again, and building a pydantic model takes longer than reading a small file."""
    fields: dict[str, Any] = {name: (Any, _MISSING) for name in names}
    return pydantic.create_model(
        f"{tool}_recorded_args", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )


def _skills_dir(spec: ScenarioFile) -> Path | None:
    """The recorded skills as folders on disk (the skills middleware syncs from disk), in a
    fresh private directory (mode 0700, removed at exit): a predictable path under the shared
    temp directory could be a symlink someone planted, and ctxlab would write through it."""
    if not spec.skills:
        return None
    root = Path(tempfile.mkdtemp(prefix="ctxlab-skills-")).resolve()
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for s in spec.skills:
        relative = s.path.removeprefix("/skills/").lstrip("/")
        target = (root / relative).resolve()
        if root not in target.parents:
            raise ScenarioFileError(f"skill path {s.path!r} leaves /skills/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(s.content, encoding="utf-8")
    return root
