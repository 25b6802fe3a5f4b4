"""What the SDK adapters share: naming, client set-up, and errors that never show the key.

The OpenAI and Anthropic SDKs are generated from one template, so their clients and error
classes have the same shape. Each adapter builds its own client (`_connect`) and reads its own
provider's HTTP errors; timeouts, connection failures and redaction are handled here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar, Generic, Protocol, TypeVar

from harness.errors import ContextOverflowError, ModelError
from harness.profiles import ModelProfile, get_profile


class _URL(Protocol):
    @property
    def host(self) -> str: ...


class SDKClient(Protocol):
    """The parts of an SDK client the shared code reads."""

    @property
    def api_key(self) -> str | None: ...

    @property
    def base_url(self) -> _URL: ...

    @property
    def max_retries(self) -> int: ...


ClientT = TypeVar("ClientT", bound=SDKClient)


class SDKModel(ABC, Generic[ClientT]):
    """Base of the SDK adapters. Keys and base URLs come from the arguments or the SDK's own
    environment variables; `client` injects a ready client instead."""

    prefix: ClassVar[str]

    def __init__(
        self,
        model_name: str,
        *,
        profile: ModelProfile | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        client: ClientT | None = None,
    ) -> None:
        self.model = model_name
        # The spec resolve_model accepts, so a run's recorded model name can be resolved again.
        self.name = f"{self.prefix}:{model_name}"
        self.profile = profile or get_profile(self.name)
        if client is None:
            client = self._connect(
                api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
            )
        self._client: ClientT = client

    @abstractmethod
    def _connect(
        self, *, api_key: str | None, base_url: str | None, max_retries: int, timeout: float
    ) -> ClientT:
        """The SDK client; raises `ModelError` saying which variable to set when there are no
        credentials, rather than letting the first request fail obscurely."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, host={self._client.base_url.host!r})"

    def _secrets(self) -> Iterable[object]:
        return (self._client.api_key,)

    def _redact(self, text: str) -> str:
        # Provider messages sometimes echo request details; never let a key through.
        for secret in self._secrets():
            if isinstance(secret, str) and len(secret) >= 8:
                text = text.replace(secret, "***")
        return text

    def _overflow(self, detail: str, tokens: int | None, limit: int | None) -> ContextOverflowError:
        return ContextOverflowError(
            self._redact(f"{self.name}: context overflow: {detail}"), tokens=tokens, limit=limit
        )

    def _http_error(self, status: int, detail: str) -> ModelError:
        return ModelError(self._redact(f"{self.name}: HTTP {status}: {detail}"))

    def _transport_error(self, exc: Exception, *, timed_out: bool, unreachable: bool) -> ModelError:
        """The error for an SDK failure without an HTTP status that the SDK's own retries did
        not fix: a timeout, a connection that never got through, or anything else."""
        if timed_out:
            return ModelError(
                f"{self.name}: request timed out after {self._client.max_retries} retries"
            )
        if unreachable:
            # The SDK's own text is a bare "Connection error."; the root cause says why.
            return ModelError(self._redact(f"{self.name}: connection failed: {root_cause(exc)}"))
        return ModelError(self._redact(f"{self.name}: {type(exc).__name__}: {exc}"))


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a `__cause__` / `__context__` chain."""
    seen = {id(exc)}
    while (inner := exc.__cause__ or exc.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    return exc
