"""SimulatedModel as a specification: it replays the plan, decides only from what the request
holds, summarizes extractively within a budget, bills prompt caching, and fails on overflow."""

import asyncio
import json
from dataclasses import replace

import pytest

from evals.errors import BudgetExceededError
from evals.simulated import (
    DONT_KNOW,
    FALLIBLE,
    IDEAL,
    SUMMARY_MARKER,
    Act,
    Answer,
    Compose,
    Cue,
    Fact,
    Plan,
    PlanTurn,
    ReadSkill,
    Remember,
    ReportFindings,
    SimulatedModel,
    cacheable,
    extractive_summary,
)
from evals.simulated.queries import pointers, query_terms
from evals.simulated.reader import Attention, RequestReader
from harness import ContextOverflowError, Store, create_agent, get_profile, tool
from harness.errors import UnknownModelError
from harness.messages import Message, ToolCall, assistant, tool_result, user
from harness.models import FunctionModel, resolve_model
from harness.models.base import ModelSettings, RequestParams
from harness.tokens import TokenCounter

REVENUE = Cue(patterns=(r"Acme revenue = ([0-9.]+)",), lookalikes=(r"Zeta revenue = ([0-9.]+)",))


def ask(model: SimulatedModel, messages, system: str = "", settings=None) -> object:
    params = RequestParams(system_prompt=system)
    return asyncio.run(model.request(messages, settings or ModelSettings(), params))


def plan(*turns: PlanTurn, tasks: tuple[PlanTurn, ...] = ()) -> Plan:
    return Plan(turns=turns, tasks=tasks)


def test_replays_recorded_steps_with_stable_call_ids_then_the_final_text() -> None:
    model = SimulatedModel(
        plan(PlanTurn("Go.", (Act("Looking.", (("lookup", {"q": "a"}), ("lookup", {"q": "b"}))),),
                  final="All done."))
    )  # fmt: skip
    first = ask(model, [user("Go.")])
    assert first.text == "Looking."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("c000_01", "lookup", {"q": "a"}),
        ("c000_02", "lookup", {"q": "b"}),
    ]
    results = [tool_result(c, "ok") for c in first.tool_calls]
    second = ask(model, [user("Go."), first.to_message(), *results])
    assert (second.text, second.tool_calls) == ("All done.", ())
    assert [r.role for r in model.ledger] == ["main", "main"]


def test_answers_only_from_the_request_newest_occurrence_first() -> None:
    model = SimulatedModel(plan(PlanTurn("What was Acme's revenue?", (Answer("rev", REVENUE),))))
    old = assistant("Noted: Acme revenue = 10.5")
    new = assistant("Correction: Acme revenue = 11.0")
    assert ask(model, [old, new, user("What was Acme's revenue?")]).text == "11.0"
    blank = SimulatedModel(plan(PlanTurn("What was Acme's revenue?", (Answer("rev", REVENUE),))))
    assert ask(blank, [user("What was Acme's revenue?")]).text == DONT_KNOW


def test_fetches_from_the_pointed_file_when_the_fact_is_out_of_view() -> None:
    turn = PlanTurn("What was Acme's revenue?", (Answer("rev", REVENUE),))
    model = SimulatedModel(plan(turn))
    preview = tool_result(
        ToolCall("x1", "export"), "Saved in full to /large_tool_results/x1 (Acme export)"
    )
    other = tool_result(ToolCall("x2", "export"), "Saved in full to /large_tool_results/x2 (Zeta)")
    window = [assistant("", [ToolCall("x1", "export"), ToolCall("x2", "export")]), preview, other,
              user("What was Acme's revenue?")]  # fmt: skip
    search = ask(model, window)
    assert [c.name for c in search.tool_calls] == ["grep", "grep"]
    # The query is the question's own words; the file whose preview names the company asked
    # about is searched first.
    assert search.tool_calls[0].arguments == {
        "pattern": "revenue", "regex": True, "output_mode": "content", "max_count": 40,
        "path": "/large_tool_results/x1",
    }  # fmt: skip
    found = [tool_result(search.tool_calls[0], "/large_tool_results/x1:7:Acme revenue = 42.5"),
             tool_result(search.tool_calls[1], "No matches")]  # fmt: skip
    assert ask(model, [*window, search.to_message(), *found]).text == "42.5"
    assert [r.retrieval_calls for r in model.ledger] == [2, 0]


