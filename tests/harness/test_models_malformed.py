"""A 200 response no provider should send (invalid JSON, another content type, missing fields,
wrong types) becomes a `ModelError` naming the provider, never a raw KeyError, TypeError or
validation error, and is not retried."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.fake_provider import FakeProvider, Raw, final
from helpers.models import ask
from helpers.sdk_adapters import ADAPTERS

from harness.errors import ContextOverflowError, ModelError

USAGE = {"input_tokens": 10, "output_tokens": 2}
RESPONSE: dict[str, Any] = {
    "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-6.2-sol",
    "status": "completed", "error": None, "incomplete_details": None, "usage": USAGE,
    "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}]}],
}  # fmt: skip
COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-6.2-sol",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}  # fmt: skip
MESSAGE: dict[str, Any] = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
    "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": USAGE,
}  # fmt: skip
WELL_FORMED = {"openai": RESPONSE, "openai-chat": COMPLETION, "anthropic": MESSAGE}


def changed(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `payload` with the dotted `path` set to `value` (or removed: `...`)."""
    copy = _deep_copy(payload)
    *parents, last = path.split(".")
    node: Any = copy
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    return copy


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


COMMON: list[Raw] = [
    Raw(b'{"id": "x", "output": ['),  # cut off mid-body
    Raw(b"<html>502 Bad Gateway</html>", content_type="text/html"),
    Raw("[]"),
    Raw("null"),
    Raw({}),
]
GARBAGE: dict[str, list[Raw]] = {
    "openai": [
        Raw(changed(RESPONSE, "output", "not a list")),
        Raw(changed(RESPONSE, "output", ...)),
        Raw(changed(RESPONSE, "output.0.content.0.text", 42)),
        Raw(changed(RESPONSE, "output.0", {"type": "function_call", "call_id": "c"})),
        Raw(changed(RESPONSE, "usage.input_tokens", "lots")),
        Raw(changed(RESPONSE, "model", ["gpt"])),
    ],
    "openai-chat": [
        Raw(changed(COMPLETION, "choices", ...)),
        Raw(changed(COMPLETION, "choices.0.message", "hi")),
        Raw(changed(COMPLETION, "choices.0.message.content", {"text": "hi"})),
        Raw(changed(COMPLETION, "choices.0.message.tool_calls", [{"id": "c", "type": "x"}])),
        Raw(changed(COMPLETION, "usage.prompt_tokens", -5)),
        Raw(changed(COMPLETION, "choices.0.finish_reason", 7)),
    ],
    "anthropic": [
        Raw(changed(MESSAGE, "content", "hi")),
        Raw(changed(MESSAGE, "content", ...)),
        Raw(changed(MESSAGE, "content.0.text", None) | {"content": [{"type": "text"}]}),
        Raw(changed(MESSAGE, "content.0", {"type": "tool_use", "name": "read"})),
        Raw(changed(MESSAGE, "usage", ...)),
        Raw(changed(MESSAGE, "usage.output_tokens", True)),
        Raw(changed(MESSAGE, "stop_reason", {"why": "done"})),
    ],
}
CASES = [
    pytest.param(name, raw, id=f"{name}-{i}")
    for name in sorted(ADAPTERS)
    for i, raw in enumerate(COMMON + GARBAGE[name])
]


pytestmark = pytest.mark.usefixtures("sdk_keys")


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_well_formed_payloads_parse(name: str, fake_provider: FakeProvider) -> None:
    # The garbage below is each of these with one thing broken.
    fake_provider.script(Raw(WELL_FORMED[name]))
    reply = ask(ADAPTERS[name].factory(fake_provider.url)())
    assert reply.text == "hi" and reply.usage.output_tokens == 2


@pytest.mark.parametrize(("name", "raw"), CASES)
def test_malformed_payload_is_a_model_error(
    name: str, raw: Raw, fake_provider: FakeProvider
) -> None:
    model = ADAPTERS[name].factory(fake_provider.url)()
    fake_provider.script(raw, final("not asked for"))
    with pytest.raises(ModelError) as caught:
        ask(model)
    assert type(caught.value) is ModelError
    assert not isinstance(caught.value, ContextOverflowError)
    message = str(caught.value)
    assert message.startswith(f"{model.name}: ") and "malformed response" in message
    assert fake_provider.request_count == 1  # a malformed answer is not retried
