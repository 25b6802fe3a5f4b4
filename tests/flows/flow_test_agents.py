"""Small deterministic agents for the flow tests, importable as `flow_test_agents:<name>`
(also from the subprocesses the crash test starts).

The model is a pure function of the window, so a resumed run asks it the same questions.
Every model call and tool execution is appended to `$CTXLAB_TEST_LOG` (one line each), which
is how a test counts what ran, across processes. With `$CTXLAB_TEST_HANG_AT=n` the tool call
for finding n blocks before doing anything, so a test can kill the process mid-step.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flows.agents import COMPETITIVE, REGISTRY, AgentOptions, AgentSpec
from harness import Agent, ToolContext, create_agent, tool
from harness.mcp import StdioServer
from harness.messages import Message
from harness.models import FunctionModel, RequestParams, call, reply

STEPS = 6


def _log(line: str) -> None:
    path = os.environ.get("CTXLAB_TEST_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@tool
def record(n: int, ctx: ToolContext) -> str:
    """Record one finding in the notes.

    Args:
        n: which finding.
    """
    if os.environ.get("CTXLAB_TEST_HANG_AT") == str(n):
        _hang()
    ctx.state.files.write(f"/notes/finding-{n}.md", f"finding {n}\n" * 50)
    _log(f"tool {ctx.call.id}")
    return f"finding {n} recorded:\n" + "detail of the finding\n" * 80


def _respond(messages: Sequence[Message], params: RequestParams) -> object:
    done = sum(1 for m in messages if m.role == "tool")
    _log(f"model {done}")
    if done < STEPS:
        # Two calls at once, so the loop runs tools concurrently.
        return reply(
            f"Recording findings {done} and {done + 1}.",
            call("record", call_id=f"call-{done}", n=done),
            call("record", call_id=f"call-{done + 1}", n=done + 1),
        )
    return "All findings recorded."


def build_recorder(options: AgentOptions, *, memory: bool = True) -> Agent:
    """Tool results of ~400 tokens are offloaded (limit 100), so `offload` steps act."""
    strategy = options.strategy or "offload"
    limit = {"offload.tool_token_limit": 100} if strategy in ("offload", "full") else {}
    return create_agent(
        FunctionModel(_respond, name="recorder-model"),
        [record],
        system_prompt="Record every finding.",
        store=options.store,
        step_runner=options.step_runner,
        name="recorder",
        strategy=strategy,
        strategy_params={**limit, **options.params},
        **({} if memory else {"memory": ()}),
    )


recorder = AgentSpec(
    name="recorder",
    description="Records six findings, two tool calls per model call.",
    build=build_recorder,
    session=lambda _options: ("Record the findings.",),
)


# Without memory (and skills): sessions of it share nothing durable, so several run at once.
notetaker = dataclasses.replace(
    recorder, name="notetaker", build=lambda options: build_recorder(options, memory=False)
)


@tool
def publish(path: str) -> str:
    """Publish a report.

    Args:
        path: the report file.
    """
    raise FileNotFoundError(f"no report at {path}")


def _clumsy(messages: Sequence[Message], params: RequestParams) -> object:
    if messages[-1].role == "tool":
        return f"Could not publish: {messages[-1].content}"
    return reply("Publishing.", call("publish", call_id="call-p", path="/reports/missing.md"))


def build_clumsy(options: AgentOptions) -> Agent:
    """Calls a tool that raises: the model gets the error as text."""
    return create_agent(
        FunctionModel(_clumsy, name="clumsy-model"), [publish], store=options.store,
        step_runner=options.step_runner, name="clumsy", memory=(),
    )  # fmt: skip


def _hang() -> None:
    with open(os.environ["CTXLAB_TEST_MARKER"], "w") as f:
        f.write("ready")
    # until the test kills the process, or `$CTXLAB_TEST_HANG_S` (a slow tool, not a hung one)
    time.sleep(float(os.environ.get("CTXLAB_TEST_HANG_S", 600)))


def build_weekly_hanging(options: AgentOptions) -> Agent:
    """The competitive-analysis agent; `read_article` blocks on `$CTXLAB_TEST_HANG_ON`."""
    agent = REGISTRY[COMPETITIVE].build(options)
    read = next(t for t in agent.tools if t.name == "read_article")

    def read_article(article_id: str) -> Any:
        if article_id == os.environ.get("CTXLAB_TEST_HANG_ON"):
            _hang()
        return read.fn(article_id=article_id)

    agent.tools = tuple(dataclasses.replace(t, fn=read_article) if t is read else t
                        for t in agent.tools)  # fmt: skip
    return agent


# Named as the agent it wraps, so `--weeks` runs it (and `week=auto` resolves for it).
weekly_hanging = dataclasses.replace(REGISTRY[COMPETITIVE], build=build_weekly_hanging)


def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: any text.
    """
    return len(text.split())