def test_pointers_rank_by_overlap_with_the_question_then_recency() -> None:
    texts = ["file /conversation_history/t.md holds the history",
             "the Zeta export went to /large_tool_results/a",
             "the Acme export went to /large_tool_results/b"]  # fmt: skip
    assert pointers(texts, "what did the Zeta export say?")[0] == "/large_tool_results/a"
    assert pointers(texts)[0] == "/large_tool_results/b"


def test_summary_requests_get_an_extractive_summary_within_budget() -> None:
    conversation = "\n\n".join(
        [
            "### User\nStudy Acme and Zeta this week.",
            '### Assistant\nPulling the export.\n-> calls query (id c1) with {"company": "Acme"}',
            "### Tool result: query (call c1)\nAcme export: 900 rows\nrow 1\nrow 2\nrow 3 detail",
            "### Assistant\nNoted: Acme revenue = 10.5\n"
            '-> calls write_file (id c2) with {"file_path": "/notes/acme.md", "content": "x"}',
        ]
    )  # fmt: skip
    request = user(f"{SUMMARY_MARKER}\n<conversation>\n{conversation}\n</conversation>")
    model = SimulatedModel()
    text = ask(model, [request], system="Summarize.", settings=ModelSettings(max_tokens=4000)).text
    assert "[assistant] Noted: Acme revenue = 10.5" in text
    assert "[assistant] Wrote /notes/acme.md." in text
    assert "[tool] Acme export: 900 rows" in text
    assert "row 3 detail" not in text  # only the head of a tool result survives
    assert model.ledger[-1].role == "summarizer"


def test_the_summarizer_keeps_what_its_prompt_asks_for_at_the_length_it_allows() -> None:
    from harness.middleware.summarizer import DEFAULT_PROMPT

    conversation = "\n\n".join(
        ["### User\nStudy Acme this week.", "### Assistant\nNoted: Acme revenue = 10.5"]
        + [f"### Assistant\nChecked the coverage, part {word}." for word in ("one", "two", "x")]
    )
    request = user(f"{SUMMARY_MARKER}\n<conversation>\n{conversation}\n</conversation>")

    def summary(prompt: str, max_tokens: int = 4000) -> str:
        model = SimulatedModel()
        return ask(
            model, [request], system=prompt, settings=ModelSettings(max_tokens=max_tokens)
        ).text

    # Under the default prompt (figures, paths, names asked for) the figure outranks newer lines.
    assert "Acme revenue = 10.5" in summary(DEFAULT_PROMPT, max_tokens=40)
    # A prompt that asks for none of them keeps the newest lines instead.
    assert "Acme revenue = 10.5" not in summary("Summarize the conversation.", max_tokens=40)
    brief = summary("Briefly summarize in two sentences.")
    assert brief.splitlines()[1:] == [
        "[assistant] Checked the coverage, part two.",
        "[assistant] Checked the coverage, part x.",
    ]
    assert "Acme revenue = 10.5" in summary(DEFAULT_PROMPT)  # no length set: all of it fits


def test_extractive_summary_drops_the_oldest_lines_first_when_over_budget() -> None:
    counter = TokenCounter()
    units = [("assistant", f"Note {i}: value {i * 7}") for i in range(200)]
    text = extractive_summary(units, 120, counter)
    assert "Note 199: value 1393" in text and "Note 0: value 0" not in text
    assert counter.count_text(text) < 160


def test_overflow_raises_like_a_provider_and_bills_nothing() -> None:
    profile = replace(get_profile("simulated"), context_window=50)
    model = SimulatedModel(plan(PlanTurn("Hi.", ())), profile=profile)
    with pytest.raises(ContextOverflowError) as err:
        ask(model, [user("Hi. " + "word " * 200)])
    assert err.value.limit == 50
    assert model.ledger == [] and model.overflows


