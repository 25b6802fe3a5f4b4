"""MCP servers as tools (tests/helpers/mcp_server.py, a real server on the official SDK): listed
with their schemas, called like any tool (offloading, time limit, errors as text), and a server
that fails, dies, hangs, garbles or floods is an error for the model and an `mcp` event."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from helpers.mcp_server import KEY_FACT

from harness import create_agent
from harness.mcp import HttpServer, MCPServerError, StdioServer
from harness.models import ScriptedModel, call, reply
from harness.store import Store


def _agent(model: ScriptedModel, server: Any, store: Store, **options: Any) -> Any:
    return create_agent(
        model, mcp_servers=[server], store=store, memory=(), strategy="offload",
        strategy_params={"offload.tool_token_limit": 2_000}, **options,
    )  # fmt: skip


def _tool_texts(result: Any) -> list[str]:
    return [m.content for m in result.messages if m.role == "tool"]


def _mcp_events(store: Store) -> list[tuple[str, dict[str, Any]]]:
    rows = store.query(
        "SELECT action, detail FROM events WHERE middleware = 'mcp' ORDER BY created_at, step"
    )
    return [(r["action"], json.loads(r["detail"])) for r in rows]


def _offloads_and_adds(server: StdioServer | HttpServer) -> None:
    model = ScriptedModel(
        [
            reply("", call("add", a=2, b=3), call("market_news", "news_1", company="Acme")),
            reply("", call("read_file", file_path="/large_tool_results/news_1", offset=600)),
            "Acme raised prices 7%.",
        ]
    )
    store = Store(":memory:")
    with _agent(model, server, store) as agent:
        result = agent.run_sync("What happened at Acme?")
    offered = {t["name"]: t for t in model.calls[0].params.tools}
    assert offered["add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert offered["add"]["parameters"]["required"] == ["a", "b"]
    assert offered["market_news"]["description"].startswith("This week's market news")
    added, news, page = _tool_texts(result)
    assert added == "5"
    assert "/large_tool_results/news_1" in news and KEY_FACT not in news  # offloaded
    assert KEY_FACT in page  # and read back from the store
    offload = store.query("SELECT action FROM events WHERE middleware = 'offload'")
    assert [r["action"] for r in offload] == ["offload_tool_result"]


def test_a_stdio_server_s_tools_are_listed_called_and_offloaded(mcp_stdio: StdioServer) -> None:
    _offloads_and_adds(mcp_stdio)


def test_an_http_server_s_tools_are_listed_called_and_offloaded(mcp_http: HttpServer) -> None:
    _offloads_and_adds(mcp_http)


def test_a_misbehaving_server_is_an_error_for_the_model_and_an_event(
    mcp_stdio: StdioServer,
) -> None:
    model = ScriptedModel(
        [
            reply("", call("fail", reason="quota exceeded"), call("add", a="two", b=1)),
            reply("", call("huge", megabytes=100)),
            reply("", call("garble")),
            reply("", call("die")),
            reply("", call("add", a=1, b=2)),
            "done",
            reply("", call("hang")),
            "gave up",
            reply("", call("add", a=2, b=2)),
            "done",
        ]
    )
    store = Store(":memory:")
    # A limit no busy machine reaches for 100 MB, a short one for the server that hangs.
    with _agent(model, mcp_stdio, store, tool_timeout_s=120) as agent:
        result = agent.run_sync("go")
        agent.tool_timeout_s = 2
        hang_result = agent.run_sync("again")
        agent.tool_timeout_s = 120  # starting the server again may take a while here
        last_result = agent.run_sync("once more")
    failed, bad_args, huge, garbled, died, added = _tool_texts(result)
    assert failed == (
        "Error: MCP tool 'fail' reported an error: Error executing tool fail: quota exceeded"
    )
    assert bad_args.startswith("Error: invalid arguments for tool 'add': a: 'two' is not of type")
    assert "over the 8,388,608-byte limit" in huge
    assert "malformed JSON-RPC" in garbled
    assert "exited with code 3; its stderr ends: dying on purpose" in died
    assert added == "3"  # the server was started again
    (hung,) = _tool_texts(hang_result)
    assert "did not finish within its time limit of 2 s" in hung
    assert _tool_texts(last_result) == ["4"]
    events = _mcp_events(store)
    assert [a for a, _ in events if a != "reopened"] == [
        "call_failed", "call_failed", "call_failed", "no_answer",
    ]  # fmt: skip
    assert {d["tool"] for a, d in events if a == "call_failed"} == {"huge", "garble", "die"}
    assert [d["times"] for a, d in events if a == "reopened"] == [1, 2, 3, 4]
    assert result.status == hang_result.status == last_result.status == "completed"


def test_a_server_that_cannot_start_is_named_with_what_it_said(mcp_stdio: StdioServer) -> None:
    broken = replace(mcp_stdio, name="tracker", args=[mcp_stdio.args[0], "broken"])
    with pytest.raises(MCPServerError, match="'tracker'.*no API token configured"):
        create_agent(ScriptedModel([]), mcp_servers=[broken], store=Store(":memory:"))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"name": "bad name", "command": "x"}, "must match"),
        ({"name": "s"}, "give the command"),
        ({"name": "s", "command": "x", "max_result_bytes": 0}, "must be positive"),
    ],
)
def test_a_bad_server_spec_is_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(MCPServerError, match=problem):
        StdioServer(**options)


def test_an_http_server_needs_a_url() -> None:
    with pytest.raises(MCPServerError, match="http:// or https:// URL, got 'localhost:9'"):
        HttpServer(name="s", url="localhost:9")


def test_an_http_server_that_floods_or_hangs_is_an_error_and_an_event(
    mcp_http: HttpServer,
) -> None:
    model = ScriptedModel(
        [
            reply("", call("huge", megabytes=20)),
            "too much",
            reply("", call("hang")),
            "gave up",
            reply("", call("add", a=1, b=2)),
            "done",
        ]
    )
    store = Store(":memory:")
    texts = []
    with _agent(model, mcp_http, store) as agent:
        for limit in (120, 2, 120):  # only the hang is meant to reach its limit
            agent.tool_timeout_s = limit
            texts += _tool_texts(agent.run_sync("go"))
    huge, hung, added = texts
    # Answered as one JSON body (not SSE): read, then refused by its size.
    assert "returned 20,971,520 bytes, over the 8,388,608-byte limit" in huge
    assert "did not finish within its time limit of 2 s" in hung
    assert added == "3"
    assert [a for a, _ in _mcp_events(store) if a != "reopened"] == [
        "result_too_large", "no_answer",
    ]  # fmt: skip


def test_a_tool_named_as_one_of_the_agent_s_needs_a_prefix(mcp_stdio: StdioServer) -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(MCPServerError, match="tool named 'add'.*tool_prefix='research_'"):
        create_agent(ScriptedModel([]), tools=[add], mcp_servers=[mcp_stdio],
                     store=Store(":memory:"))  # fmt: skip
    prefixed = replace(mcp_stdio, tool_prefix="research_")
    with create_agent(ScriptedModel([]), tools=[add], mcp_servers=[prefixed],
                      store=Store(":memory:")) as agent:  # fmt: skip
        assert {"add", "research_add", "research_market_news", "read_file"} <= {
            t.name for t in agent.tools
        }


def test_an_http_server_that_dies_is_an_error_at_each_call_until_it_is_back(
    mcp_http_process: tuple[HttpServer, Any],
) -> None:
    server, process = mcp_http_process

    def model_fn(messages: Any, params: Any) -> Any:
        done = sum(m.role == "tool" for m in messages)
        if done == 1:
            process.kill()  # between the first call and the second
            process.wait()
        return reply("", call("add", a=done, b=1)) if done < 3 else "done"

    from harness.models import FunctionModel

    store = Store(":memory:")
    with _agent(FunctionModel(model_fn), server, store) as agent:
        result = agent.run_sync("go")
    first, second, third = _tool_texts(result)
    assert first == "1"
    for gone in (second, third):
        assert gone.startswith("Error: MCP server 'research' failed on 'add':")
    assert [a for a, _ in _mcp_events(store) if a != "reopened"] == ["call_failed"] * 2
    assert result.status == "completed"
