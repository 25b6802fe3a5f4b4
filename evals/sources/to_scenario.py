"""A parsed trace (evals/sources/trace.py) as a replayable `ctxlab-scenario/1` scenario
(evals/scenarios/format.py): the one path of every source, another harness's trace or a ctxlab
thread (thread_trace.py, whose file tools and `task` are `native`: the replay runs them).

The original model's decisions are the plan: each user message is a turn, each assistant
message that called tools a step (its calls and its text as the note), its last plain answer
the turn's final text. Values the agent passes on that it was shown earlier are slots
(walk.py). The recorded results are the tools' replies, in order (`occurrence` for repeated
identical calls). Subagent runs (Claude Code sidechains) are tasks the parent's call starts.
Probes come from evals/sources/trace_probes.py, file checks from file_checks.py. Every string
is redacted before anything is built.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pydantic

from evals.scenarios.format import (
    FORMAT,
    ModelSpec,
    ScenarioFile,
    SubagentSpec,
    TaskSpec,
    TurnSpec,
)
from evals.sources.compactions import compaction_specs
from evals.sources.file_checks import file_checks
from evals.sources.leaks import drop_leaks
from evals.sources.redact import Redactor
from evals.sources.thread_trace import BUILTIN_TOOLS
from evals.sources.trace import GroundTruth, ToolDef, Trace, TraceMessage, TraceToolCall
from evals.sources.trace_probes import drop_leaking_cues, in_asked_order, trace_probes
from evals.sources.walk import walk_trace
from evals.sources.walk_record import Walk
from harness.errors import UnknownModelError

DEFAULT_WINDOW = 128_000
# Tools a replay's harness provides itself (its file tools, subagents, compaction): a trace's
# own tool of that name is renamed, so its recorded result answers it, not ctxlab's store.
RESERVED_TOOLS = frozenset({*BUILTIN_TOOLS, "compact_conversation"})


# -- the document --------------------------------------------------------------------------


def trace_to_scenario(
    trace: Trace, *, window: int | None = None, redactor: Redactor | None = None,
    native: frozenset[str] = frozenset(),
) -> dict[str, Any]:  # fmt: skip
    """The `ctxlab-scenario/1` document (a dict, validated through `ScenarioFile`) that
    replays `trace`. `native` names the tools the replay's harness runs itself (a ctxlab
    thread's file tools and `task`): they keep their names and no recorded reply. Raises
    `ValueError` naming the field when the trace makes no valid file."""
    redactor = redactor or Redactor()
    trace = redact_trace(trace, redactor)
    names = tool_names(trace, native)
    walk = walk_trace(trace, names, native)
    probes, rejected = trace_probes(walk, _renamed_truth(trace.ground_truth, names))
    # Ordered: a role names its entity (a flight number, a file), which a later probe may ask
    # for; a question asked after that probe was answered gives nothing away.
    drop_leaking_cues(probes)
    probes, leaked = drop_leaks(in_asked_order(probes, walk), ordered=True)
    rejected["leak"] += leaked
    checks = file_checks(trace, probes, native)
    tools = _tools(trace, names, walk, native)
    declared = {t["name"] for t in tools}
    steps = sum(len(t["steps"]) for t in walk.turns) + sum(len(t["steps"]) for t in walk.tasks)
    try:
        spec = ScenarioFile.model_validate(
            dict(
                format=FORMAT,
                name=f"trace:{trace.id}",
                title=f"Trace {trace.id} ({trace.format})",
                description=f"Imported from {Path(trace.source).name} ({trace.format}): "
                f"{len(walk.turns)} user turns, {steps} steps, {len(walk.replies)} recorded "
                "tool replies.",
                source={
                    "format": trace.format,
                    "trace": trace.id,
                    "file": Path(trace.source).name,  # the name only: where it lives is the user's
                    "model": trace.model,
                    "metadata": _kept_metadata(trace.metadata),
                    "ground_truth": _truth_summary(trace.ground_truth),
                    "skipped": [redactor.text(f"{s.where}: {s.reason}") for s in trace.skipped][
                        :50
                    ],
                    "tool_names": {a: b for a, b in names.items() if a != b and b in declared},
                    "original": trace.original_usage(),
                    "compactions": compaction_specs(trace, walk.turns, probes),
                },
                model=ModelSpec(
                    window=window or original_window(trace.model),
                    max_steps=max(100, 2 * steps + 10),
                ),
                system_prompt=walk.system,
                tools=tools,
                subagents=[
                    SubagentSpec(
                        name=kind, description=f"The recorded {kind} subagent.", tools=sorted(used)
                    )
                    for kind, used in walk.subagents.items()
                ],  # fmt: skip
                turns=[TurnSpec.model_validate(t) for t in walk.turns],
                tasks=[TaskSpec.model_validate(t) for t in walk.tasks],
                replies=walk.replies,
                probe_counts={
                    **probe_counts(probes + checks, leaked),
                    "candidates": rejected.candidates,
                    "carried": sum(p["carried"] for p in probes),
                    **rejected.as_counts(),
                },
                probes=probes + checks,
            )
        )
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(k) for k in err["loc"])
        raise ValueError(f"trace {trace.id} makes no valid {FORMAT} file: {where}: "
                         f"{err['msg']}") from None  # fmt: skip
    # What the loader builds from the file (the plan, whose turns and questions must start with
    # distinct lines): refused here, in a line, rather than when the eval loads it.
    from evals.scenarios.from_file import scenario_script

    scenario_script(spec, 0)
    doc: dict[str, Any] = spec.model_dump(exclude_unset=True)
    doc["source"]["redactions"] = redactor.count
    return doc


PROBE_KINDS = ("recall", "artifact", "continuation", "decision")


def probe_counts(probes: list[dict[str, Any]], leaked: int) -> dict[str, int]:
    """The probes of each kind, and `dropped_leaks`: those the leak check (leaks.py) dropped
    because their question or cue gave a probe's answer away."""
    counts = {k: sum(p["kind"] == k for p in probes) for k in PROBE_KINDS}
    counts["dropped_leaks"] = leaked
    return counts


