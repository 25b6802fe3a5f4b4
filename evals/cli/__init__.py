"""The `scenarios`, `eval`, `report`, `check` and `export` commands of `ctxlab` (flows/cli calls
`register`), one module each; options.py holds what they (and flows/cli) share. Heavy imports
happen inside each command, so `ctxlab --help` stays fast."""

from __future__ import annotations

from typing import Any

from evals.cli import check, eval, export, report, scenarios
from evals.cli.options import DEFAULT_SEEDS, STRATEGIES, SUITE_NAMES

__all__ = ["DEFAULT_SEEDS", "STRATEGIES", "SUITE_NAMES", "register"]


def register(subparsers: Any) -> None:
    """Add the eval commands to `ctxlab`'s subparsers."""
    for command in (scenarios, eval, report, check, export):
        command.add_parser(subparsers)
