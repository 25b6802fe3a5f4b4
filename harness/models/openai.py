"""OpenAI adapters: the Responses API (primary) and Chat Completions (for OpenAI-compatible
servers that only speak the older format).

Keys and base URLs come from the arguments or the SDK's usual env vars (`OPENAI_API_KEY`,
`OPENAI_BASE_URL`). The key never appears in a repr or in an error this module raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import httpx2
import openai

from harness.errors import ModelError
from harness.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from harness.models._common import SDKModel, count, shared_ssl_context, text
from harness.models.base import ModelSettings, RequestParams

# Output items the neutral Message can rebuild by itself. Anything else (reasoning items) must
# be echoed back verbatim, and then the whole output is kept so ids stay paired: the API
# rejects a reasoning item whose following function_call lost its `fc_` id.
_NEUTRAL_ITEMS = {"message", "function_call"}
_CHAT_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
}


class _OpenAIAdapter(SDKModel[openai.AsyncOpenAI]):
    """Request settings and error mapping shared by both OpenAI adapters."""

    prefix = "openai"
    _sdk_error = openai.OpenAIError
    _status_error = openai.APIStatusError
    _timeout_error = openai.APITimeoutError
    _connection_error = openai.APIConnectionError

    def _connect(
        self, *, api_key: str | None, base_url: str | None, timeout: float
    ) -> openai.AsyncOpenAI:
        try:
            return openai.AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                max_retries=0,
                timeout=timeout,
                http_client=self._new_http_client(),
            )
        except openai.OpenAIError as exc:
            raise ModelError(
                f"{self.name}: cannot create the OpenAI client ({exc}); "
                "set OPENAI_API_KEY or pass api_key="
            ) from None

    def _new_http_client(self) -> httpx2.AsyncClient:
        return openai.DefaultAsyncHttpxClient(verify=shared_ssl_context())

    def _common_kwargs(self, settings: ModelSettings) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model}
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.extra:
            kwargs["extra_body"] = dict(settings.extra)
        if settings.timeout_s is not None:
            kwargs["timeout"] = settings.timeout_s
        return kwargs

    def _error(self, exc: Exception) -> ModelError:
        if isinstance(exc, openai.APIStatusError):
            detail = _api_message(exc)
            if exc.status_code == 400 and _is_overflow(exc.code, detail):
                return self._overflow(detail, *_overflow_numbers(detail), status=400)
            return self._http_error(exc.status_code, detail)
        return self._transport_error(exc)


class OpenAIResponsesModel(_OpenAIAdapter):
    """OpenAI Responses API (`openai:<model>`)."""

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        kwargs = self._common_kwargs(settings)
        kwargs["input"] = _responses_input(messages)
        if params.system_prompt:
            kwargs["instructions"] = params.system_prompt
        if params.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t["parameters"],
                    # Harness schemas are not written for strict mode (optional fields).
                    "strict": False,
                }
                for t in params.tools
            ]
        if settings.max_tokens is not None:
            kwargs["max_output_tokens"] = settings.max_tokens
        response = await self._send(lambda client: client.responses.create(**kwargs))
        with self._reading():
            return self._parse(response)

    def _parse(self, response: Any) -> ModelResponse:
        if response.status == "failed" and response.error is not None:
            code, detail = response.error.code, text(response.error.message, "error.message")
            if _is_overflow(code, detail):
                raise self._overflow(detail, *_overflow_numbers(detail))
            raise ModelError(self._redact(f"{self.name}: response failed ({code}): {detail}"))
        items = [item.to_dict(mode="json", warnings=False) for item in response.output]
        content, calls = _parse_responses_output(items)
        stop: StopReason = "tool_calls" if calls else "end_turn"
        if response.status == "incomplete":
            reason = getattr(response.incomplete_details, "reason", None)
            stop = "max_tokens" if reason == "max_output_tokens" else "other"
        keep = any(item.get("type") not in _NEUTRAL_ITEMS for item in items)
        return ModelResponse(
            text=content,
            tool_calls=calls,
            usage=_usage(response.usage, "responses"),
            stop_reason=stop,
            model_name=text(response.model, "model") or self.model,
            provider_items=tuple(items) if keep else (),
        )


class OpenAIChatModel(_OpenAIAdapter):
    """Chat Completions (`openai-chat:<model>`), for OpenAI-compatible third-party servers."""

    prefix = "openai-chat"

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        kwargs = self._common_kwargs(settings)
        kwargs["messages"] = _chat_messages(params.system_prompt, messages)
        if params.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t["parameters"],
                    },
                }
                for t in params.tools
            ]
        if settings.max_tokens is not None:
            # `max_tokens` rather than `max_completion_tokens`: compatible servers know it.
            kwargs["max_tokens"] = settings.max_tokens
        completion = await self._send(lambda client: client.chat.completions.create(**kwargs))
        with self._reading():
            return self._parse(completion)

    def _parse(self, completion: Any) -> ModelResponse:
        if not completion.choices:
            raise ModelError(f"{self.name}: malformed response: no choices")
        choice = completion.choices[0]
        calls = tuple(
            _tool_call(c.id, c.function.name, c.function.arguments)
            for c in choice.message.tool_calls or ()
        )
        stop = _CHAT_STOP.get(text(choice.finish_reason, "finish_reason"), "other")
        return ModelResponse(
            text=text(choice.message.content, "message.content"),
            tool_calls=calls,
            usage=_usage(completion.usage, "chat"),
            stop_reason="tool_calls" if calls and stop == "end_turn" else stop,
            model_name=text(completion.model, "model") or self.model,
        )


def _responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            items.append({"role": "developer", "content": m.content})
        elif m.role == "user":
            items.append({"role": "user", "content": m.content})
        elif m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content}
            )
        else:
            items.extend(_assistant_items(m))
    return items


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    stored = m.meta.get("provider_items")
    # Echo the provider's items only while they still say what the message says: a middleware
    # that edited the text must not have the original sent behind its back.
    if stored and _parse_responses_output(stored) == (m.content, m.tool_calls):
        return [dict(item) for item in stored]
    items: list[dict[str, Any]] = []
    if m.content:
        items.append({"role": "assistant", "content": m.content})
    items.extend(
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": _arguments(c)}
        for c in m.tool_calls
    )
    return items


def _chat_messages(system_prompt: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = (
        [{"role": "system", "content": system_prompt}] if system_prompt else []
    )
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": _arguments(c)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _parse_responses_output(items: Sequence[dict[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in items:
        if item.get("type") == "message":
            texts.extend(
                text(part.get("text"), "output_text.text", required=True)
                for part in item.get("content", ())
                if part.get("type") == "output_text"
            )
        elif item.get("type") == "function_call":
            calls.append(_tool_call(item["call_id"], item["name"], item.get("arguments")))
    return "".join(texts), tuple(calls)


def _tool_call(call_id: object, name: object, raw: object) -> ToolCall:
    """Decode the arguments; on invalid JSON keep the text so the loop can tell the model."""
    call_id, name, raw = text(call_id, "call id"), text(name, "call name"), text(raw, "arguments")
    if not raw:
        return ToolCall(id=call_id, name=name)
    try:
        arguments = json.loads(raw)
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, arguments=arguments)
    return ToolCall(id=call_id, name=name, raw_arguments=raw)


def _arguments(call: ToolCall) -> str:
    # Replay undecodable arguments as the model wrote them, not as a misleading "{}".
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def _usage(usage: Any, api: str) -> Usage:
    """A Responses or Chat Completions `usage`: the same counts under other field names
    (only Responses reports cache writes)."""
    if usage is None:
        return Usage(requests=1)
    chat = api == "chat"
    inputs, outputs = (
        ("prompt_tokens", "completion_tokens") if chat else ("input_tokens", "output_tokens")
    )
    details = getattr(usage, f"{inputs}_details", None)
    writes = None if chat else getattr(details, "cache_write_tokens", None)
    return Usage(
        input_tokens=count(getattr(usage, inputs), f"usage.{inputs}"),
        output_tokens=count(getattr(usage, outputs), f"usage.{outputs}"),
        cached_tokens=count(getattr(details, "cached_tokens", None), "cached_tokens"),
        cache_write_tokens=count(writes, "cache writes"),
        requests=1,
    )


def _api_message(exc: openai.APIStatusError) -> str:
    # The SDK unwraps `{"error": {...}}` into `body`; its own message repeats the status code.
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message


def _is_overflow(code: str | None, message: str) -> bool:
    return code == "context_length_exceeded" or bool(
        re.search(r"maximum context length|exceeds the context window", message, re.I)
    )


def _overflow_numbers(message: str) -> tuple[int | None, int | None]:
    """(tokens, limit) from "maximum context length is M tokens ... requested N tokens"."""
    limit = re.search(r"maximum context length is (\d+)", message)
    tokens = re.search(r"(?:requested|resulted in) (\d+) tokens", message)
    return (
        int(tokens.group(1)) if tokens else None,
        int(limit.group(1)) if limit else None,
    )