def test_cached_tokens_are_the_prefix_shared_with_the_previous_request() -> None:
    assert (cacheable(1000), cacheable(1024), cacheable(1300)) == (0, 1024, 1280)
    turn = PlanTurn("Go.", (Act("a", (("t", {}),)), Act("b", (("t", {}),))), final="done")
    model = SimulatedModel(plan(turn))
    big = user("Go.\n" + "background " * 3000)
    first = ask(model, [big])
    second = ask(model, [big, first.to_message(), tool_result(first.tool_calls[0], "ok")])
    assert first.usage.cached_tokens == 0
    assert 1024 <= second.usage.cached_tokens <= second.usage.input_tokens
    assert second.usage.cached_tokens == cacheable(TokenCounter().count_message(big) + 3)


def test_a_checkpoint_taken_mid_plan_restores_into_a_fresh_model_that_answers_the_same() -> None:
    step = (("t", {}),)
    turn = PlanTurn("Go.", (Act("a", step), Act("b", step), Act("c", step)), final="done")
    task = PlanTurn("Sweep Acme.", (Act("s", step), ReportFindings()))
    the_plan = plan(turn, tasks=(task,))
    model = SimulatedModel(the_plan)
    big = user("Go.\n" + "background " * 3000)
    first = ask(model, [big])
    sweep = ask(model, [user("Sweep Acme.")])
    window = [big, first.to_message(), tool_result(first.tool_calls[0], "ok")]
    second = ask(model, window)
    window += [second.to_message(), tool_result(second.tool_calls[0], "ok")]
    task_window = [user("Sweep Acme."), sweep.to_message(),
                   tool_result(sweep.tool_calls[0], "Key finding: Acme won a deal.")]  # fmt: skip

    state = json.loads(json.dumps(model.checkpoint()))
    fresh = SimulatedModel(the_plan)
    fresh.restore(state)
    assert fresh.checkpoint() == state
    # Without the checkpoint a new model would start the turn over.
    assert ask(SimulatedModel(the_plan), window).text == "a"
    for messages in (window, task_window):
        here, there = ask(model, messages), ask(fresh, messages)
        assert (here.text, here.tool_calls, here.usage) == (
            there.text,
            there.tool_calls,
            there.usage,
        )
    assert here.text == "- Acme won a deal."
    assert model.ledger[-2].cached_tokens > 0  # the prompt-cache memory came along too
    assert model.checkpoint() == fresh.checkpoint()
    with pytest.raises(ValueError, match="not turn 0"):
        SimulatedModel(plan(PlanTurn("Stop."))).restore(state)


def test_attention_follows_the_nolima_curve_and_is_worst_in_the_middle() -> None:
    attention = Attention()
    assert attention.keep(1_000) == pytest.approx(98.1 / 99.3)
    assert attention.keep(32_000) == pytest.approx(69.7 / 99.3)
    assert attention.keep(16_000) > attention.keep(32_000) == attention.keep(128_000)
    edge, middle = attention.miss(32_000, 0.0), attention.miss(32_000, 0.5)
    assert middle == pytest.approx(1.9 * edge) and attention.miss(32_000, 1.0) == edge


