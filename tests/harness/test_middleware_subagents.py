"""Subagents: own context, only the final text comes back, parallel, linked to the parent."""

import asyncio
import time

from helpers.store import events

from harness import Store, tool
from harness.files.filesystem import FileSystem
from harness.files.tools import file_tools
from harness.messages import ModelResponse
from harness.middleware.offload import OffloadLargeResults
from harness.middleware.subagents import SubAgent, SubAgents
from harness.models import FunctionModel, ScriptedModel, call, reply


@tool
def search(query: str) -> str:
    """Search the news.

    Args:
        query: What to look for.
    """
    return "\n".join(f"{query} result {i}: " + "lorem ipsum " * 40 for i in range(400))


def rendezvous_model(log: list[tuple[str, str, float]]) -> FunctionModel:
    """A subagent model: searches once, then waits until the *other* subagent has also
    searched before answering. If task calls ran one after the other, this would time out."""
    arrived = {"Initech": asyncio.Event(), "Globex": asyncio.Event()}

    async def respond(messages, params) -> ModelResponse | str:
        company = messages[0].content.split()[-1]
        if messages[-1].role == "user":
            log.append((company, "start", time.perf_counter()))
            return ModelResponse(tool_calls=(call("search", f"s-{company}", query=company),))
        arrived[company].set()
        other = "Globex" if company == "Initech" else "Initech"
        await asyncio.wait_for(arrived[other].wait(), timeout=5)
        log.append((company, "end", time.perf_counter()))
        return f"- {company}: prices up 3%\n- new CEO\n- hiring"

    return FunctionModel(respond, name="openai:gpt-6.2-mini")


def parent_script() -> ScriptedModel:
    return ScriptedModel(
        [
            reply(
                "Researching both.",
                call("task", "call_a", description="Research Initech", subagent_type="research"),
                call("task", "call_b", description="Research Globex", subagent_type="research"),
            ),
            "Report drafted.",
        ],
        name="openai:gpt-6.2-sol",
    )


def research_agents(log: list) -> SubAgents:
    spec = SubAgent(
        name="research",
        description="Researches one company in depth.",
        system_prompt="Research the company; answer in three bullets.",
        tools=[search, *file_tools()],
        model=rendezvous_model(log),
    )
    return SubAgents([spec])


def test_two_task_calls_run_concurrently_and_return_only_final_text(bare_agent) -> None:
    log: list[tuple[str, str, float]] = []
    parent = parent_script()
    agent = bare_agent(parent, middleware=[OffloadLargeResults(), research_agents(log)])
    result = agent.run_sync("Compare Initech and Globex", thread_id="weekly")
    assert result.status == "completed" and result.output == "Report drafted."

    starts = {c: t for c, kind, t in log if kind == "start"}
    ends = {c: t for c, kind, t in log if kind == "end"}
    assert max(starts.values()) < min(ends.values())  # both were in flight at once

    answers = [m for m in parent.calls[1].messages if m.role == "tool"]
    assert [a.content for a in answers] == [
        "- Initech: prices up 3%\n- new CEO\n- hiring",
        "- Globex: prices up 3%\n- new CEO\n- hiring",
    ]
    assert not any("lorem ipsum" in m.content for m in parent.calls[1].messages)


def test_subagent_runs_are_linked_to_the_parent_and_keep_their_own_history(bare_agent) -> None:
    log: list = []
    store = Store(":memory:")
    agent = bare_agent(parent_script(), middleware=[research_agents(log)], store=store)
    result = agent.run_sync("Compare Initech and Globex", thread_id="weekly")

    children = sorted(
        (r for r in store.runs.all() if r["parent_run_id"] == result.run_id),
        key=lambda r: r["thread_id"],
    )
    assert [c["thread_id"] for c in children] == [
        f"{result.run_id}.task.call_a",
        f"{result.run_id}.task.call_b",
    ]
    assert all(c["parent_step"] == 1 and c["status"] == "completed" for c in children)
    assert {c["model"] for c in children} == {"openai:gpt-6.2-mini"}
    assert {c["agent"] for c in children} == {"agent/research"}

    # The parent's transcript holds the final answers only; each child its own work.
    parent_text = " ".join(m.content for m in store.messages.transcript("weekly"))
    assert "lorem ipsum" not in parent_text
    for child, company in zip(children, ("Initech", "Globex"), strict=True):
        own = store.messages.transcript(child["thread_id"])
        assert own[0].content == f"Research {company}"
        assert all(company in m.content or m.role != "user" for m in own)
        rows = store.messages.rows(child["thread_id"])
        assert {r["run_id"] for r in rows} == {child["run_id"]}

    # Their offloaded search results landed in the parent's files, one file per call.
    files = FileSystem(store, "weekly")
    assert files.list_files("/large_tool_results") == [
        "/large_tool_results/s-Globex",
        "/large_tool_results/s-Initech",
    ]
    found = events(store, result.run_id, middleware="subagents")
    details = sorted((e["detail"] for e in found), key=lambda d: d["thread_id"])
    assert [d["run_id"] for d in details] == [c["run_id"] for c in children]


def test_general_purpose_subagent_gets_the_parent_tools_and_model(bare_agent) -> None:
    delegate = call("task", "c1", description="Find the memo", subagent_type="general-purpose")
    model = ScriptedModel(
        [
            reply("", delegate),
            "The memo says: ship it.",  # the subagent's answer: it runs on the parent's model
            "Done.",
        ]
    )
    agent = bare_agent(model, [search, *file_tools()], [SubAgents()])
    agent.run_sync("go", thread_id="t")
    parent_tools = {t["name"] for t in model.calls[0].params.tools}
    child_tools = {t["name"] for t in model.calls[1].params.tools}
    assert parent_tools - child_tools == {"task"}
    assert model.calls[1].messages[0].content == "Find the memo"
    assert "only this final answer" in model.calls[1].params.system_prompt
    assert model.calls[2].messages[-1].content == "The memo says: ship it."


