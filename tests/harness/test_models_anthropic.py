"""Anthropic adapter against the local fake provider: turn merging, tool results, prompt-cache
breakpoints, usage normalisation, overflow errors. Retries, error mapping and key hygiene,
shared by every adapter, are in test_models_sdk.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from helpers.fake_provider import (
    FakeCall,
    FakeProvider,
    Turn,
    final,
    overflow,
    too_large,
    tool_turn,
)
from helpers.models import ask

from harness.errors import ContextOverflowError, ModelError
from harness.messages import (
    Message,
    ModelResponse,
    ToolCall,
    Usage,
    assistant,
    system,
    tool_result,
    user,
)
from harness.models import ModelSettings, RequestParams
from harness.models.anthropic import AnthropicModel

KEY = "sk-ant-test-NEVER-LEAK-0123456789"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
PARAMS = RequestParams(
    system_prompt="You are terse.",
    tools=({"name": "read_file", "description": "Read a file.", "parameters": SCHEMA},),
)
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture(autouse=True)
def _anthropic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def claude(fake: FakeProvider, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-5-5", base_url=fake.anthropic_base_url, **kwargs)


def breakpoints(body: dict[str, Any]) -> int:
    blocks = list(body.get("system", []))
    for turn in body["messages"]:
        blocks.extend(turn["content"])
    return sum("cache_control" in block for block in blocks)


def test_tool_turn_then_final(fake_provider: FakeProvider) -> None:
    fake_provider.script(
        tool_turn(
            FakeCall("toolu_1", "read_file", {"path": "a.txt"}),
            FakeCall("toolu_2", "read_file", {"path": "b.txt"}),
            text="Reading both.",
        ),
        final(
            "a says hi; b is missing.",
            input_tokens=1000,
            output_tokens=20,
            cached_tokens=800,
            cache_write_tokens=150,
        ),
    )
    model = claude(fake_provider)

    async def run() -> tuple[ModelResponse, ModelResponse]:
        history: list[Message] = [user("read a.txt and b.txt")]
        first = await model.request(history, ModelSettings(), PARAMS)
        history.append(first.to_message())
        history.append(tool_result(first.tool_calls[0], "hi"))
        history.append(tool_result(first.tool_calls[1], "no such file", is_error=True))
        return first, await model.request(history, ModelSettings(), PARAMS)

    first, second = asyncio.run(run())
    assert first.text == "Reading both."
    assert [c.id for c in first.tool_calls] == ["toolu_1", "toolu_2"]
    assert first.tool_calls[0] == ToolCall("toolu_1", "read_file", {"path": "a.txt"})
    assert first.stop_reason == "tool_calls"
    assert second.text == "a says hi; b is missing."
    assert second.stop_reason == "end_turn"
    # Anthropic's input_tokens excludes the cache; the adapter adds reads and writes back.
    assert second.usage == Usage(
        input_tokens=1000, output_tokens=20, cached_tokens=800, cache_write_tokens=150, requests=1
    )

    req1, req2 = fake_provider.requests
    assert req1.path == "/v1/messages"
    assert req1.api_key == KEY
    assert req1.body["model"] == "claude-sonnet-5-5"
    assert req1.body["max_tokens"] == 8192  # min(profile's 64k, 8192)
    assert req1.body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}
    ]
    assert req1.body["tools"] == [
        {"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}
    ]
    assert req1.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read a.txt and b.txt", "cache_control": EPHEMERAL}
            ],
        }
    ]
    assert req2.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "read_file",
                    "input": {"path": "b.txt"},
                },
            ],
        },
        {
            # Both results in one user turn; the breakpoint moved to the newest block.
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "no such file",
                    "is_error": True,
                    "cache_control": EPHEMERAL,
                },
            ],
        },
    ]
    assert breakpoints(req2.body) == 2


def test_turns_are_merged_and_system_messages_placed(fake_provider: FakeProvider) -> None:
    call = ToolCall("toolu_1", "read_file", {"path": "a"})
    fake_provider.script(final("ok"))
    ask(
        claude(fake_provider),
        [
            system("Project rules."),
            user("first"),
            user("second"),
            assistant("", [call]),
            user("also this"),  # arrived before the tool result: results must still lead
            tool_result(call, "contents"),
            system("Reminder."),
        ],
        ModelSettings(max_tokens=256, extra={"metadata": {"user_id": "run-1"}}),
        params=PARAMS,
    )
    body = fake_provider.requests[0].body
    assert (body["max_tokens"], body["metadata"]) == (256, {"user_id": "run-1"})
    assert body["system"] == [
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "Project rules.", "cache_control": EPHEMERAL},
    ]
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["first", "second"]
    last = body["messages"][2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text", "text"]
    assert last[1]["text"] == "also this"
    assert last[2]["text"] == "<system>\nReminder.\n</system>"
    assert breakpoints(body) == 2


def test_thinking_blocks_are_echoed_verbatim(fake_provider: FakeProvider) -> None:
    fake_provider.script(tool_turn(FakeCall("toolu_1", "read_file", {"path": "a"}), reasoning=True))
    fake_provider.script(final("ok"))
    model = claude(fake_provider)

    async def run() -> ModelResponse:
        first = await model.request([user("go")], ModelSettings(), PARAMS)
        result = tool_result(first.tool_calls[0], "hi")
        await model.request([user("go"), first.to_message(), result], ModelSettings(), PARAMS)
        return first

    first = asyncio.run(run())
    assert [block["type"] for block in first.provider_items] == ["thinking", "tool_use"]
    replayed = fake_provider.requests[1].body["messages"][1]
    assert replayed == {"role": "assistant", "content": list(first.provider_items)}
    assert "cache_control" not in first.provider_items[-1]  # the message's copy is untouched


def test_prompt_too_long_is_context_overflow(fake_provider: FakeProvider) -> None:
    fake_provider.script(overflow())
    with pytest.raises(ContextOverflowError) as caught:
        ask(claude(fake_provider), [user("x")], params=PARAMS)
    assert (caught.value.tokens, caught.value.limit) == (250_000, 200_000)
    assert len(fake_provider.requests) == 1


def test_window_exceeded_stop_reason_is_context_overflow(fake_provider: FakeProvider) -> None:
    fake_provider.script(Turn(text="cut", stop="model_context_window_exceeded"))
    with pytest.raises(ContextOverflowError) as caught:
        ask(claude(fake_provider), [user("x")], params=PARAMS)
    assert caught.value.limit == 1_000_000


def test_413_is_context_overflow(fake_provider: FakeProvider) -> None:
    fake_provider.script(too_large())
    with pytest.raises(ContextOverflowError, match="maximum allowed number of bytes"):
        ask(claude(fake_provider), [user("x")], params=PARAMS)


def test_max_tokens_stop_and_no_sampling_parameters(fake_provider: FakeProvider) -> None:
    fake_provider.script(Turn(text="trunc", stop="max_tokens"))
    with pytest.warns(UserWarning, match="temperature"):
        out = ask(claude(fake_provider), [user("x")], ModelSettings(temperature=0.0), params=PARAMS)
    assert out.stop_reason == "max_tokens"
    # API version 2026-10-21 rejects temperature / top_p / top_k with a 400.
    assert "temperature" not in fake_provider.requests[0].body


def test_network_guard_blocks_sdk_traffic() -> None:
    model = AnthropicModel("claude-sonnet-5-5", base_url="http://10.255.255.1", max_retries=0)
    started = time.monotonic()
    with pytest.raises(ModelError, match="connection failed: network access blocked"):
        ask(model, [user("hi")], params=PARAMS)
    assert time.monotonic() - started < 1  # refused by the guard, never attempted