def test_the_fallible_reader_misses_with_length_and_depth_and_is_seeded() -> None:
    fact = "Acme revenue = 3.5\n"

    def seen(depth: float, filler: int, seed: int) -> int:
        hits = 0
        for k in range(60):
            before, after = "x" * int(filler * depth), "y" * int(filler * (1 - depth))
            reader = RequestReader(FALLIBLE, [before + fact + after], filler // 4, seed)
            hits += reader.read(REVENUE, f"q{k}").value == "3.5"
        return hits

    assert seen(0.5, 400_000, 1) == seen(0.5, 400_000, 1)  # seeded
    assert seen(0.5, 400_000, 1) < seen(0.02, 400_000, 1)  # lost in the middle
    assert seen(0.5, 400_000, 1) < seen(0.5, 8_000, 1) == 60  # longer requests miss more
    # The newest text is read reliably, however long the request.
    assert seen(0.999, 400_000, 1) == 60
    ideal = RequestReader(IDEAL, ["x" * 200_000 + fact + "y" * 200_000], 100_000, 1)
    assert ideal.read(REVENUE, "q").value == "3.5"


def test_a_reader_that_misses_can_return_a_look_alike() -> None:
    text = "x" * 200_000 + "Zeta revenue = 9.9\n" + "y" * 100_000 + "Acme revenue = 3.5\n"
    readings = [RequestReader(FALLIBLE, [text + "z" * 200_000], 120_000, 3).read(REVENUE, f"q{k}")
                for k in range(80)]  # fmt: skip
    statuses = {r.status for r in readings}
    assert {"seen", "confused"} <= statuses
    assert {r.value for r in readings if r.status == "confused"} == {"9.9"}
    assert all(r.value is None for r in readings if r.status == "missed")


def test_retrieval_queries_come_from_the_question_words() -> None:
    assert query_terms("How much did we refund on order 84211?")[0] == "84211"
    assert query_terms("Which file holds the notes of batch 2?")[0] == "batch 2"
    terms = query_terms("What were units_k for Arcadia Foods in EMEA, 2025-Q2?")
    assert terms[:3] == ["2025-Q2", "units_k", "Arcadia Foods"]


def test_notes_are_filled_from_the_request_never_from_the_plan() -> None:
    note = Act("Noted: Acme revenue = {{rev}}.", (("write_file", {"file_path": "/n.md",
               "content": "- Acme revenue = {{rev}}"}),), slots=(("rev", REVENUE),))  # fmt: skip
    the_plan = plan(PlanTurn("Note it.", (note,)))

    def written(context: str) -> tuple[str, str]:
        model = SimulatedModel(the_plan)
        out = ask(model, [tool_result(ToolCall("f", "fetch"), context), user("Note it.")])
        return out.text, out.tool_calls[0].arguments["content"]

    assert written("Acme revenue = 12.5") == (
        "Noted: Acme revenue = 12.5.",
        "- Acme revenue = 12.5",
    )
    assert written("[blank]") == ("Noted: Acme revenue = unknown.", "- Acme revenue = unknown")
    assert written("Acme revenue = 23.6")[0] == "Noted: Acme revenue = 23.6."  # copied as seen
    with pytest.raises(ValueError, match="slots without cues"):
        plan(PlanTurn("Bad.", (Act("{{rev}}", (("t", {}),)),)))


def test_compose_uses_the_template_sections_and_the_requested_style() -> None:
    fact = Fact("Figures", "Acme revenue", REVENUE, " USD M")
    gone = Fact("Figures", "Zeta revenue", Cue(patterns=(r"Zeta revenue = ([0-9.]+)",)))
    turn = PlanTurn("Write it.", (ReadSkill("report"), Compose("/r.md", "Report", (fact, gone))))
    model = SimulatedModel(plan(turn))
    menu = "## Skills\n- **team-report**: the report template\n  Read /skills/team-report/SKILL.md"
    read = ask(model, [user("Write it.")], system=menu)
    assert read.tool_calls[0].arguments == {"file_path": "/skills/team-report/SKILL.md"}
    skill = tool_result(
        read.tool_calls[0], "     1\t## Report sections\n     2\t- Figures\n     3\t- Risks"
    )
    window = [assistant("Acme revenue = 7.5"), user("Use bullets, not paragraphs.\nWrite it."),
              read.to_message(), skill]  # fmt: skip
    write = ask(model, window, system=menu)
    content = write.tool_calls[0].arguments["content"]
    assert content.splitlines()[:4] == ["# Report", "", "## Figures", "- Acme revenue: 7.5 USD M"]
    assert "- Zeta revenue (not at hand)" in content and "## Risks\n- Nothing to report." in content


def test_a_skill_is_chosen_by_its_description_not_by_its_name() -> None:
    model = SimulatedModel(plan(PlanTurn("Write it.", (ReadSkill("competitive report"),))))
    listed = ("## Skills\n<available_skills>\n"
              "- **report-style**: House style for incident write-ups.\n"
              "  Read /skills/report-style/SKILL.md for the full instructions.\n"
              "- **qbr**: Template for the weekly competitive reports.\n"
              "  Read /skills/qbr/SKILL.md for the full instructions.\n"
              "</available_skills>")  # fmt: skip
    read = ask(model, [user("Write it.")], system=listed)
    assert read.tool_calls[0].arguments == {"file_path": "/skills/qbr/SKILL.md"}
    # Without descriptions nothing says which skill is for the report, even by its name.
    bare = ("- **competitive-report**\n  Read /skills/competitive-report/SKILL.md for the full "
            "instructions.")  # fmt: skip
    model = SimulatedModel(plan(PlanTurn("Write it.", (ReadSkill("competitive report"),))))
    assert not ask(model, [user("Write it.")], system=bare).tool_calls


def test_remember_reads_the_memory_file_then_adds_the_preference() -> None:
    model = SimulatedModel(plan(PlanTurn("Use bullets, not paragraphs, please.", (Remember(),))))
    first = ask(model, [user("Use bullets, not paragraphs, please.")])
    assert first.tool_calls[0].name == "read_file"
    missing = tool_result(first.tool_calls[0], "Error: file not found: /memories/AGENTS.md")
    second = ask(model, [user("Use bullets, not paragraphs, please."), first.to_message(), missing])
    assert second.tool_calls[0].arguments == {
        "file_path": "/memories/AGENTS.md",
        "content": "# Agent memory\n\n- Reports: use bullets, not paragraphs.\n",
    }


def test_subagent_tasks_are_recognised_and_report_their_findings() -> None:
    task = PlanTurn("Sweep the coverage of Acme.", (ReportFindings(limit=2),))
    model = SimulatedModel(plan(tasks=(task,)))
    page = tool_result(ToolCall("p", "read"), "Noise. Key finding: Acme won a deal. More noise.")
    out = ask(model, [user("Sweep the coverage of Acme."), page])
    assert out.text == "- Acme won a deal."
    assert model.ledger[-1].role == "subagent"


def test_a_delegate_decides_at_decision_points_within_a_spending_cap() -> None:
    calls = []

    def real(messages: list[Message], params: RequestParams) -> str:
        calls.append(messages[-1].content)
        return "It was 10.5."

    delegate = FunctionModel(real, name="live", profile=get_profile("test"))
    turns = (PlanTurn("Go.", (Act("Working.", (("t", {}),)),), final="ok"),
             PlanTurn("Revenue?", (Answer("r", REVENUE),)))  # fmt: skip
    model = SimulatedModel(plan(*turns), delegate=delegate, max_usd=1.0)
    go = ask(model, [user("Go.")])
    assert go.text == "Working." and calls == []  # replayed, not asked
    assert ask(model, [user("Go."), user("Revenue?")]).text == "It was 10.5."
    assert calls == ["Revenue?"] and model.ledger[-1].role == "delegate"
    broke = SimulatedModel(plan(*turns), delegate=delegate, max_usd=0.0)
    with pytest.raises(BudgetExceededError):
        ask(broke, [user("Revenue?")])


def test_without_a_plan_it_only_summarizes_and_resolves_by_name() -> None:
    model = resolve_model("simulated")  # registered by importing evals
    assert isinstance(model, SimulatedModel)
    assert "Nothing is planned" in ask(model, [user("hello")]).text


def test_an_unregistered_simulated_model_names_its_replacement(monkeypatch) -> None:
    import harness.models as models

    monkeypatch.setattr(models, "_REGISTERED", {})
    with pytest.raises(UnknownModelError, match="evals.simulated.SimulatedModel"):
        resolve_model("simulated")


def test_runs_through_the_harness_with_the_file_tools() -> None:
    @tool
    def fetch(name: str) -> str:
        """Fetch a record.

        Args:
            name: Which record.
        """
        return f"{name} revenue = 12.5"

    cue = Cue(patterns=(r"Acme revenue = ([0-9.]+)",))
    turns = (PlanTurn("Fetch Acme.", (Act("Fetching.", (("fetch", {"name": "Acme"}),)),), final="ok"),  # noqa: E501
             PlanTurn("Acme's revenue?", (Answer("r", cue),)))  # fmt: skip
    model = SimulatedModel(plan(*turns))
    agent = create_agent(model, [fetch], store=Store(":memory:"), strategy="none")
    assert agent.run_sync("Fetch Acme.", thread_id="t").output == "ok"
    assert agent.run_sync("Acme's revenue?", thread_id="t").output == "12.5"


def test_lines_quoted_from_saved_files_rank_after_the_live_context() -> None:
    nxt = Cue(patterns=(r"Next step: ([^.\n]+)",))
    live = "Done with Acme. Next step: research Zeta."
    quoted = "/conversation_history/t.md:12:Done with Bolt. Next step: research Acme."
    assert RequestReader(IDEAL, [live, quoted], 1_000, 0).read(nxt, "q").value == "research Zeta"
    assert RequestReader(IDEAL, [quoted], 1_000, 0).read(nxt, "q").value == "research Acme"
