"""Eval arms: the harness strategies, plus arms that exist only to measure them.

    arm               what runs
    <strategy>        the harness strategy of that name (`harness.strategies.STRATEGIES`), on
                      the scenario's window: `none` overflowing is a result, recorded
    none-unbounded    `none` on a window nothing overflows: the cost of keeping everything,
                      the baseline every saving is quoted against
    original          `none` on an unbounded window plus a middleware that replays the recorded
                      harness's own compactions (evals/run/original.py): at each call the
                      context that harness sent; for a trace it never compacted, everything
    oracle            `none` plus a middleware that leaves in the window only the messages the
                      plan's next steps or a remaining probe need (evals/run/oracle.py): the token
                      lower bound at full accuracy

An arm that is not a harness strategy changes the scenario (its window) or adds middleware
built from the scenario; the result keeps the arm's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evals.run.replay import MiddlewareFactory
from evals.run.settings import Settings
from evals.scenarios.base import Scenario
from harness.errors import HarnessError
from harness.middleware.base import Middleware
from harness.strategies import STRATEGIES, middleware_names, valid_params

# Larger than any request a scenario makes (long-horizon's whole history fits), so nothing
# overflows; the window does not change prices, so the run's cost is that of keeping it all.
UNBOUNDED_WINDOW = 100_000_000


@dataclass(frozen=True)
class Arm:
    """How to run one arm: the harness strategy, whether the window is lifted, and extra
    middleware built from the scenario."""

    name: str
    strategy: str
    unbounded: bool = False
    middleware: Callable[[Scenario], MiddlewareFactory] | None = None

    def scenario(self, scenario: Scenario) -> Scenario:
        """`scenario` as this arm runs it."""
        return replace(scenario, window=UNBOUNDED_WINDOW) if self.unbounded else scenario

    def with_middleware(
        self, scenario: Scenario, extra: MiddlewareFactory | None
    ) -> MiddlewareFactory | None:
        """The caller's middleware factory `extra` plus this arm's, if any."""
        if self.middleware is None:
            return extra
        own = self.middleware(scenario)
        if extra is None:
            return own
        return lambda: [*own(), *extra()]

    def subagent_middleware(self, extra: MiddlewareFactory | None) -> MiddlewareFactory | None:
        """What the subagents run of `with_middleware`'s: the caller's `extra` only (None: the
        same as the main agent). The arm's own middleware follows the main plan (the oracle
        reads its turns), so it never runs in a subagent."""
        if self.middleware is None:
            return None
        return extra or _NO_MIDDLEWARE


def _no_middleware() -> Sequence[Middleware]:
    return ()


_NO_MIDDLEWARE: MiddlewareFactory = _no_middleware


def _oracle(scenario: Scenario) -> MiddlewareFactory:
    from evals.run.oracle import oracle_middleware

    return oracle_middleware(scenario)


def _original(scenario: Scenario) -> MiddlewareFactory:
    from evals.run.original import original_middleware

    return original_middleware(scenario)


EVAL_ARMS: dict[str, Arm] = {
    "none-unbounded": Arm("none-unbounded", "none", unbounded=True),
    "original": Arm("original", "none", unbounded=True, middleware=_original),
    "oracle": Arm("oracle", "none", unbounded=True, middleware=_oracle),
}
ARMS: tuple[str, ...] = (*STRATEGIES, *EVAL_ARMS)


def get_arm(name: str) -> Arm:
    """The arm called `name`: a harness strategy or one of `EVAL_ARMS`."""
    if name in EVAL_ARMS:
        return EVAL_ARMS[name]
    if name in STRATEGIES:
        return Arm(name, name)
    raise HarnessError(f"unknown arm {name!r}; choose one of {', '.join(ARMS)}")


def arm_params(name: str) -> list[str]:
    """The dotted parameter keys arm `name` takes (those of its harness strategy's stack)."""
    return valid_params(middleware_names(get_arm(name).strategy))


def params_by_arm(
    params: Settings | Mapping[str, Any], arms: Sequence[str], *, strict: bool = True
) -> dict[str, Settings]:
    """`params` split among `arms`: each arm gets the keys its stack takes (`summarize.trigger`
    goes to `summarize` and `full`, not to `none`). Raises HarnessError, when `strict`, on a
    key none of them takes, naming the arms that would. A key without a dot is the scenario's
    own (`weeks`): every arm gets it, and the scenario checks it."""
    params = Settings.of(params)
    own = set(params.scenario.as_dict())
    taken = {arm: set(arm_params(arm)) | own for arm in dict.fromkeys(arms)}
    for key in params:
        if not strict or any(key in keys for keys in taken.values()):
            continue
        others = [a for a in ARMS if a not in taken and key in arm_params(a)]
        if others:
            raise HarnessError(
                f"strategy parameter {key!r} is taken by none of the arms run here "
                f"({', '.join(taken)}); add --strategy {others[0]} (arms that take it: "
                f"{', '.join(others)})"
            )
        keys = sorted(set().union(*taken.values()))
        raise HarnessError(f"unknown strategy parameter {key!r}; valid keys: {', '.join(keys)}")
    return {arm: params.only(keys) for arm, keys in taken.items()}