def profile_window(model: str) -> int:
    """The context window of ctxlab's profile of `model`. Raises `UnknownModelError`."""
    from harness.profiles import get_profile

    return int(get_profile(model).context_window or DEFAULT_WINDOW)


def original_window(model: str | None) -> int:
    """The window of the model that ran the trace, where ctxlab has its profile, else
    `DEFAULT_WINDOW` (most real traces fit it; `--window` tests a tighter one)."""
    if not model:
        return DEFAULT_WINDOW
    try:
        return profile_window(model)
    except UnknownModelError:  # a model ctxlab has no profile of: the common case
        return DEFAULT_WINDOW


def _kept_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The record's scalar fields (task id, reward, branch, version): what names the run.
    Nested ones (a benchmark's whole `info`) are the trace's business, not the scenario's."""
    return {
        str(k): v for k, v in metadata.items()
        if isinstance(v, str | int | float | bool) and len(str(v)) <= 200
    }  # fmt: skip


def _truth_summary(truth: GroundTruth) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if truth.outcome:
        out["outcome"] = {
            k: v for k, v in truth.outcome.items() if isinstance(v, str | int | float | bool)
        }
    if truth.actions:
        out["actions"] = [a.name for a in truth.actions]
    if truth.patch_files:
        out["patch_files"] = list(truth.patch_files)
    return out


# -- redaction and names -------------------------------------------------------------------


def redact_trace(trace: Trace, redactor: Redactor) -> Trace:
    """A copy of `trace` with every string redacted (texts, arguments, tool definitions,
    ground truth, metadata, compaction summaries, subagents), so no slot, cue or probe is
    built from a secret."""
    r = redactor
    r.learn(_strings(trace))  # a user name first seen late in the trace goes from the start

    def message(m: TraceMessage) -> TraceMessage:
        calls = [
            TraceToolCall(c.id, c.name, r.value(c.arguments),
                     r.text(c.raw_arguments) if c.raw_arguments is not None else None)
            for c in m.tool_calls
        ]  # fmt: skip
        return dataclasses.replace(m, text=r.text(m.text), tool_calls=calls)

    truth = trace.ground_truth
    return dataclasses.replace(
        trace,
        # The id and file name become the scenario's name, title and output file name.
        id=r.text(trace.id),
        source=str(Path(trace.source).with_name(r.text(Path(trace.source).name))),
        messages=[message(m) for m in trace.messages],
        system=r.text(trace.system),
        tools=[ToolDef(t.name, r.text(t.description), r.value(t.parameters)) for t in trace.tools],
        subagents=[redact_trace(s, r) for s in trace.subagents],
        compactions=[dataclasses.replace(c, summary=r.text(c.summary)) for c in trace.compactions],
        ground_truth=GroundTruth(
            actions=[dataclasses.replace(a, arguments=r.value(a.arguments)) for a in truth.actions],
            outcome=r.value(truth.outcome),
            patch_files=[r.text(p) for p in truth.patch_files],
            answer=r.text(truth.answer) if truth.answer is not None else None,
        ),
        metadata=r.value(trace.metadata),
    )


def _strings(trace: Trace) -> list[Any]:
    """What of `trace` may carry a home path: texts, arguments, metadata, its subagents'."""
    calls = [(c.arguments, c.raw_arguments or "") for m in trace.messages for c in m.tool_calls]
    return [trace.source, trace.system, trace.metadata, [m.text for m in trace.messages], calls,
            *(_strings(s) for s in trace.subagents)]  # fmt: skip


def tool_names(trace: Trace, native: frozenset[str] = frozenset()) -> dict[str, str]:
    """Each tool name of the trace (and its subagents) -> the name the scenario gives it: valid
    for a tool (`^[a-zA-Z0-9_-]{1,64}$`), never one of the harness's own (`_recorded` is added)
    unless `native` names it, and never two tools one name."""
    seen: list[str] = [t.name for t in trace.tools]
    for t in (trace, *trace.subagents):
        seen += [c.name for m in t.messages for c in m.tool_calls]
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in dict.fromkeys(seen):
        new = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "tool"
        if name in native:
            new = name
        elif new.lower() in RESERVED_TOOLS:
            new = f"{new}_recorded"
        new = new[:64]
        base, n = new, 2
        while new in taken:
            new = f"{base[: 64 - len(str(n)) - 1]}_{n}"
            n += 1
        taken.add(new)
        out[name] = new
    return out


def _renamed_truth(truth: GroundTruth, names: dict[str, str]) -> GroundTruth:
    actions = [dataclasses.replace(a, name=names.get(a.name, a.name)) for a in truth.actions]
    return dataclasses.replace(truth, actions=actions)


def _tools(
    trace: Trace, names: dict[str, str], walk: Walk, native: frozenset[str]
) -> list[dict[str, Any]]:
    """The trace's tools where it lists them, else as its calls show them; every argument a
    call passed is a property (the replay refuses arguments its tool does not declare). The
    `native` ones are the replay's harness's own, not the scenario's."""
    defs: dict[str, dict[str, Any]] = {}
    for t in trace.tools:
        if t.name in native:
            continue
        params = t.parameters if isinstance(t.parameters, dict) else {}
        props = params.get("properties")
        defs[names[t.name]] = {
            "name": names[t.name],
            "description": t.description,
            "parameters": {"type": "object",
                           "properties": dict(props) if isinstance(props, dict) else {}},
        }  # fmt: skip
    for reply in walk.replies:
        tool = defs.setdefault(reply["tool"], {
            "name": reply["tool"], "description": f"The recorded {reply['tool']} tool.",
            "parameters": {"type": "object", "properties": {}},
        })  # fmt: skip
        for key in reply["arguments"]:
            tool["parameters"]["properties"].setdefault(key, {})
    used = {r["tool"] for r in walk.replies}
    return [d for name, d in defs.items() if name in used or name not in RESERVED_TOOLS]
