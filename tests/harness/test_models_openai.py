"""OpenAI adapters against the local fake provider: request shapes, parsing, overflow errors;
plus `resolve_model` and the test-session network guard. Retries, error mapping and key hygiene,
shared by every adapter, are in test_models_sdk.py."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from helpers.fake_provider import FakeCall, FakeProvider, Turn, final, overflow, tool_turn
from helpers.models import ask

from harness.errors import ContextOverflowError, UnknownModelError
from harness.messages import Message, ModelResponse, ToolCall, Usage, system, tool_result, user
from harness.models import ModelSettings, RequestParams, ScriptedModel, resolve_model
from harness.models.anthropic import AnthropicModel
from harness.models.openai import OpenAIChatModel, OpenAIResponsesModel

KEY = "sk-test-NEVER-LEAK-0123456789"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
PARAMS = RequestParams(
    system_prompt="You are terse.",
    tools=({"name": "read_file", "description": "Read a file.", "parameters": SCHEMA},),
)
READ = FakeCall("call_1", "read_file", {"path": "a.txt"})


@pytest.fixture(autouse=True)
def _openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def responses(fake: FakeProvider, **kwargs: object) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-6.2-sol", base_url=fake.openai_base_url, **kwargs)


def chat(fake: FakeProvider, **kwargs: object) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-6.2-sol", base_url=fake.openai_base_url, **kwargs)


def two_turns(model: OpenAIResponsesModel | OpenAIChatModel) -> tuple[ModelResponse, ...]:
    """A tool-call turn, the tool's result, then the final turn, on one event loop."""

    async def run() -> tuple[ModelResponse, ...]:
        history: list[Message] = [user("read a.txt")]
        first = await model.request(history, ModelSettings(), PARAMS)
        history += [first.to_message(), tool_result(first.tool_calls[0], "hi")]
        return first, await model.request(history, ModelSettings(), PARAMS)

    return asyncio.run(run())


def read_then_answer(
    fake: FakeProvider,
    model: OpenAIResponsesModel | OpenAIChatModel,
    call_usage: dict[str, int],
    answer_usage: dict[str, int],
) -> tuple[ModelResponse, ...]:
    """`two_turns` of a scripted `read_file` call and the answer "It says hi." (each with its
    usage), both parsed."""
    fake.script(tool_turn(READ, **call_usage), final("It says hi.", **answer_usage))
    first, second = two_turns(model)
    assert first.tool_calls == (ToolCall("call_1", "read_file", {"path": "a.txt"}),)
    assert first.stop_reason == "tool_calls"
    assert second.text == "It says hi."
    return first, second


def test_responses_tool_turn_then_final(fake_provider: FakeProvider) -> None:
    first, second = read_then_answer(
        fake_provider,
        responses(fake_provider),
        {"input_tokens": 120, "output_tokens": 15},
        {"input_tokens": 200, "output_tokens": 8, "cached_tokens": 150},
    )
    assert first.usage == Usage(input_tokens=120, output_tokens=15, requests=1)
    assert first.provider_items == ()  # nothing the neutral message cannot rebuild
    assert second.stop_reason == "end_turn"
    assert second.usage == Usage(input_tokens=200, output_tokens=8, cached_tokens=150, requests=1)
    assert second.model_name == "gpt-6.2-sol"

    req1, req2 = fake_provider.requests
    assert req1.path == "/v1/responses"
    assert req1.headers["authorization"] == f"Bearer {KEY}"
    assert req1.body["model"] == "gpt-6.2-sol"
    assert req1.body["instructions"] == "You are terse."
    assert req1.body["input"] == [{"role": "user", "content": "read a.txt"}]
    assert req1.body["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file.",
            "parameters": SCHEMA,
            "strict": False,
        }
    ]
    assert req2.body["input"][1:] == [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": json.dumps({"path": "a.txt"}),
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "hi"},
    ]


def test_responses_reasoning_items_are_echoed_verbatim(fake_provider: FakeProvider) -> None:
    fake_provider.script(tool_turn(READ, reasoning=True), final("ok"), final("ok"))
    model = responses(fake_provider)

    async def run() -> ModelResponse:
        first = await model.request([user("go")], ModelSettings(), PARAMS)
        answer = first.to_message()
        result = tool_result(first.tool_calls[0], "hi")
        await model.request([user("go"), answer, result], ModelSettings(), PARAMS)
        # A middleware edited the assistant text: the stale provider items must not be sent.
        edited = answer.with_content("(elided)")
        await model.request([user("go"), edited, result], ModelSettings(), PARAMS)
        return first

    first = asyncio.run(run())
    assert [item["type"] for item in first.provider_items] == ["reasoning", "function_call"]
    verbatim = fake_provider.requests[1].body["input"]
    assert verbatim[1:3] == list(first.provider_items)
    assert verbatim[2]["id"] == "fc_call_1"  # keeps the reasoning / call pairing
    rebuilt = fake_provider.requests[2].body["input"]
    assert [item.get("type") for item in rebuilt] == [
        None,
        None,
        "function_call",
        "function_call_output",
    ]
    assert rebuilt[1] == {"role": "assistant", "content": "(elided)"}


