"""The exceptions of `flows`: the command line, the agents and the Prefect server."""

from __future__ import annotations


class UnknownAgentError(LookupError):
    """No agent is registered under a name and it is not an importable `module:attribute`."""


class UsageError(Exception):
    """A mistake on the command line: reported in one line on stderr, exit 2."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class ServerError(RuntimeError):
    """The Prefect server could not be started or reached."""
