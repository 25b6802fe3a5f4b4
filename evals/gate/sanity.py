"""`ctxlab check --sanity`: the eval tests itself. Break arms starve the reader of what a
probe's answer could come from; accuracy must follow the data, or the eval is measuring
something else (a leak through the plan, a grep that cannot miss).

For each scenario (small scale, `full`, the default reader) and each break arm:
- `empty-window`: only memory-derived probes may pass;
- `blank-tools`: no probe whose answer comes from a tool result may pass;
- `corrupt-digits`: no such probe whose answer holds a digit may pass;
- `withhold-summaries`: where the normal run summarized, at least one probe fewer passes;
- `relabel` (scenarios that name their entities): entity names swapped in pairs in every
  domain tool's output, in the main stack and in every subagent's; no probe whose answer comes
  from a tool result may pass, so the bound is the data-free floor (the share of probes
  answered from the plan's own words, memory or a skill). A scenario file's entities are its
  probes' values named by role, paired within a shape, across roles where it can be
  (evals/scenarios/recorded.py), so a relabelled trace answers every such question with
  another value of the same shape;
- `questions-only` (scenario files): only the probe questions asked so far are in the window;
  the bound is the empty window's accuracy, and a probe that passes here but not on an empty
  window leaks its answer through another probe's question.
The bound is the accuracy the probes that may pass allow; an arm fails when its accuracy is
over the bound or when a probe that may not pass passed (`leaks`). Carried probes (restated
by the recorded user or agent) are left out of every arm, as the headline leaves them out.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.run.replay import MiddlewareFactory, replay
from evals.scenarios import get_scenario, list_scenarios
from evals.scenarios.base import Probe, Scenario
from evals.scenarios.from_file import is_scenario_file
from evals.scoring.records import ProbeResult, Replay
from evals.simulated import BREAKS, DEFAULT_READER
from evals.simulated.breaks import FILE_ONLY, Relabel, entity_pairs
from harness.middleware.base import Middleware

STRATEGY = "full"


@dataclass(frozen=True)
class SanityResult:
    scenario: str
    arm: str
    accuracy: float
    bound: float | None  # None: nothing to break in this scenario (see `note`)
    leaks: tuple[str, ...]
    probes: int
    note: str = ""

    @property
    def ok(self) -> bool:
        if self.bound is None:
            return True
        return self.accuracy <= self.bound + 1e-9 and not self.leaks

    @property
    def checked(self) -> bool:
        """Whether the arm could have failed: a bound of 100% lets every probe pass and leaves
        nothing to leak, so meeting it proves nothing (and is not counted as a pass)."""
        return self.bound is not None and self.bound < 1.0 - 1e-9

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "arm": self.arm, "accuracy": self.accuracy,
            "bound": self.bound, "leaks": list(self.leaks), "probes": self.probes, "ok": self.ok,
            "checked": self.checked, "note": self.note,
        }  # fmt: skip

    def line(self) -> str:
        status = "FAILED" if not self.ok else "ok" if self.checked else "n/a"
        head = f"{status:<6} {self.scenario:<22} {self.arm:<19}"
        if self.bound is None:
            return f"{head} {self.note}"
        if not self.checked:
            return f"{head} bound 100%: every probe may pass, nothing to check"
        leaks = f"; leaked: {', '.join(self.leaks[:5])}" if self.leaks else ""
        return f"{head} accuracy {self.accuracy:6.1%} (bound {self.bound:6.1%}){leaks}"


def may_pass(probe: Probe, arm: str) -> bool:
    """Whether `probe` can still be answered right under the break `arm`."""
    if arm == "empty-window":
        return probe.source == "memory"
    if arm == "blank-tools":
        return probe.source != "tool"
    if arm == "corrupt-digits":
        digits = [probe.answer, *(probe.check.contains if probe.check else ())]
        return probe.source != "tool" or not any(re.search(r"\d", v) for v in digits)
    if arm == "relabel":  # pasted user data is not a tool's output: relabelling leaves it
        return probe.source != "tool"
    raise ValueError(f"no per-probe rule for break arm {arm!r}")


def _scored(run: Replay) -> list[ProbeResult]:
    """The probes a break is judged on: all but the carried ones, which the recorded user or
    agent restated (no break of the tools can take those out, and the headline scores them
    apart the same way)."""
    return [p for p in run.probes if not p.carried]


def _accuracy(run: Replay) -> float:
    probes = _scored(run)
    return round(sum(p.correct for p in probes) / len(probes), 6) if probes else 0.0


def default_arms(file: bool) -> tuple[str, ...]:
    """The break arms for a built-in scenario, or (`file`) for a scenario file."""
    return tuple(a for a in BREAKS if file or a not in FILE_ONLY)


def relabel_middleware(scenario: Scenario) -> MiddlewareFactory:
    """`Relabel` on every domain tool of `scenario` (its subagents' tools included); the
    replay's agents hand it to their subagents, so both stacks read the swapped data."""
    tools = {t.name for t in scenario.tools}
    tools |= {t.name for s in scenario.subagents for t in (s.tools or ())}
    if scenario.recorded_answers and scenario.subagents:
        # A recorded subagent's answer restates its (now swapped) data as literal text: the
        # `task` result is swapped as the answer a relabelled subagent would have given.
        tools.add("task")

    def build() -> list[Middleware]:
        return [Relabel(scenario.entities, tools)]

    return build


async def check_scenario(
    scenario: Scenario, *, reader: str = DEFAULT_READER, arms: Sequence[str] | None = None
) -> list[SanityResult]:
    """Run `scenario` normally and under each break arm (default: those of a built-in
    scenario); one result per arm."""
    normal = await replay(scenario, STRATEGY, seed=scenario.seed, reader=reader)
    runs: dict[str, Replay] = {}

    async def broken(arm: str) -> Replay:
        if arm not in runs:
            view = BREAKS[arm]
            middleware = None
            if arm == "questions-only":
                view = replace(view, questions=frozenset(p.question for p in scenario.probes))
            elif arm == "relabel":
                middleware = relabel_middleware(scenario)
            runs[arm] = await replay(
                scenario, STRATEGY, seed=scenario.seed, reader=reader, view=view,
                middleware=middleware,
            )  # fmt: skip
        return runs[arm]

    out = []
    for arm in arms if arms is not None else default_arms(False):
        if arm == "relabel" and not scenario.entities:
            out.append(SanityResult(scenario.name, arm, 0.0, None, (), len(scenario.probes),
                                    "names no entities: nothing to relabel"))  # fmt: skip
            continue
        run = await broken(arm)
        floor = await broken("empty-window") if arm == "questions-only" else None
        out.append(_judge(scenario, arm, normal, run, floor))
    for run in (normal, *runs.values()):
        if run.store is not None:
            run.store.close()
    return out


def _judge(
    scenario: Scenario, arm: str, normal: Replay, broken: Replay, floor: Replay | None = None
) -> SanityResult:
    accuracy = _accuracy(broken)
    n = len(_scored(broken))
    if arm == "withhold-summaries":
        if not normal.summaries:
            return SanityResult(scenario.name, arm, accuracy, None, (), n,
                                "no summaries in the normal run: nothing to withhold")  # fmt: skip
        if _same_availability(normal, broken):
            why = "the summaries held no probe's value: nothing to withhold"
            return SanityResult(scenario.name, arm, accuracy, None, (), n, why)
        bound = round(max(_accuracy(normal) - 1 / n, 0.0), 6)
        return SanityResult(scenario.name, arm, accuracy, bound, (), n)
    if arm == "questions-only":
        assert floor is not None
        empty = {p.id for p in _scored(floor) if p.correct}
        leaks = tuple(p.id for p in _scored(broken) if p.correct and p.id not in empty)
        return SanityResult(scenario.name, arm, accuracy, _accuracy(floor), leaks, n)
    probes = [p for p in scenario.probes if not p.carried]
    kept = relabel_kept(probes, scenario.entities) if arm == "relabel" else set()
    allowed = {p.id for p in probes if may_pass(p, arm)} | kept
    leaks = tuple(p.id for p in _scored(broken) if p.correct and p.id not in allowed)
    bound = round(len(allowed) / len(probes), 6) if probes else 0.0
    return SanityResult(scenario.name, arm, accuracy, bound, leaks, n)


def _same_availability(normal: Replay, broken: Replay) -> bool:
    """Every scored probe is as available (in view, one read away, lost) with the summaries
    withheld as with them: no summary was where a probe's value stood, so withholding them
    cannot lower accuracy (the reader finds each value where it found it before)."""
    before = {p.id: p.availability for p in _scored(normal)}
    return all(before.get(p.id) == p.availability for p in _scored(broken))


def relabel_kept(probes: Sequence[Probe], entities: Sequence[str]) -> set[str]:
    """The probes named by role that relabel cannot move: a value with no partner to swap with
    is left as it was, and a question that names part of its own answer ("the path of
    `test_products.py` that `find` listed") finds it after the swap too, since both values of
    a pair stay in the source, each under its own name."""
    swapped = entity_pairs(entities)
    return {
        p.id for p in probes
        if p.terms and (p.answer not in swapped or any(t in p.answer for t in p.terms))
    }  # fmt: skip


def run_sanity(
    scenarios: Sequence[str] | None = None,
    *,
    reader: str = DEFAULT_READER,
    seed: int = 0,
    as_json: bool = False,
    say: Callable[[str], None] = print,
) -> int:
    """`ctxlab check --sanity`: 0 when every break arm drives accuracy under its bound."""
    results: list[SanityResult] = []
    for name in scenarios or list_scenarios():
        arms = default_arms(is_scenario_file(name))
        scenario = get_scenario(name, seed, "small")
        results += asyncio.run(check_scenario(scenario, reader=reader, arms=arms))
    for r in results:
        say(json.dumps(r.to_dict(), sort_keys=True) if as_json else r.line())
    bad = [r for r in results if not r.ok]
    checked = [r for r in results if r.checked]
    if not as_json:
        verdict = "FAILED" if bad else "passed"
        idle = len(results) - len(checked)
        skipped = f"; {idle} could not fail (n/a)" if idle else ""
        say(f"sanity {verdict}: {len(checked) - len(bad)}/{len(checked)} break arms that can "
            f"fail{skipped} ({reader} reader, {STRATEGY}, small scale, seed {seed})")  # fmt: skip
    return 1 if bad else 0


__all__ = [
    "SanityResult",
    "check_scenario",
    "default_arms",
    "may_pass",
    "relabel_middleware",
    "run_sanity",
]