def test_invalid_json_arguments_are_kept_raw(fake_provider: FakeProvider) -> None:
    fake_provider.script(tool_turn(FakeCall("call_9", "read_file", '{"path": ')), final("ok"))
    first, _ = two_turns(responses(fake_provider))
    assert first.tool_calls == (ToolCall("call_9", "read_file", {}, raw_arguments='{"path": '),)
    replayed = fake_provider.requests[1].body["input"][1]
    assert replayed["arguments"] == '{"path": '


def test_settings_system_messages_and_max_tokens(fake_provider: FakeProvider) -> None:
    fake_provider.script(Turn(text="trunc", stop="max_tokens"))
    settings = ModelSettings(max_tokens=50, temperature=0.2, extra={"store": False})
    out = ask(responses(fake_provider), [system("Be brief."), user("hi")], settings, params=PARAMS)
    assert out.stop_reason == "max_tokens"
    body = fake_provider.requests[0].body
    assert (body["max_output_tokens"], body["temperature"], body["store"]) == (50, 0.2, False)
    assert body["input"][0] == {"role": "developer", "content": "Be brief."}


def test_responses_overflow_raises_context_overflow(fake_provider: FakeProvider) -> None:
    fake_provider.script(overflow())
    with pytest.raises(ContextOverflowError, match="context window"):
        ask(responses(fake_provider), [user("x" * 100)], params=PARAMS)
    assert len(fake_provider.requests) == 1  # a 400 is never retried


def test_chat_tool_turn_then_final(fake_provider: FakeProvider) -> None:
    _, second = read_then_answer(
        fake_provider,
        chat(fake_provider),
        {"input_tokens": 90, "output_tokens": 12},
        {"input_tokens": 140, "output_tokens": 6, "cached_tokens": 64},
    )
    assert second.usage == Usage(input_tokens=140, output_tokens=6, cached_tokens=64, requests=1)

    req1, req2 = fake_provider.requests
    assert req1.path == "/v1/chat/completions"
    assert req1.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "read a.txt"},
    ]
    assert req1.body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file.", "parameters": SCHEMA},
        }
    ]
    assert req2.body["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": "a.txt"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "hi"},
    ]


def test_chat_overflow_parses_tokens_and_limit(fake_provider: FakeProvider) -> None:
    fake_provider.script(overflow())
    with pytest.raises(ContextOverflowError) as caught:
        ask(chat(fake_provider), [user("hi")], params=PARAMS)
    assert (caught.value.tokens, caught.value.limit) == (250_000, 128_000)


def test_resolve_model_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = resolve_model("openai:gpt-6.2-sol")
    assert isinstance(model, OpenAIResponsesModel)
    assert (model.name, model.profile.context_window) == ("openai:gpt-6.2-sol", 1_050_000)
    chat_model = resolve_model("openai-chat:gpt-6.2-sol", base_url="http://127.0.0.1:9/v1")
    assert isinstance(chat_model, OpenAIChatModel)
    assert chat_model.profile.input == 2.00  # found by bare name under openai:
    assert isinstance(resolve_model("anthropic:claude-sonnet-5-5"), AnthropicModel)
    scripted = ScriptedModel(["hi"])
    assert resolve_model(scripted) is scripted


def test_resolve_model_unknown_specs() -> None:
    for spec in ("mistral:large", "gpt-6.2-sol"):
        with pytest.raises(UnknownModelError, match="openai-chat:<model>"):
            resolve_model(spec)
    with pytest.raises(UnknownModelError, match="profile="):
        resolve_model("openai:no-such-model")


def test_resolve_model_simulated() -> None:
    pytest.importorskip("evals")
    assert resolve_model("simulated").name


def test_network_guard_refuses_non_loopback() -> None:
    started = time.monotonic()
    with pytest.raises(OSError, match="network access blocked"):
        socket.create_connection(("10.255.255.1", 80), timeout=5)
    with socket.socket() as sock, pytest.raises(OSError, match="network access blocked"):
        sock.connect(("10.255.255.1", 80))
    with pytest.raises(OSError, match="network access blocked"):
        socket.create_connection(("example.com", 443), timeout=5)
    with pytest.raises(OSError, match="network access blocked"):
        socket.getaddrinfo("api.openai.com", 443)  # not even a DNS lookup
    assert time.monotonic() - started < 0.5  # refused, not attempted
