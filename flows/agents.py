"""Runnable agents: what `ctxlab run AGENT` and the `agent_run` flow can build.

An agent is registered under a name with a factory. `AGENT` may also be `module:attribute`,
naming an `AgentSpec` (or a factory function) anywhere on the import path, so users run their
own agents through the same flow without touching ctxlab.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from flows.errors import UnknownAgentError
from harness.agent import Agent, create_agent
from harness.mcp import MCPServer
from harness.models.base import Model
from harness.steps import StepRunner
from harness.store import Store

if TYPE_CHECKING:
    from evals.scenarios.base import Scenario


@dataclass(frozen=True)
class AgentOptions:
    """What the flow hands a factory: build the agent on this store and step runner, with
    the spec's MCP servers (`create_agent(..., mcp_servers=options.mcp_servers)`)."""

    store: Store
    step_runner: StepRunner
    model: str = "simulated"
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    mcp_servers: tuple[MCPServer, ...] = ()


@dataclass(frozen=True)
class AgentSpec:
    """A runnable agent.

    build: returns the configured agent; the flow runs it.
    session: the inputs of one default session (one harness run each, on one thread) when
        the user gives none; e.g. the weekly analysis, then the feedback on its draft.
    thread: the default thread id; runs on one thread share their conversation.
    mcp_servers: the MCP servers whose tools the agent uses; `build` gets them as
        `options.mcp_servers` and must hand them to `create_agent` (`build_agent` checks).
    """

    name: str
    description: str
    build: Callable[[AgentOptions], Agent]
    session: Callable[[AgentOptions], Sequence[str]] = lambda _options: ()
    thread: str | None = None
    mcp_servers: Sequence[MCPServer] = ()


def build_agent(spec: AgentSpec, options: AgentOptions) -> Agent:
    """The agent `spec` builds with `options` and the spec's MCP servers. The caller closes
    it (`Agent.close` stops the servers)."""
    agent = spec.build(replace(options, mcp_servers=tuple(spec.mcp_servers)))
    if len(agent.connections) < len(spec.mcp_servers):
        agent.close()
        raise ValueError(
            f"agent {spec.name!r} names MCP servers ({', '.join(s.name for s in spec.mcp_servers)})"
            " but its build did not pass options.mcp_servers to create_agent"
        )
    return agent


REGISTRY: dict[str, AgentSpec] = {}


def register(spec: AgentSpec) -> AgentSpec:
    REGISTRY[spec.name] = spec
    return spec


def get_agent(name: str) -> AgentSpec:
    """The spec registered as `name`, or the `module:attribute` it names."""
    if name in REGISTRY:
        return REGISTRY[name]
    module_name, sep, attribute = name.partition(":")
    if not sep:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise UnknownAgentError(
            f"no agent named {name!r}; known: {known} (or give module:attribute)"
        )
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownAgentError(f"cannot load agent {name!r}: {exc}") from exc
    if isinstance(target, AgentSpec):
        return target
    if callable(target):
        return AgentSpec(name=name, description=target.__doc__ or name, build=target)
    raise UnknownAgentError(f"{name!r} is neither an AgentSpec nor a factory")


# -- the competitive-analysis agent --------------------------------------------------------

COMPETITIVE = "competitive-analysis"


@functools.cache
def _scenario(seed: int, scale: str, weeks: int | None = None) -> Scenario:
    from evals.scenarios.competitive_analysis import build

    return build(seed, scale, weeks)


# `weeks=N`: the recurring family (a year of Mondays), whose week K is `week=K`.
_COMPETITIVE_PARAMS = ("scale", "seed", "week", "weeks")


def _competitive_options(options: AgentOptions) -> tuple[Scenario, int]:
    from evals.run.settings import Settings

    params = Settings.of(options.params).scenario.as_dict()
    unknown = [k for k in params if k not in _COMPETITIVE_PARAMS]
    if unknown:
        raise ValueError(
            f"unknown parameter {unknown[0]!r} for {COMPETITIVE}; agent parameters: "
            f"{', '.join(_COMPETITIVE_PARAMS)} (strategy parameters have a dot: mask.keep)"
        )
    seed, scale = params.get("seed", 0), params.get("scale", "small")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    if scale not in ("small", "full"):
        raise ValueError(f"scale must be small or full, got {scale!r}")
    recurring = params.get("weeks")
    if recurring is not None:
        from evals.scenarios.weekly import check_weeks

        check_weeks(recurring)
    scenario = _scenario(seed, scale, recurring)
    weeks = len(scenario.sessions)
    week = params.get("week", "auto")
    if week == "auto" and recurring is not None:
        week = _last_noted_week(options.store) + 1
        if week > weeks:
            raise ValueError(f"all {weeks} weeks are done in this store (memory notes week "
                             f"{week - 1}); give weeks=N for a longer run")  # fmt: skip
    elif week == "auto":
        week = 2 if _remembered_format(options.store) else 1
    # A week past the scenario's would silently run its last one, recorded as the week asked.
    if isinstance(week, bool) or not isinstance(week, int) or not 1 <= week <= weeks:
        raise ValueError(f"week must be auto or 1 to {weeks} ({COMPETITIVE} has {weeks} "
                         f"weeks), got {week!r}")  # fmt: skip
    return scenario, week


