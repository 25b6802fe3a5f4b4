"""`ctxlab run --model openai-compatible:NAME --base-url URL`: any Chat Completions server,
here the local fake, with the window from the bundled profiles or `--window`."""

from __future__ import annotations

import json

import pytest
from helpers.cli import one_line_error
from helpers.fake_provider import FakeCall, FakeProvider, final, tool_turn

from flows.cli import main
from flows.server import ServerInfo

pytestmark = pytest.mark.usefixtures("cli_env")
AGENT = "flow_test_agents:on_given_model"


@pytest.fixture(autouse=True)
def _no_leaked_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.models.compatible import BASE_URL_ENV

    monkeypatch.delenv(BASE_URL_ENV, raising=False)  # --base-url sets it for the process


def test_a_run_on_an_ollama_tag_reaches_the_server_and_uses_the_profile(
    prefect_server: ServerInfo,
    db: str,
    fake_provider: FakeProvider,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-openai-only")
    fake_provider.script(
        tool_turn(FakeCall("call_1", "count_words", {"text": "one two three"})),
        final("Three words.", input_tokens=300),
    )
    argv = ["run", AGENT, "--model", "openai-compatible:qwen3:8b", "--base-url",
            fake_provider.openai_base_url, "--db", db, "--json"]  # fmt: skip
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["status"] == "completed" and run["steps"] == 2
    first, second = fake_provider.bodies("/v1/chat/completions")
    assert first["model"] == "qwen3:8b"
    assert first["tools"][0]["function"]["name"] == "count_words"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert fake_provider.requests[0].api_key == "no-key"  # never $OPENAI_API_KEY
    assert run["cost_usd"] == 0.0  # self-hosted: the profile has no price


def test_an_unknown_model_names_the_missing_window_before_any_work(
    db: str, fake_provider: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", AGENT, "--model", "openai-compatible:our-finetune", "--base-url",
            fake_provider.openai_base_url, "--db", db]  # fmt: skip
    assert main(argv) == 2
    error = one_line_error(capsys)
    assert "openai-compatible:our-finetune: its context window is unknown" in error
    assert "--window TOKENS" in error
    assert fake_provider.request_count == 0


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ([], "--base-url URL"),
        (["--base-url", "127.0.0.1:8000"], "http:// or https:// URL"),
    ],
)
def test_a_missing_or_bad_url_is_named(
    extra: list[str], named: str, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", AGENT, "--model", "openai-compatible:qwen3:8b", "--db", db, *extra]
    assert main(argv) == 2
    assert named in one_line_error(capsys)


def test_base_url_is_refused_for_another_provider(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", AGENT, "--model", "openai:gpt-4o", "--base-url", "http://127.0.0.1:1/v1"]
    assert main([*argv, "--db", db]) == 2
    assert "--base-url is for --model openai-compatible:NAME" in one_line_error(capsys)


def test_window_and_price_flags_give_an_unknown_model_its_profile(
    prefect_server: ServerInfo,
    db: str,
    fake_provider: FakeProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_provider.script(final("Three.", input_tokens=1_000_000, output_tokens=0))
    argv = ["run", AGENT, "--model", "openai-compatible:our-finetune", "--base-url",
            fake_provider.openai_base_url, "--window", "16000", "--price", "0.5,0.5,1",
            "--db", db, "--json"]  # fmt: skip
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["cost_usd"] == pytest.approx(0.5)
