"""The three SDK adapters as test parameters: which class, which model name, which key variable
and where the API sits under the fake provider's root URL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest

from harness.models import Model
from harness.models.anthropic import AnthropicModel
from harness.models.openai import OpenAIChatModel, OpenAIResponsesModel

KEYS = {"OPENAI_API_KEY": "sk-test-NEVER-LEAK-0123456789",
        "ANTHROPIC_API_KEY": "sk-ant-test-NEVER-LEAK-0123456789"}  # fmt: skip

Build = Callable[..., Model]  # keyword arguments of the adapter's constructor -> the adapter


@dataclass(frozen=True)
class Adapter:
    key_variable: str
    cls: Callable[..., Model]
    model_name: str
    api_path: str  # what the SDK expects after the server's root URL in base_url

    def factory(self, root_url: str) -> Build:
        return partial(self.cls, self.model_name, base_url=root_url + self.api_path)

    @property
    def key(self) -> str:
        return KEYS[self.key_variable]


ADAPTERS = {
    "openai": Adapter("OPENAI_API_KEY", OpenAIResponsesModel, "gpt-6.2-sol", "/v1"),
    "openai-chat": Adapter("OPENAI_API_KEY", OpenAIChatModel, "gpt-6.2-sol", "/v1"),
    "anthropic": Adapter("ANTHROPIC_API_KEY", AnthropicModel, "claude-sonnet-5-5", ""),
}


def set_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test keys in the SDKs' variables, and no base URL or token from the environment."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