def build_on_given_model(options: AgentOptions) -> Agent:
    """A plain-function tool on the model the command names (`--model`)."""
    return create_agent(
        options.model, [count_words], store=options.store, step_runner=options.step_runner,
        name="on-given-model", memory=(), strategy=options.strategy or "full",
    )  # fmt: skip


on_given_model = AgentSpec(
    name="on-given-model",
    description="Counts words with a plain function, on --model.",
    build=build_on_given_model,
    session=lambda _options: ("How many words in 'one two three'?",),
)


# -- an MCP-backed weekly agent (docs/scheduling.md's example) ----------------------

NEWS_SERVER = StdioServer(
    name="research",
    command=sys.executable,
    args=[str(Path(__file__).resolve().parents[1] / "helpers" / "mcp_server.py"), "stdio"],
)


def _weekly_analyst(messages: Sequence[Message], params: RequestParams) -> object:
    done = [m for m in messages if m.role == "tool"]
    if not done:
        return reply("Fetching the news.", call("market_news", call_id="news-1", company="Acme"))
    if len(done) == 1:  # the news was offloaded: read the part that matters
        page = call("read_file", call_id="read-1", file_path="/large_tool_results/news-1",
                    offset=600)  # fmt: skip
        return reply("Reading on.", page)
    return "This week: Acme raised list prices by 7%."


def build_mcp_weekly(options: AgentOptions) -> Agent:
    return create_agent(
        FunctionModel(_weekly_analyst, name="analyst-model"), store=options.store,
        step_runner=options.step_runner, name="mcp-weekly", memory=(),
        strategy=options.strategy or "offload",
        strategy_params={"offload.tool_token_limit": 2_000, **options.params},
        mcp_servers=options.mcp_servers,
    )  # fmt: skip


mcp_weekly = AgentSpec(
    name="mcp-weekly",
    description="A weekly market summary from an MCP server's news tool.",
    build=build_mcp_weekly,
    session=lambda _options: ("What changed at Acme this week?",),
    mcp_servers=(NEWS_SERVER,),
)


# A tool result several times a lowered store memory_limit (the journal test sets 32 MB).
DUMP_ROWS = 1_000_000  # ~70 MB
DUMP_LINE = "row {:09d}: a tool result far larger than the store's memory limit\n"


def huge_dump() -> str:
    return "".join(DUMP_LINE.format(i) for i in range(DUMP_ROWS))


@tool
def dump() -> str:
    """Dump the whole table."""
    _log("tool dump")
    return huge_dump()


def _dumper(messages: Sequence[Message], params: RequestParams) -> object:
    if messages[-1].role == "tool":
        return "Dumped."
    return reply("Dumping.", call("dump", call_id="call-d"))


def build_dumper(options: AgentOptions) -> Agent:
    """Calls a tool whose result is ~70 MB."""
    return create_agent(
        FunctionModel(_dumper, name="dumper-model"), [dump], store=options.store,
        step_runner=options.step_runner, name="dumper", memory=(),
    )  # fmt: skip


@tool
def stall() -> str:
    """Wait for the table to settle."""
    _hang()
    return "Settled."


def _dump_and_stall(messages: Sequence[Message], params: RequestParams) -> object:
    if messages[-1].role == "tool":
        return "Dumped."
    return reply("Dumping.", call("dump", call_id="call-d"), call("stall", call_id="call-s"))


def build_dump_and_stall(options: AgentOptions) -> Agent:
    """Dumps ~70 MB beside a tool that hangs until `$CTXLAB_TEST_HANG_S`, so that a test can
    kill the run after the dump's result is journaled and before its step commits."""
    return create_agent(
        FunctionModel(_dump_and_stall, name="dumper-model"), [dump, stall],
        store=options.store, step_runner=options.step_runner, name="dumper", memory=(),
    )  # fmt: skip
