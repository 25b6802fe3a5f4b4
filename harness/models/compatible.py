"""`openai-compatible:<model>`: any server that speaks Chat Completions (vLLM, Ollama, llama.cpp,
OpenRouter, a company gateway), reached at a base URL of the user's.

The URL and key come from the arguments, else `$OPENAI_COMPATIBLE_BASE_URL` and
`$OPENAI_COMPATIBLE_API_KEY` (the CLI's `--base-url` sets the first, so the flow's workers see
it). Never `OPENAI_API_KEY`: that key is for OpenAI, and a third-party server must not receive
it. Local servers take no key; the SDK needs one, so a placeholder is sent.

The window and prices come from a profile: the model's name is looked up in the bundled
table (its Hugging Face id, an Ollama tag, or a provider's own model name), else from
`profile=` (the CLI's `--window`/`--price`/`--profile`). Without one the error says that the
window is what is missing and how to give it.
"""

from __future__ import annotations

import os
from typing import Any

from harness.errors import UnknownModelError
from harness.models.openai import OpenAIChatModel
from harness.profiles import ModelProfile, get_profile

BASE_URL_ENV = "OPENAI_COMPATIBLE_BASE_URL"
API_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"
_NO_KEY = "no-key"  # what a keyless local server is sent


class OpenAICompatibleModel(OpenAIChatModel):
    """Chat Completions at the user's base URL (`openai-compatible:<model>`)."""

    prefix = "openai-compatible"

    def __init__(
        self,
        model_name: str,
        *,
        profile: ModelProfile | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        **options: Any,
    ) -> None:
        spec = f"{self.prefix}:{model_name}"
        base_url = base_url or os.environ.get(BASE_URL_ENV)
        if not base_url and options.get("client") is None:
            raise UnknownModelError(
                f"{spec}: no server URL; give --base-url URL (e.g. http://127.0.0.1:8000/v1 "
                f"for vLLM, http://127.0.0.1:11434/v1 for Ollama), set ${BASE_URL_ENV}, or pass "
                "base_url="
            )
        super().__init__(
            model_name,
            profile=profile or _profile(spec),
            api_key=api_key or os.environ.get(API_KEY_ENV) or _NO_KEY,
            base_url=base_url,
            **options,
        )


def _profile(spec: str) -> ModelProfile:
    try:
        return get_profile(spec)
    except UnknownModelError:
        raise UnknownModelError(
            f"{spec}: its context window is unknown (ctxlab has no profile for this model "
            "name), and the window decides when to compact. Give --window TOKENS (with "
            "--price IN,CACHED,OUT if the server bills, --max-output TOKENS for its output "
            "cap) or --profile FILE; in Python, profile=ModelProfile(name=..., "
            "context_window=...)"
        ) from None
