"""`ctxlab scenarios import`: a recorded run (its thread in a ctxlab store) as a replayable
scenario file (format `ctxlab-scenario/1`, format.py; evals/README.md "Recorded scenarios").

What the store holds (recording.py) becomes the scenario: the user turns; the agent's steps as
intentions (plan.py), where every figure, name or phrase it wrote down that came from a tool
result is a `{{slot}}` with a cue (cues.py), so a replay writes what *its* context still shows;
the recorded tool results as the tools' replies; the subagents' tasks, the skills and the
memory it started with; the window and the step limit; and probes derived from the run
(probes.py). Every string passes through a `Redactor` (redact.py) before it is written.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic
import yaml

from evals.scenarios.format import (
    FORMAT,
    ModelSpec,
    ScenarioFile,
    SubagentSpec,
    TaskSpec,
    TurnSpec,
)
from evals.sources.leaks import drop_leaks
from evals.sources.recording import (
    BUILTIN_TOOLS,
    RecordedTurn,
    file_text,
    read_recording,
    read_replies,
    read_tasks,
    stored_thread,
    text_files,
)
from evals.sources.redact import Redactor
from evals.sources.thread_probes import derive_probes


def import_run(
    db: str,
    run_id: str | None = None,
    *,
    thread: str | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """The scenario document (a dict in the `ctxlab-scenario/1` format) of the thread that
    `run_id` (or `thread`) names in the store `db`. Raises `RunNotFoundError` when the store has
    no such run or thread."""
    if run_id is None and thread is None:
        raise ValueError("give a run id or a thread")
    redactor = redactor or Redactor()
    with stored_thread(db, run_id, thread) as stored:
        con, thread_id, first, runs = stored.con, stored.thread_id, stored.first_run, stored.runs
        config = redactor.value(json.loads(runs[0]["config"] or "{}"))
        system_prompt = str(config.get("system_prompt") or "")
        recording = read_recording(con, thread_id, system_prompt, redactor)
        run_ids = [r["run_id"] for r in runs]
        tasks = read_tasks(con, run_ids, redactor)
        task_threads = [r["thread_id"] for r in con.runs.children(run_ids)]
        replies = read_replies(con, [thread_id, *task_threads], redactor)
        skills = redactor.value(text_files(con, "/skills/"))
        # the memory files as they stood when the thread's first run started
        memory = redactor.value(con.memory.at(runs[0]["started_at"]))
        for path in recording.files:
            turn, _ = recording.files[path]
            recording.files[path] = (turn, redactor.text(file_text(con, thread_id, path)))
    probes = derive_probes(recording)  # first: a question it cannot score stays a turn
    probes, leaked = drop_leaks(probes)
    tools = [t for t in config.get("tools", []) if t["name"] not in BUILTIN_TOOLS]
    if not tools:
        tools = _tools_from_calls(replies)
    used = {t["subagent"] for t in tasks}
    # The one model the loader validates with: what it would refuse is refused here, in a line.
    try:
        subagents = [
            _subagent_spec(s, tasks) for s in config.get("subagents", []) if s["name"] in used
        ]
        spec = ScenarioFile(
            format=FORMAT,
            name=f"recorded:{first}",
            title=f"Recorded run {first}",
            description=f"Imported from thread {thread_id} of {Path(db).name}: "
            f"{len(recording.turns)} user turns, {len(replies)} recorded tool replies.",
            source={
                "run_id": first,
                "thread": thread_id,
                "runs": run_ids,
                "agent": runs[0]["agent"],
                "model": runs[0]["model"],
                "strategy": runs[0]["strategy"],
                "params": config.get("strategy_params", {}),
                "created_at": str(runs[0]["started_at"]),
                "db": Path(db).name,  # the name only: where it lives is the user's business
                "imported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },  # fmt: skip
            model=ModelSpec(
                window=config.get("context_window") or profile_window(runs[0]["model"]),
                max_steps=int(config.get("max_steps") or 100),
            ),
            params=dict(config.get("strategy_params", {})),
            system_prompt=system_prompt,
            tools=tools,
            subagents=subagents,
            skills=skills,
            memory=memory,
            turns=[_turn_spec(t) for t in recording.turns if not t.question],
            tasks=[
                TaskSpec.model_validate({k: t[k] for k in ("prompt", "steps", "final")})
                for t in tasks
            ],
            replies=replies,
            probe_counts=probe_counts(probes, leaked),
            probes=probes,
        )
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(k) for k in err["loc"])
        raise ValueError(f"the run makes no valid {FORMAT} file: {where}: {err['msg']}") from None
    # Everything was redacted as it was read; this pass catches what joining texts made
    # (a description naming the store's path), and the count covers both. The document
    # holds what was given (`exclude_unset`): a step without slots writes no `slots: {}`.
    redacted: dict[str, Any] = redactor.value(spec.model_dump(exclude_unset=True))
    redacted["source"]["redactions"] = redactor.count
    return redacted


PROBE_KINDS = ("recall", "artifact", "continuation", "decision")


def probe_counts(probes: list[dict[str, Any]], leaked: int) -> dict[str, int]:
    """The probes of each kind, and `dropped_leaks`: those the leak check (leaks.py) dropped
    because their question or cue gave a probe's answer away."""
    counts = {k: sum(p["kind"] == k for p in probes) for k in PROBE_KINDS}
    counts["dropped_leaks"] = leaked
    return counts


