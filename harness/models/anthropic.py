"""Anthropic Messages API adapter (`anthropic:<model>`).

Anthropic wants strictly alternating user/assistant turns, tool results as `tool_result`
blocks at the start of the next user turn, and explicit prompt-cache breakpoints. Keys and base
URLs come from the arguments or `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL`; the key never
appears in a repr or in an error this module raises.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import anthropic
import httpx2

from harness.errors import ContextOverflowError, ModelError
from harness.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from harness.models._common import SDKModel, count, shared_ssl_context, text
from harness.models.base import ModelSettings, RequestParams

# Without an explicit max_tokens, ask for no more than this: a profile's 64k cap would make
# every non-streamed request reserve (and risk waiting for) a huge reply.
DEFAULT_MAX_TOKENS = 8192
# Blocks the neutral Message can rebuild. Anything else (thinking, redacted_thinking) must go
# back verbatim, so then the provider's whole content is kept as `provider_items`.
_NEUTRAL_BLOCKS = {"text", "tool_use"}
_CACHEABLE = {"text", "tool_use", "tool_result", "image", "document"}
_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
}


class AnthropicModel(SDKModel[anthropic.AsyncAnthropic]):
    """Claude through the Messages API, with prompt caching on the system prompt and on the
    newest message."""

    prefix = "anthropic"
    _sdk_error = anthropic.AnthropicError
    _status_error = anthropic.APIStatusError
    _timeout_error = anthropic.APITimeoutError
    _connection_error = anthropic.APIConnectionError

    def _connect(
        self, *, api_key: str | None, base_url: str | None, timeout: float
    ) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=self._new_http_client(),
        )
        # Otherwise the SDK only fails at the first request, with a bare TypeError.
        if client.api_key is None and client.auth_token is None and not client.credentials:
            raise ModelError(
                f"{self.name}: no Anthropic credentials; set ANTHROPIC_API_KEY or pass api_key="
            )
        return client

    def _new_http_client(self) -> httpx2.AsyncClient:
        return anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())

    def _secrets(self) -> Iterable[object]:
        return (self._client.api_key, self._client.auth_token)

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        system, turns = _to_anthropic(params.system_prompt, messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": settings.max_tokens
            or min(self.profile.max_output_tokens, DEFAULT_MAX_TOKENS),
        }
        if system:
            kwargs["system"] = system
        if params.tools:
            kwargs["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "input_schema": t["parameters"],
                }
                for t in params.tools
            ]
        if settings.temperature is not None:
            # API version 2026-10-21 (what this SDK sends) answers 400 to any sampling parameter.
            warnings.warn(
                "AnthropicModel ignores settings.temperature: the Messages API no longer "
                "accepts sampling parameters",
                UserWarning,
                stacklevel=2,
            )
        if settings.extra:
            kwargs["extra_body"] = dict(settings.extra)
        if settings.timeout_s is not None:
            kwargs["timeout"] = settings.timeout_s
        message = await self._send(lambda client: client.messages.create(**kwargs))
        with self._reading():
            return self._parse(message)

    def _parse(self, message: Any) -> ModelResponse:
        usage = _usage(message.usage)
        if message.stop_reason == "model_context_window_exceeded":
            raise ContextOverflowError(
                f"{self.name}: the context window filled up while generating",
                tokens=usage.total_tokens,
                limit=self.profile.context_window,
            )
        blocks = [block.to_dict(mode="json", warnings=False) for block in message.content]
        content, calls = _parse_blocks(blocks)
        keep = any(block.get("type") not in _NEUTRAL_BLOCKS for block in blocks)
        return ModelResponse(
            text=content,
            tool_calls=calls,
            usage=usage,
            stop_reason=_STOP.get(text(message.stop_reason, "stop_reason"), "other"),
            model_name=text(message.model, "model") or self.model,
            provider_items=tuple(blocks) if keep else (),
        )

    def _error(self, exc: Exception) -> ModelError:
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or exc.message
            if exc.status_code == 413 or (
                exc.status_code == 400 and "prompt is too long" in detail.lower()
            ):
                found = re.search(r"(\d+) tokens > (\d+) maximum", detail)
                return self._overflow(
                    detail,
                    tokens=int(found.group(1)) if found else None,
                    limit=int(found.group(2)) if found else None,
                    status=exc.status_code,
                )
            return self._http_error(exc.status_code, detail)
        return self._transport_error(exc)


def _to_anthropic(
    system_prompt: str, messages: Sequence[Message]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, alternating turns) with the two cache breakpoints placed."""
    system = [_text(system_prompt)] if system_prompt else []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system" and not turns:
            # Leading system messages are part of the system prompt.
            if m.content:
                system.append(_text(m.content))
            continue
        role, blocks = _blocks(m)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            # Tool results must open the user turn that follows the tool_use (stable sort).
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    if system:
        system[-1]["cache_control"] = {"type": "ephemeral"}
    # Breakpoint on the newest block: the next request reads the whole prefix from cache.
    if turns and turns[-1]["content"][-1]["type"] in _CACHEABLE:
        turns[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return system, turns


def _blocks(m: Message) -> tuple[str, list[dict[str, Any]]]:
    """The turn role and fresh (mutable) content blocks for one message."""
    if m.role == "assistant":
        return "assistant", _assistant_blocks(m)
    if m.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
        if m.content:
            block["content"] = m.content
        if m.is_error:
            block["is_error"] = True
        return "user", [block]
    if m.role == "system":
        # Later system messages stay in place, marked, rather than moving to the top: that
        # would rewrite the cached prefix every time one is added.
        return "user", [_text(f"<system>\n{m.content}\n</system>")] if m.content else []
    return "user", [_text(m.content)] if m.content else []


def _assistant_blocks(m: Message) -> list[dict[str, Any]]:
    stored = m.meta.get("provider_items")
    # Echo the provider's blocks only while they still say what the message says: a middleware
    # that edited the text must not have the original sent behind its back.
    if stored and _parse_blocks(stored) == (m.content, m.tool_calls):
        return [dict(block) for block in stored]
    blocks = [_text(m.content)] if m.content else []
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
    )
    return blocks


def _parse_blocks(blocks: Sequence[dict[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    content = "".join(
        text(b.get("text"), "text block", required=True) for b in blocks if b.get("type") == "text"
    )
    calls = tuple(
        ToolCall(
            id=text(b["id"], "tool_use.id", required=True),
            name=text(b["name"], "tool_use.name", required=True),
            arguments=dict(b.get("input") or {}),
        )
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return content, calls


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _usage(usage: Any) -> Usage:
    # Anthropic's input_tokens excludes cache reads and writes; the harness counts them in.
    read = count(getattr(usage, "cache_read_input_tokens", None), "cache_read_input_tokens")
    write = count(
        getattr(usage, "cache_creation_input_tokens", None), "cache_creation_input_tokens"
    )
    return Usage(
        input_tokens=count(usage.input_tokens, "usage.input_tokens") + read + write,
        output_tokens=count(usage.output_tokens, "usage.output_tokens"),
        cached_tokens=read,
        cache_write_tokens=write,
        requests=1,
    )