def test_unknown_subagent_type_lists_the_available_ones(bare_agent) -> None:
    model = ScriptedModel(
        [reply("", call("task", "c1", description="x", subagent_type="nope")), "ok"]
    )
    spec = SubAgent("analyst", "Crunches numbers.", "Be precise.")
    bare_agent(model, middleware=[SubAgents([spec])]).run_sync("go")
    result = model.calls[1].messages[-1]
    assert result.is_error
    assert result.content == (
        "Error: ValueError: unknown subagent_type 'nope'; available: analyst, general-purpose"
    )
    assert "- analyst: Crunches numbers." in model.calls[0].params.tools[0]["description"]


def test_a_subagent_cut_short_says_so(bare_agent) -> None:
    sub = ScriptedModel([reply("still looking", call("search", "s1", query="x"))])
    spec = SubAgent("digger", "Digs.", "Dig.", tools=[search], model=sub)
    parent = ScriptedModel(
        [reply("", call("task", "c1", description="dig", subagent_type="digger")), "ok"]
    )
    bare_agent(parent, middleware=[SubAgents([spec], max_steps=1)]).run_sync("go")
    assert parent.calls[1].messages[-1].content == (
        "[the subagent stopped (max_steps) after 1 model calls]\nstill looking"
    )


def test_compaction_stack_follows_the_strategy_unless_the_spec_overrides(bare_agent) -> None:
    asked: list[str | None] = []

    def stack(strategy, middleware, *, inherited=()):
        asked.append(strategy)
        return [OffloadLargeResults(tool_token_limit=50), *middleware]

    specs = [
        SubAgent("plain", "Plain.", "Answer.", model=ScriptedModel(["a"])),
        SubAgent("cheap", "Cheap.", "Answer.", model=ScriptedModel(["b"]), strategy="truncate"),
    ]
    parent = ScriptedModel(
        [
            reply(
                "",
                call("task", "c1", description="x", subagent_type="plain"),
                call("task", "c2", description="y", subagent_type="cheap"),
            ),
            "ok",
        ]
    )
    store = Store(":memory:")
    mw = SubAgents(specs, strategy="summarize", stack=stack)
    bare_agent(parent, middleware=[mw], store=store).run_sync("go")
    assert asked == ["summarize", "truncate"]
    rows = sorted((r for r in store.runs.all() if r["parent_run_id"]), key=lambda r: r["agent"])
    assert [r["strategy"] for r in rows] == ["truncate", "summarize"]


def test_spec_middleware_sits_inside_compaction_but_outside_the_guard() -> None:
    from harness import create_agent
    from harness.middleware.base import Middleware

    class Tag(Middleware):
        name = "tag"

    spec = SubAgent(name="tagged", description="d", system_prompt="s", middleware=[Tag()])
    parent = create_agent(ScriptedModel([]), store=Store(":memory:"), subagents=[spec])
    subagents = next(mw for mw in parent.middleware if isinstance(mw, SubAgents))
    assert [mw.name for mw in subagents.middleware_for(spec)][-2:] == ["tag", "guard"]


class _Logger:
    """A user's logging middleware: records every model call it sees, by agent name."""

    def __init__(self) -> None:
        from harness.middleware.base import Middleware

        seen: list[str] = []

        class Log(Middleware):
            name = "log"

            async def wrap_model_call(self, request, handler):  # type: ignore[no-untyped-def]
                seen.append(request.state.config.name)
                return await handler(request)

        self.seen = seen
        self.middleware = Log()


def _delegating_run(**options) -> list[str]:  # type: ignore[no-untyped-def]
    from harness import create_agent

    logger = _Logger()
    parent = ScriptedModel(
        [reply("", call("task", "c1", description="x", subagent_type="plain")), "ok"]
    )
    spec_options = options.pop("spec", {})
    spec = SubAgent("plain", "Plain.", "Answer.", model=ScriptedModel(["a"]), **spec_options)
    agent = create_agent(
        parent, store=Store(":memory:"), subagents=[spec], name="main",
        middleware=[logger.middleware], **options,
    )  # fmt: skip
    agent.run_sync("go")
    return logger.seen


def test_user_middleware_sees_subagent_calls_by_default() -> None:
    assert _delegating_run() == ["main", "main/plain", "main"]


def test_subagent_middleware_scopes_user_middleware() -> None:
    assert _delegating_run(subagent_middleware=()) == ["main", "main"]
    assert _delegating_run(spec={"inherit_middleware": False}) == ["main", "main"]


def test_inherited_middleware_sits_before_the_spec_own() -> None:
    from harness import create_agent
    from harness.middleware.base import Middleware

    class Tag(Middleware):
        name = "tag"

    class Mine(Middleware):
        name = "mine"

    spec = SubAgent(name="tagged", description="d", system_prompt="s", middleware=[Tag()])
    parent = create_agent(
        ScriptedModel([]), store=Store(":memory:"), subagents=[spec], middleware=[Mine()]
    )
    subagents = next(mw for mw in parent.middleware if isinstance(mw, SubAgents))
    assert [mw.name for mw in subagents.middleware_for(spec)][-3:] == ["mine", "tag", "guard"]
