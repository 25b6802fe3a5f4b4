"""Runnable agents: what `ctxlab run AGENT` and the `agent_run` flow can build.

An agent is registered under a name with a factory. `AGENT` may also be `module:attribute`,
naming an `AgentSpec` (or a factory function) anywhere on the import path, so users run their
own agents through the same flow without touching ctxlab.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agent import Agent
from harness.steps import StepRunner
from harness.store import Store


class UnknownAgentError(LookupError):
    """No agent is registered under a name and it is not an importable `module:attribute`."""


@dataclass(frozen=True)
class AgentOptions:
    """What the flow hands a factory: build the agent on this store and step runner."""

    store: Store
    step_runner: StepRunner
    model: str = "simulated"
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentSpec:
    """A runnable agent.

    build: returns the configured agent; the flow runs it.
    session: the inputs of one default session (one harness run each, on one thread) when
        the user gives none; e.g. the weekly analysis, then the feedback on its draft.
    thread: the default thread id; runs on one thread share their conversation.
    """

    name: str
    description: str
    build: Callable[[AgentOptions], Agent]
    session: Callable[[AgentOptions], Sequence[str]] = lambda _options: ()
    thread: str | None = None


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

