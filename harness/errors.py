"""Errors raised by the harness. Tool and file failures the model should see are returned as
text, not raised; these are for the caller."""


class HarnessError(Exception):
    """Base class for ctxlab harness errors."""


class ModelError(HarnessError):
    """The model provider failed in a way retries did not fix. `status_code` is the provider's
    HTTP status when it answered with one (a step runner may retry 429 and 5xx later)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ContextOverflowError(ModelError):
    """The request exceeded the model's context window (provider 400 / 'prompt is too long')."""

    def __init__(
        self,
        message: str,
        *,
        tokens: int | None = None,
        limit: int | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.tokens = tokens
        self.limit = limit


class UnknownModelError(HarnessError):
    """A model name cannot be resolved: no profile (pass an explicit ModelProfile), an unknown
    provider, or no server to reach it at."""


class ToolDefinitionError(HarnessError):
    """A function cannot be turned into a tool (missing hints, bad name...)."""


class MCPServerError(HarnessError):
    """An MCP server could not be started, reached or listed (when the agent is built), or its
    spec is wrong."""


class StoreError(HarnessError):
    """The DuckDB store could not be opened or migrated."""


class QueryError(StoreError):
    """A user's SQL was refused (it does more than read) or failed as written."""