def competitive_week(store: Store, params: dict[str, Any]) -> int:
    """The week a competitive-analysis run with `params` does on `store` (`week=auto`: week 2
    once week 1's format preference is in memory)."""
    from harness.steps import InlineRunner

    options = AgentOptions(store=store, step_runner=InlineRunner(), params=params)
    return _competitive_options(options)[1]


def resolve_params(agent: str, params: dict[str, Any], store: Store) -> dict[str, Any]:
    """The parameters the run will use, with the competitive-analysis week and scale made
    explicit, so the run says (and records) which it did, and a resumed run rebuilds the same
    week: `week=auto` (the Monday deployment's) resolved again after the killed week noted
    itself in memory would pick the week after."""
    if get_agent(agent).name != COMPETITIVE:
        return params
    resolved = {"scale": "small", **params}
    if resolved.get("week", "auto") == "auto":
        resolved["week"] = competitive_week(store, resolved)
    return resolved


def _last_noted_week(store: Store) -> int:
    """The latest week whose log line memory holds (0 for none): each week of the recurring
    family ends by noting `- Week of DATE` there, and consolidation keeps the newest."""
    import datetime as dt
    import re

    from evals.scenarios.market import WEEK_1
    from harness.files.filesystem import FileSystem

    files = FileSystem(store, "_")
    if not files.exists("/memories/AGENTS.md"):
        return 0
    dates = re.findall(r"^- Week of (\d{4}-\d{2}-\d{2}):", files.read_text("/memories/AGENTS.md"),
                       re.MULTILINE)  # fmt: skip
    start = dt.date.fromisoformat(WEEK_1)
    return max(((dt.date.fromisoformat(d) - start).days // 7 + 1 for d in dates), default=0)


def _remembered_format(store: Store) -> bool:
    """Week 1 ends with the team's format preference saved to memory; a later week finds it."""
    from harness.files.filesystem import FileSystem

    files = FileSystem(store, "_")
    return files.exists("/memories/AGENTS.md") and "bullets" in files.read_text(
        "/memories/AGENTS.md"
    )


def competitive_session(options: AgentOptions) -> list[str]:
    """The week's work, without the evaluation's probe questions."""
    scenario, week = _competitive_options(options)
    return [t.text for t in scenario.sessions[week - 1].turns if t.probe is None]


def build_competitive(options: AgentOptions) -> Agent:
    """The articles' weekly competitive-analysis agent over the flagship scenario's data: the
    market-export, news and article tools, the `market-researcher` subagent, the `qbr-report`
    skill and long-term memory. With `simulated` it follows the scenario's plan offline."""
    from evals.run.replay import scale_defaults
    from evals.run.settings import Settings
    from evals.simulated import SimulatedModel

    scenario, _week = _competitive_options(options)
    strategy = options.strategy or "full"
    settings = Settings.of(options.params).strategy
    model: str | Model
    if options.model == "simulated":
        model = SimulatedModel(scenario.plan, profile=scenario.profile, seed=scenario.seed)
    else:
        model = options.model
    return create_agent(
        model,
        scenario.tools,
        system_prompt=scenario.system_prompt,
        store=options.store,
        name=COMPETITIVE,
        max_steps=scenario.max_steps,
        step_runner=options.step_runner,
        strategy=strategy,
        strategy_params=settings.over(scale_defaults(scenario, strategy)),
        skills=(scenario.skills_dir,) if scenario.skills_dir else (),
        subagents=scenario.subagents,
    )


register(
    AgentSpec(
        name=COMPETITIVE,
        description=(
            "The weekly competitive analysis from the articles: market exports, news, "
            "articles, a market-researcher subagent, the qbr-report skill and memory. "
            "Params: scale=small|full, seed=N, week=1|2|auto; weeks=N for the recurring "
            "family (week=1..N|auto), or `ctxlab run competitive-analysis --weeks N`."
        ),
        build=build_competitive,
        session=competitive_session,
    )
)