def _turn_spec(turn: RecordedTurn) -> TurnSpec:
    return TurnSpec.model_validate(
        {"id": turn.id, "text": turn.text, "steps": turn.steps, "final": turn.final}
    )


def _subagent_spec(kind: dict[str, Any], tasks: list[dict[str, Any]]) -> SubagentSpec:
    """A subagent kind of the run's config, with the prompt and tools its recorded tasks had."""
    mine = [t for t in tasks if t["subagent"] == kind["name"]]
    return SubagentSpec(
        name=kind["name"],
        description=kind["description"],
        system_prompt=next((t["system_prompt"] for t in mine if t["system_prompt"]), ""),
        tools=mine[0]["tools"] if mine else [],
    )


def profile_window(model: str) -> int:
    from harness.profiles import get_profile

    try:
        return int(get_profile(model).context_window or 128_000)
    except LookupError:
        return 128_000


def _tools_from_calls(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool definitions for a run recorded before runs kept them: names and argument names."""
    tools: dict[str, dict[str, Any]] = {}
    for r in replies:
        props = tools.setdefault(r["tool"], {})
        props.update({k: {} for k in r["arguments"]})
    return [
        {"name": n, "description": f"The recorded {n} tool.",
         "parameters": {"type": "object", "properties": p}}
        for n, p in tools.items()
    ]  # fmt: skip


# -- writing the file ----------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def check_scenario_path(path: str | Path, *, force: bool = False) -> Path:
    """`path` as a place to write a scenario file: it must end in .yaml or .yml (the names
    `ctxlab eval --scenario` loads), and not exist unless `force`. Raises `ValueError` or
    `FileExistsError` naming the problem."""
    out = Path(path)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(
            f"{out}: a scenario file must end in .yaml or .yml (`ctxlab eval --scenario` "
            f"loads only those), e.g. {out.with_suffix('.yaml')}"
        )
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists: pass --force to overwrite it")
    return out


def write_scenario(doc: dict[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Writes `doc` to `path` (which must end in .yaml or .yml, the names `ctxlab eval`
    loads) all at once: the text goes to a temporary file beside it, which then takes the
    name, so a full disk or a kill never leaves a truncated file nor harms the one there.
    Raises `FileExistsError` when `path` exists, unless `force`."""
    out = check_scenario_path(path, force=force)
    header = (
        f'# {FORMAT}: a recorded run as a replayable scenario (evals/README.md, "Recorded\n'
        '# scenarios"). Edit or add probes freely; `ctxlab eval --scenario THIS_FILE`.\n'
    )
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    data = (header + text).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for the temporary file; this one is shared
        take_name(tmp, out, force)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def take_name(tmp: str, out: Path, force: bool) -> None:
    """Renames `tmp` to `out`; without `force`, only if `out` still does not exist (a hard
    link fails atomically when it does; a filesystem without hard links is checked first)."""
    if force:
        os.replace(tmp, out)
        return
    try:
        os.link(tmp, out)
    except FileExistsError:
        raise FileExistsError(f"{out} exists: pass --force to overwrite it") from None
    except OSError:
        if out.exists():
            raise FileExistsError(f"{out} exists: pass --force to overwrite it") from None
        os.replace(tmp, out)
        return
    os.unlink(tmp)
