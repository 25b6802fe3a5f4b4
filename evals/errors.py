"""The exceptions of `evals`, one place to find what an eval can refuse or fail with."""

from __future__ import annotations

from harness.errors import HarnessError


class UnknownScenarioError(LookupError):
    """No built-in scenario has that name and it is not a scenario file."""


class UnsafeYamlError(ValueError):
    """A YAML file that is refused; the message is one line naming the file and the line."""


class ScenarioFileError(ValueError):
    """A scenario file that cannot be loaded; the message names the file, line and field."""


class TraceFormatError(ValueError):
    """Nothing sound in the file: the message says why in one line, naming the file."""


class RunNotFoundError(LookupError):
    """The run or thread to import is not in the store (the message says which)."""


class StoreSaveError(RuntimeError):
    """Results could not be stored; they were written to a JSON file instead."""


class BudgetExceededError(HarnessError):
    """A live replay reached its spending cap (`max_usd`) before a real-model call."""


class CueTooSlowError(ValueError):
    """A cue's regex ran out of its time budget: a scenario file's cue is someone else's
    regex, and a nested repeat can take exponential time."""
