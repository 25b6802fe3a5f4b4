"""An MCP-backed weekly agent end to end: the Monday deployment of an agent spec that names an
MCP server (tests/helpers/mcp_server.py over stdio), its flow run under the Prefect server, the
server's large result offloaded and read back."""

from __future__ import annotations

import asyncio

import pytest
from helpers.mcp_server import KEY_FACT

from flows.agent_run import agent_run
from flows.agents import AgentOptions, AgentSpec, build_agent
from flows.deploy import weekly_deployment
from flows.server import ServerInfo
from harness.files.filesystem import FileSystem
from harness.steps import InlineRunner
from harness.store import Store


def test_an_mcp_backed_weekly_agent_runs_as_the_monday_deployment(
    prefect_server: ServerInfo, db: str
) -> None:
    deployment = asyncio.run(weekly_deployment(agent="flow_test_agents:mcp_weekly", db=db))
    assert deployment.name == "weekly-mcp-weekly"
    assert deployment.parameters["agent"] == "flow_test_agents:mcp_weekly"
    assert deployment.parameters["params"] == {}  # `week=auto` is competitive-analysis's

    session = asyncio.run(agent_run(**deployment.parameters))
    (run,) = session["runs"]
    assert run["status"] == "completed" and run["tasks"] >= 3  # model, MCP tool, read_file
    store = Store(db, hold=False)
    (offload,) = store.query("SELECT detail, task_run_id FROM events WHERE middleware = 'offload'")
    assert offload["task_run_id"]  # offloaded inside the MCP tool's Prefect task
    files = FileSystem(store, session["thread_id"])
    assert KEY_FACT in files.read_text("/large_tool_results/news-1")
    answer = store.query(
        "SELECT content FROM messages WHERE role = 'assistant' ORDER BY seq DESC LIMIT 1"
    )
    assert answer[0]["content"] == "This week: Acme raised list prices by 7%."


def test_a_spec_whose_build_drops_its_mcp_servers_is_refused(db: str) -> None:
    from flow_test_agents import NEWS_SERVER, build_clumsy

    spec = AgentSpec(name="forgetful", description="", build=build_clumsy,
                     mcp_servers=(NEWS_SERVER,))  # fmt: skip
    options = AgentOptions(store=Store(":memory:"), step_runner=InlineRunner())
    with pytest.raises(ValueError, match="did not pass options.mcp_servers to create_agent"):
        build_agent(spec, options)


def test_ctxlab_run_starts_the_spec_s_mcp_servers(
    prefect_server: ServerInfo, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from flows.cli import main

    assert main(["run", "flow_test_agents:mcp_weekly", "--db", db, "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["status"] == "completed" and run["moved_out_tokens"] > 0  # the news, offloaded
