"""The fake provider's replies in each API's wire format: OpenAI Responses, OpenAI Chat
Completions and Anthropic Messages bodies of a `Turn`, each API's error JSON, and what a Chat
Completions server refuses."""

from __future__ import annotations

import json
from typing import Any

from helpers.fake_replies import FakeCall, Turn

_ANTHROPIC_ERRORS: dict[str, tuple[str, str]] = {  # kind -> (error.type, message)
    "overflow": ("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
    "rate_limit": ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    "server_error": ("api_error", "Internal server error"),
    "too_large": ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    "unauthorized": ("authentication_error", "invalid x-api-key: {key}"),
    "echo_key": ("invalid_request_error", "request with key {key} was rejected"),
}
_OPENAI_ERRORS: dict[str, tuple[str, str | None, str]] = {  # kind -> (type, code, message)
    "overflow": ("invalid_request_error", "context_length_exceeded", ""),
    "rate_limit": ("requests", "rate_limit_exceeded", "Rate limit reached. Try again later."),
    "server_error": ("server_error", None, "The server had an error processing your request."),
    "too_large": ("invalid_request_error", None, "Request body too large."),
    "unauthorized": ("invalid_request_error", "invalid_api_key", "Incorrect API key: {key}."),
    "echo_key": ("invalid_request_error", None, "Request with key {key} was rejected."),
}
_OPENAI_OVERFLOW = {
    "/v1/responses": "Your input exceeds the context window of this model. "
    "Please adjust your input and try again.",
    "/v1/chat/completions": "This model's maximum context length is 128000 tokens. However, "
    "your messages resulted in 250000 tokens. Please reduce the length of the messages.",
}


def error_body(path: str, kind: str, key: str, request_id: str) -> dict[str, Any]:
    """The error JSON the API at `path` sends for a failure of `kind`; `key` is the key the
    client sent, echoed where the message names it."""
    if path == "/v1/messages":
        anthropic_type, message = _ANTHROPIC_ERRORS[kind]
        error = {"type": anthropic_type, "message": message.format(key=key)}
        return {"type": "error", "error": error, "request_id": request_id}
    openai_type, code, message = _OPENAI_ERRORS[kind]
    if kind == "overflow":
        message = _OPENAI_OVERFLOW[path]
    return {
        "error": {
            "message": message.format(key=key),
            "type": openai_type,
            "param": None,
            "code": code,
        }
    }


def chat_problem(body: dict[str, Any]) -> str | None:
    """What a Chat Completions server would refuse in `body`, as strict as the real API: a
    model and messages, and each tool message answering a call the assistant made before it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    called: set[str] = set()
    for m in messages:
        called.update(c["id"] for c in m.get("tool_calls") or ())
        if m.get("role") == "tool" and m.get("tool_call_id") not in called:
            return f"tool message answers no earlier tool call: {m.get('tool_call_id')!r}"
    return None


def _arguments(call: FakeCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _render_responses(turn: Turn, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": "rs_fake1",
                "summary": [{"type": "summary_text", "text": "thinking it over"}],
                "encrypted_content": "opaque-reasoning-state",
            }
        )
    if turn.text:
        output.append(
            {
                "type": "message",
                "id": "msg_fake1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{c.id}",
            "call_id": c.id,
            "name": c.name,
            "arguments": _arguments(c),
            "status": "completed",
        }
        for c in turn.calls
    )
    incomplete = turn.stop is not None
    return {
        "id": "resp_fake1",
        "object": "response",
        "created_at": 1_800_000_000,
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "output": output,
        "usage": {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {
                "cached_tokens": turn.cached_tokens,
                "cache_write_tokens": turn.cache_write_tokens,
            },
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        },
    }


def _render_chat(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments(c)},
            }
            for c in turn.calls
        ]
    finish = "tool_calls" if turn.calls else "stop"
    if turn.stop is not None:
        finish = "length" if turn.stop == "max_tokens" else turn.stop
    return {
        "id": "chatcmpl-fake1",
        "object": "chat.completion",
        "created": 1_800_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": turn.input_tokens,
            "completion_tokens": turn.output_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.cached_tokens},
        },
    }


def _render_anthropic(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.reasoning:
        content.append({"type": "thinking", "thinking": "thinking it over", "signature": "sig"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.calls
    )
    stop = turn.stop or ("tool_use" if turn.calls else "end_turn")
    return {
        "id": "msg_fake1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            # Anthropic reports cache reads and writes apart from input_tokens.
            "input_tokens": turn.input_tokens - turn.cached_tokens - turn.cache_write_tokens,
            "output_tokens": turn.output_tokens,
            "cache_read_input_tokens": turn.cached_tokens,
            "cache_creation_input_tokens": turn.cache_write_tokens,
        },
    }


RENDER = {
    "/v1/responses": _render_responses,
    "/v1/chat/completions": _render_chat,
    "/v1/messages": _render_anthropic,
}
