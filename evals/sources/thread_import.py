"""`ctxlab scenarios import`: a recorded run (its thread in a ctxlab store) as a replayable
scenario file (format `ctxlab-scenario/1`, format.py; evals/README.md "Recorded scenarios").

The thread is read as a `Trace` (thread_trace.py) and imported through the one path every
trace takes (to_scenario.py): the same walk, the same roles, hygiene and carried values, the
same probes. What only a ctxlab store knows is added to that document: the run's config (its
window, step limit, strategy parameters and tool definitions), the subagents' prompts, the
skills, and the memory the thread started with; the file tools and `task` stay the replay's
own (`native`), so a replay writes and reads its own files and memory. Every string passes
through one `Redactor` (redact.py) before it is written.
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

from evals.errors import RunNotFoundError
from evals.scenarios.format import FORMAT, ScenarioFile, SubagentSpec
from evals.sources.hygiene import MIN_PROBES, require_probes
from evals.sources.redact import Redactor
from evals.sources.thread_trace import BUILTIN_TOOLS, resolve, text_files, thread_trace
from evals.sources.to_scenario import original_window, trace_to_scenario
from harness.store import read_store


def import_run(
    db: str,
    run_id: str | None = None,
    *,
    thread: str | None = None,
    redactor: Redactor | None = None,
    min_probes: int = MIN_PROBES,
) -> dict[str, Any]:
    """The scenario document (a dict in the `ctxlab-scenario/1` format) of the thread that
    `run_id` (or `thread`) names in the store `db`. Raises `RunNotFoundError` when the store has
    no such run or thread, `ValueError` when it makes no valid file or fewer than `min_probes`
    probes (naming the reasons its candidates were rejected, as a trace import does)."""
    if run_id is None and thread is None:
        raise ValueError("give a run id or a thread")
    redactor = redactor or Redactor()
    if not Path(db).is_file():
        raise RunNotFoundError(f"no store at {db}")
    con = read_store(db)
    try:
        thread_id, first = resolve(con, run_id, thread)
        runs = con.runs.of_thread(thread_id)
        trace = thread_trace(con, thread_id, first, db)
        children = con.runs.children([r["run_id"] for r in runs])
        skills = text_files(con, "/skills/")
        # the memory files as they stood when the thread's first run started
        memory = con.memory.at(runs[0]["started_at"])
    finally:
        con.close()
    config = json.loads(runs[0]["config"] or "{}")
    window = config.get("context_window") or original_window(runs[0]["model"])
    doc = trace_to_scenario(trace, window=window, redactor=redactor, native=BUILTIN_TOOLS)
    require_probes(doc, f"run {first}", min_probes)
    shared = doc["source"]
    doc.update(
        name=f"recorded:{first}",
        title=f"Recorded run {first}",
        description=f"Imported from thread {thread_id} of {Path(db).name}: "
        f"{len(doc['turns'])} user turns, {len(doc['replies'])} recorded tool replies.",
        source={
            "run_id": first,
            "thread": thread_id,
            "runs": [r["run_id"] for r in runs],
            "agent": runs[0]["agent"],
            "model": runs[0]["model"],
            "strategy": runs[0]["strategy"],
            "params": config.get("strategy_params", {}),
            "created_at": str(runs[0]["started_at"]),
            "db": Path(db).name,  # the name only: where it lives is the user's business
            "imported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **{k: shared[k] for k in ("format", "skipped", "compactions") if shared.get(k)},
        },  # fmt: skip
        params=dict(config.get("strategy_params", {})),
        subagents=[
            _subagent(s, children, doc)
            for s in config.get("subagents", [])
            if any(s["name"] == k["name"] for k in doc.get("subagents", []))
        ],  # fmt: skip
        skills=skills,
        memory=memory,
    )
    doc["model"]["max_steps"] = int(config.get("max_steps") or doc["model"]["max_steps"])
    # The one model the loader validates with: what it would refuse is refused here, in a line.
    try:
        spec = ScenarioFile.model_validate(redactor.value(doc))
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(k) for k in err["loc"])
        raise ValueError(f"the run makes no valid {FORMAT} file: {where}: {err['msg']}") from None
    # The document holds what was given (`exclude_unset`): a step without slots writes no
    # `slots: {}`. The count covers the trace, the config and the files alike.
    redacted: dict[str, Any] = spec.model_dump(exclude_unset=True)
    redacted["source"]["redactions"] = redactor.count
    return redacted


def _subagent(
    kind: dict[str, Any], children: list[dict[str, Any]], doc: dict[str, Any]
) -> dict[str, Any]:
    """A subagent kind of the run's config, with the prompt and tools its recorded runs had
    (the tools the walk saw it call, when no run's config lists them)."""
    configs = [json.loads(c["config"] or "{}") for c in children
               if str(c["agent"]).rsplit("/", 1)[-1] == kind["name"]]  # fmt: skip
    walked = next(s for s in doc["subagents"] if s["name"] == kind["name"])
    own = [t["name"] for c in configs[:1] for t in c.get("tools", [])
           if t["name"] not in BUILTIN_TOOLS]  # fmt: skip
    return SubagentSpec(
        name=kind["name"],
        description=kind["description"],
        system_prompt=next(
            (str(c["system_prompt"]) for c in configs if c.get("system_prompt")), ""
        ),  # fmt: skip
        tools=own if configs else walked["tools"],
    ).model_dump(exclude_unset=True)


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
