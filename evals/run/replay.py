"""Replay a scenario through the real harness under one context strategy.

Each session is a thread; each user turn is one `agent.run` on it (a week later, a new thread
on the same store, so only durable memory carries over). The simulated model follows the
scenario's plan, so every strategy sees the same trajectory; what differs is what the
strategy leaves in view when the model must answer, summarize or compose, and what it costs.

A request over the model's window fails the way a provider fails it: the session stops there
and the probes it did not reach count as wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from evals.errors import BudgetExceededError
from evals.run.judge import Judge
from evals.run.thresholds import scaled_thresholds
from evals.scenarios.base import FileCheck, Probe, Scenario
from evals.scoring.answers import is_correct, outcome
from evals.scoring.availability import NOT_REACHED, availability, mentioned
from evals.scoring.normalized import normal_memo
from evals.scoring.records import ProbeResult, Replay
from evals.simulated import Break, CallRecord, SimulatedModel, get_reader
from evals.sources.role_rules import IMPORT_RULES
from harness import ContextOverflowError, Store, create_agent
from harness.files.filesystem import FileSystem
from harness.files.paths import FileError
from harness.files.storage import decode
from harness.messages import Message
from harness.middleware.base import Middleware
from harness.models import Model, resolve_model
from harness.profiles import ModelProfile
from harness.run import RunResult
from harness.settings import StrategySettings
from harness.strategies import middleware_names, valid_params

Progress = Callable[[int, int], None]
MiddlewareFactory = Callable[[], Sequence[Middleware]]


def build_model(
    scenario: Scenario,
    model: str | Model,
    *,
    seed: int,
    reader: str,
    max_usd: float | None,
    view: Break | None = None,
    window: int | None = None,
) -> SimulatedModel:
    """The replay model: simulated throughout (reading as `reader`, shown the request through
    the break arm `view` if any), or simulated steps with a real model (a spec such as
    "openai:gpt-6.2-sol", or a `Model`) deciding. Live, that model's window and prices
    apply, unless `window` caps the window: the harness then computes every threshold and
    overflow against it, so a 1M-window model is compacted as the simulated one is."""
    if window is not None and window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window}")
    if model == "simulated":
        return SimulatedModel(
            scenario.plan, profile=_capped(scenario.profile, window), seed=seed,
            reader=get_reader(reader), view=view, rules=IMPORT_RULES,
        )  # fmt: skip
    delegate = resolve_model(model)
    return SimulatedModel(
        scenario.plan, profile=_capped(delegate.profile, window), seed=seed, delegate=delegate,
        max_usd=max_usd,
    )  # fmt: skip


def _capped(profile: ModelProfile, window: int | None) -> ModelProfile:
    return profile if window is None else replace(profile, context_window=window)


async def replay(
    scenario: Scenario,
    strategy: str,
    params: StrategySettings | Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    model: str | Model = "simulated",
    reader: str = "fallible",
    view: Break | None = None,
    store: Store | None = None,
    max_usd: float | None = None,
    progress: Progress | None = None,
    middleware: MiddlewareFactory | None = None,
    subagent_middleware: MiddlewareFactory | None = None,
    window: int | None = None,
    judge: Judge | None = None,
) -> Replay:
    """Replay `scenario` under `strategy` with `params` (strategy settings, or their dotted
    keys, over the scenario's scale defaults). A fresh lazy in-memory store unless one is
    given (its rows stay in Python until a read needs SQL: `harness.store.lazy_rows`).
    `middleware` builds extra middleware of yours for each session's agent (placed after the
    strategy's compaction); its subagents run the same unless `subagent_middleware` builds
    theirs (`lambda: ()`: none).
    `reader`: "fallible" (default) or "ideal"; `view`: a break arm of the sanity check.
    `window`: caps the model's window (see `build_model`) and scales the absolute-token
    thresholds the caller did not set (evals/run/thresholds.py). `judge`: an LLM judge that also
    grades every answered probe; its calls are real-model calls (a `delegate` record on the
    ledger, stream "judge"), so they count in `live_cost_usd` and against `max_usd`."""
    store = store if store is not None else Store(":memory:", lazy=True)
    if scenario.memory:
        memory = FileSystem(store, scenario.sessions[0].thread, grants=("/memories/",))
        for path, text in scenario.memory:
            memory.write(path, text)
    sim = build_model(
        scenario, model, seed=seed, reader=reader, max_usd=max_usd, view=view, window=window
    )
    defaults = scale_defaults(scenario, strategy)
    given = StrategySettings.parse(params)
    scaled = scaled_thresholds(strategy, window, defaults.dotted(), given.dotted())
    merged = StrategySettings.parse({**defaults.dotted(), **scaled, **given.dotted()})
    out = Replay(store=store, thresholds=scaled)
    # Each probe's audit normalises the window's texts and the files it names, most of them
    # the last probe's (or the trace's other cell's) too: each piece once per process.
    normal = normal_memo
    # A blob's text never changes (a rewrite makes a new blob): each probe that names a saved
    # file reads its row, and its text only the first time (this replay's memo).
    blobs: dict[str, str | None] = {}
    said = user_words(scenario)
    total = sum(len(s.turns) for s in scenario.sessions)
    done = 0
    for index, session in enumerate(scenario.sessions):
        agent = create_agent(
            sim,
            scenario.tools,
            system_prompt=scenario.system_prompt,
            store=store,
            name=scenario.name,
            max_steps=scenario.max_steps,
            strategy=strategy,
            strategy_params=merged,
            skills=(scenario.skills_dir,) if scenario.skills_dir else (),
            subagents=scenario.subagents,
            middleware=middleware() if middleware is not None else (),
            subagent_middleware=subagent_middleware() if subagent_middleware else None,
        )
        alive = out.error is None
        for k, turn in enumerate(session.turns):
            done += 1
            if progress is not None:
                progress(done, total)
            probe = scenario.probe(turn.probe) if turn.probe else None
            if not alive:
                if probe is not None:
                    out.probes.append(_unreached(probe))
                continue
            before = len(sim.ledger)
            shown: list[tuple[str, list[Message]]] = []
            sim.tap = (lambda sp, ms, kept=shown: kept.append((sp, list(ms)))) if probe else None
            try:
                result = await agent.run(
                    Message(role="user", content=turn.text, id=turn.id),
                    thread_id=session.thread,
                    run_id=f"{session.thread}-{k:04d}",
                )
            except ContextOverflowError:
                alive = False
                if out.overflow_turn is None:
                    out.overflow_turn = done
                    out.overflow_step = sum(r.role == "main" for r in sim.ledger) + 1
                if probe is not None:
                    out.probes.append(_unreached(probe))
                continue
            except BudgetExceededError as exc:
                alive = False
                out.error = str(exc)
                if probe is not None:
                    out.probes.append(_unreached(probe))
                continue
            out.statuses[result.status] = out.statuses.get(result.status, 0) + 1
            if probe is not None:
                calls = sim.ledger[before:]
                correct = is_correct(probe, result.output, said)
                answered = ProbeResult(
                    id=probe.id, kind=probe.kind, session=index, question=probe.question,
                    expected=probe.answer, answer=result.output,
                    correct=correct, status="answered",
                    retrieval_calls=sum(c.retrieval_calls for c in calls),
                    input_tokens=sum(c.input_tokens for c in calls),
                    window_tokens=next((c.input_tokens for c in calls if c.stream == "main"), 0),
                    outcome=outcome(probe, result.output, said, correct), source=probe.source,
                    carried=probe.carried,
                    **_audit(probe, shown, store, session.thread, result, normal, blobs),
                )  # fmt: skip
                if judge is not None:
                    try:
                        answered = await _judged(judge, sim, max_usd, answered, turn.id)
                    except BudgetExceededError as exc:
                        alive = False
                        out.error = str(exc)
                out.probes.append(answered)
        files = FileSystem(store, session.thread)
        for probe in scenario.probes:
            if probe.check is not None and probe.session == index:
                out.probes.append(_checked(probe, files))
        if scenario.recurring:
            out.weeks.append(week_numbers(store, session.thread, index, out.probes))
    out.ledger = list(sim.ledger)
    out.subagent_overflows = store.runs.subagent_overflows()
    out.usage = store.usage.by_role()
    out.summaries = len(store.summaries.all())
    out.offloads = store.events.count("offload_%")
    out.skill_reads, out.subagent_calls, out.memory_writes = _techniques(store)
    return out


def week_numbers(
    store: Store, thread: str, index: int, probes: Sequence[ProbeResult]
) -> dict[str, Any]:
    """One week of a recurring scenario (session `index`, on `thread`): the memory tokens
    injected at its start, its input tokens and cost, and its probes' accuracy, overall and
    by family (`pref`, `fact`, `decision`, `stale`; None when the week asked none)."""
    from evals.scenarios.weekly import FAMILIES, family

    loaded = store.events.rows(f"{thread}-0000", middleware="memory", action="loaded")
    detail = json.loads(loaded[0]["detail"]) if loaded else {}
    usage = store.usage.of_thread(thread)
    mine = [p for p in probes if p.session == index]

    def share(items: Sequence[ProbeResult]) -> float | None:
        return round(sum(p.correct for p in items) / len(items), 6) if items else None

    return {
        "week": index + 1,
        "memory_tokens": int(detail.get("memory_tokens", 0)),
        "input_tokens": int(usage["input_tokens"]),
        "cost_usd": round(float(usage["cost_usd"]), 6),
        "accuracy": share(mine),
        "probes": {f: share([p for p in mine if family(p.id) == f]) for f in FAMILIES},
    }


async def _judged(
    judge: Judge, sim: SimulatedModel, max_usd: float | None, result: ProbeResult, turn: str
) -> ProbeResult:
    if max_usd is not None and sim.spent_usd >= max_usd:
        raise BudgetExceededError(
            f"spent ${sim.spent_usd:.4f} of the ${max_usd:.2f} cap; stopping before judging"
        )
    verdict = await judge.judge(result.question, result.expected, result.answer)
    sim.ledger.append(
        CallRecord(
            role="delegate", stream="judge", turn=turn, input_tokens=verdict.input_tokens,
            cached_tokens=verdict.cached_tokens, cache_write_tokens=verdict.cache_write_tokens,
            output_tokens=verdict.output_tokens, tool_calls=0, cost_usd=verdict.cost_usd,
        )
    )  # fmt: skip
    return replace(
        result, judge_model=judge.name, judge_verdict=verdict.verdict,
        judge_cost_usd=verdict.cost_usd,
    )  # fmt: skip


def user_words(scenario: Scenario) -> tuple[str, ...]:
    """What the user wrote, apart from the probe questions (an answer quoting a question
    back proves nothing)."""
    return tuple(t.text for s in scenario.sessions for t in s.turns if not t.probe)


def _techniques(store: Store) -> tuple[int, int, int]:
    """How often the agents read a skill, handed a task to a subagent, and wrote memory."""
    skills = tasks = memory = 0
    for c in store.messages.all_tool_calls():
        path = str(c.get("arguments", {}).get("file_path", ""))
        skills += c["name"] == "read_file" and path.startswith("/skills/")
        tasks += c["name"] == "task"
        memory += c["name"] in ("write_file", "edit_file") and path.startswith("/memories/")
    return skills, tasks, memory


def scale_defaults(scenario: Scenario, strategy: str) -> StrategySettings:
    """The scenario's scaled thresholds that apply to `strategy`'s middleware (a small-scale
    offload limit means nothing to `truncate`)."""
    valid = set(valid_params(middleware_names(strategy)))
    return StrategySettings.parse({k: v for k, v in scenario.params.items() if k in valid})


def _audit(
    probe: Probe,
    shown: Sequence[tuple[str, Sequence[Message]]],
    store: Store,
    thread: str,
    result: RunResult,
    normal: Callable[[str], str],
    blobs: dict[str, str | None],
) -> dict[str, Any]:
    """A probe's availability at its point of use (the first request of its turn, as shown),
    and whether its retrievals brought the value back (the tool results of its turn: a
    question's turn calls tools only to retrieve). `blobs`: texts of the blobs read so far."""
    files = FileSystem(store, thread)

    def read(path: str) -> str | None:
        # `files.read_text(path)`, None where it raises, a blob read once.
        try:
            stored = files.open(path)
            if stored.blob_id is None:
                return decode(stored.inline)
            if stored.blob_id not in blobs:
                blobs[stored.blob_id] = decode(stored.read_bytes())
            return blobs[stored.blob_id]
        except (FileError, FileNotFoundError, ValueError):
            return None

    found = None
    if shown:
        system_prompt, messages = shown[0]
        found = availability(probe.answer, system_prompt, messages, read, probe.question, normal)
    results = [m for m in result.messages if m.role == "tool"]
    return {
        "availability": found.verdict if found else None,
        "evidence": found.evidence if found else "",
        "retrieval_found": any(mentioned(m.content, probe.answer, normal) for m in results)
        if results
        else None,
    }


def _unreached(probe: Probe) -> ProbeResult:
    return ProbeResult(
        id=probe.id, kind=probe.kind, session=probe.session, question=probe.question,
        expected=probe.answer, answer="", correct=False, status="not_reached",
        source=probe.source, carried=probe.carried, availability=NOT_REACHED.verdict,
        evidence=NOT_REACHED.evidence,
    )  # fmt: skip


def _checked(probe: Probe, files: FileSystem) -> ProbeResult:
    assert probe.check is not None
    try:
        text = files.read_text(probe.check.path)
    except (FileNotFoundError, ValueError):
        text = ""
    ok = bool(text) and check_file(probe.check, text)
    return ProbeResult(
        id=probe.id, kind=probe.kind, session=probe.session, question=probe.question,
        expected=probe.answer, answer="yes" if ok else "no", correct=ok, status="checked",
        outcome="right" if ok else "wrong", source=probe.source,
    )  # fmt: skip


# -- file checks -------------------------------------------------------------------------------


def check_file(check: FileCheck, text: str) -> bool:
    if any(s not in text for s in check.contains):
        return False
    if check.bullets:
        sections = _sections(text)
        return bool(sections) and all(
            body and all(line.startswith("- ") for line in body) for body in sections.values()
        )
    return True


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    return sections
