"""Re-running a domain lookup: when a fact is out of view and there is no saved copy to grep
(or the greps are spent), the simulated model runs again the earlier call that matches the
question, within its retrieval budget, and reads the fresh result through the harness."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from evals import aggregate, load_runs, run_cell
from evals.gate.sanity import check_scenario
from evals.scenarios import competitive_analysis as flagship
from evals.simulated import (
    BREAKS,
    DONT_KNOW,
    FALLIBLE,
    IDEAL,
    Answer,
    Cue,
    Plan,
    PlanTurn,
    SimulatedModel,
)
from evals.simulated import breaks as breaks_module
from evals.simulated.queries import lookups
from flows.cli import main
from harness import get_profile
from harness.messages import ToolCall, assistant, tool_result, user
from harness.models.base import ModelSettings, RequestParams

QUESTION = "What revenue did the record give for Acme Corp?"
REVENUE = Cue(patterns=(r"Acme Corp revenue = ([0-9.]+)",))
OMITTED = "[Earlier lookup_record result omitted to save context (40 tokens).]"


def spec(name: str) -> dict:
    return {"name": name, "description": "", "parameters": {"type": "object"}}


HARNESS = tuple(spec(n) for n in ("read_file", "grep", "write_file", "task"))
OFFERED = (*HARNESS, spec("lookup_record"), spec("search_news"), spec("publish_report"))


def model(**kwargs) -> SimulatedModel:
    return SimulatedModel(Plan(turns=(PlanTurn(QUESTION, (Answer("rev", REVENUE),)),)), **kwargs)


def ask(m: SimulatedModel, messages, tools=OFFERED):
    return asyncio.run(m.request(messages, ModelSettings(), RequestParams(tools=tuple(tools))))


def earlier(*calls: ToolCall, results: dict[str, str] | None = None) -> list:
    """A window where `calls` were made and their results have been masked since."""
    results = results or {}
    return [user("Study Acme Corp and Zeta Inc."), assistant("Looking them up.", list(calls)),
            *(tool_result(c, results.get(c.id, OMITTED)) for c in calls),
            user(QUESTION)]  # fmt: skip


ACME = ToolCall("x1", "lookup_record", {"name": "Acme Corp"})
ZETA = ToolCall("x2", "lookup_record", {"name": "Zeta Inc"})


@pytest.mark.parametrize("reader", [FALLIBLE, IDEAL], ids=["fallible", "ideal"])
def test_out_of_view_with_no_saved_copy_re_runs_the_matching_lookup_then_answers(reader) -> None:
    m = model(reader=reader)
    window = earlier(ACME, ZETA)
    again = ask(m, window)
    assert [(c.name, c.arguments) for c in again.tool_calls] == [
        ("lookup_record", {"name": "Acme Corp"})
    ]  # the call whose arguments name what the question asks about, not Zeta's
    fresh = tool_result(again.tool_calls[0], "Acme Corp revenue = 42.5 (FY2025)")
    assert ask(m, [*window, again.to_message(), fresh]).text == "42.5"
    assert [(r.retrieval_calls, r.tool_recalls) for r in m.ledger] == [(1, 1), (0, 0)]


def test_a_re_run_result_that_was_offloaded_is_grepped_next() -> None:
    m = model()
    window = earlier(ACME)
    again = ask(m, window)
    note = "Result saved in full to /large_tool_results/c000_01 (first lines: Acme Corp record)"
    saved = tool_result(again.tool_calls[0], note)
    search = ask(m, [*window, again.to_message(), saved])
    assert [(c.name, c.arguments["path"]) for c in search.tool_calls] == [
        ("grep", "/large_tool_results/c000_01")
    ]
    assert [(r.retrieval_calls, r.tool_recalls) for r in m.ledger] == [(1, 1), (1, 0)]


def test_no_re_run_once_the_retrieval_budget_is_spent() -> None:
    news = ToolCall("x3", "search_news", {"query": "Acme Corp news"})
    m = model(reader=replace(IDEAL, max_retrievals=1))
    window = earlier(ACME, news)
    first = ask(m, window)
    assert len(first.tool_calls) == 1  # one of the two matching lookups: the budget allows one
    nothing = tool_result(first.tool_calls[0], "No record for that name.")
    assert ask(m, [*window, first.to_message(), nothing]).text == DONT_KNOW
    spent = model(reader=replace(IDEAL, max_retrievals=0))
    assert ask(spent, earlier(ACME, news)).text == DONT_KNOW
    assert [r.tool_calls for r in spent.ledger] == [0]


def test_only_offered_lookups_are_re_run_never_actions_or_harness_tools() -> None:
    publish = ToolCall("x4", "publish_report", {"file_path": "/reports/Acme Corp.md"})
    read = ToolCall("x5", "read_file", {"file_path": "/notes/Acme Corp.md"})
    m = model()
    assert ask(m, earlier(ACME), tools=HARNESS).text == DONT_KNOW  # lookup_record not offered
    assert ask(model(), earlier(publish, read)).text == DONT_KNOW
    calls = [("lookup_record", ACME.arguments), ("publish_report", publish.arguments),
             ("read_file", read.arguments)]  # fmt: skip
    assert lookups(calls, QUESTION, {"read_file", "publish_report"}) == []
    assert lookups(calls, QUESTION, {"lookup_record"}) == [("lookup_record", ACME.arguments)]


def test_a_lookup_naming_another_quarter_or_metric_ranks_below_the_broad_one() -> None:
    question = "In the Arcadia Foods export, what were units_k for Arcadia Foods in 2025-Q2?"
    narrow = (
        "query_market_export",
        {"company": "Arcadia Foods", "quarter": "2025-Q4", "metric": "revenue_musd"},
    )
    broad = ("query_market_export", {"company": "Arcadia", "quarter": "2025"})
    news = ("search_news", {"query": "Arcadia Foods news"})
    other = ("query_market_export", {"company": "Zeta", "quarter": "2025"})  # fmt: skip
    ranked = lookups([broad, narrow, news, other], question, {"query_market_export", "search_news"})
    assert ranked == [news, broad]  # the narrow query contradicts the question; Zeta is off-topic


def test_a_lookup_whose_result_would_not_fit_the_window_is_not_re_run() -> None:
    small = replace(get_profile("simulated"), context_window=600)
    huge = "[Earlier lookup_record result omitted to save context (5,000 tokens).]"
    m = model(profile=small)
    assert ask(m, earlier(ACME, results={"x1": huge})).text == DONT_KNOW
    assert ask(model(profile=small), earlier(ACME)).tool_calls  # 40 tokens fit


def test_break_arms_rewrite_re_run_results_too() -> None:
    for arm, expected in (("blank-tools", DONT_KNOW), ("corrupt-digits", "53.6")):
        m = model(view=BREAKS[arm])
        window = earlier(ACME)
        again = ask(m, window)
        assert again.tool_calls[0].name == "lookup_record"
        fresh = tool_result(again.tool_calls[0], "Acme Corp revenue = 42.5")
        assert ask(m, [*window, again.to_message(), fresh]).text == expected


def test_sanity_fails_when_re_run_results_escape_the_break(monkeypatch) -> None:
    honest = breaks_module.Break.messages

    def leaky(self, messages):  # re-run lookups' results shown as they are
        shown = honest(self, messages)
        again = {c.id for m in messages if "again for this" in m.content for c in m.tool_calls}
        return [o if o.tool_call_id in again else s for o, s in zip(messages, shown, strict=True)]

    scenario = flagship.build(0, "small")
    (blank,) = asyncio.run(check_scenario(scenario, arms=("blank-tools",)))
    assert blank.ok
    monkeypatch.setattr(breaks_module.Break, "messages", leaky)
    (leaked,) = asyncio.run(check_scenario(scenario, arms=("blank-tools",)))
    assert not leaked.ok and leaked.leaks


def _eval(tmp_path: Path, capsys, *argv: str) -> dict[str, dict]:
    db = str(tmp_path / "runs.duckdb")
    assert main(["eval", "--scenario", "competitive-analysis", "--scale", "small", "--seed", "0",
                 "--db", db, "--json", *argv]) == 0  # fmt: skip
    runs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    stored = load_runs(db)
    assert stored["tool_recalls"].to_list() == [r["tool_recalls"] for r in runs]
    return {r["strategy"]: r for r in runs}


def test_eval_json_counts_tool_recalls_where_results_were_dropped(
    tmp_path: Path, capsys, cli_env
) -> None:
    runs = _eval(tmp_path, capsys, "--strategy", "mask", "--strategy", "truncate")
    mask = runs["mask"]
    assert 0 < mask["tool_recalls"] <= mask["retrieval_calls"]
    # Truncation drops the calls with their results: nothing left in view to run again.
    assert runs["truncate"]["tool_recalls"] == 0


def test_nothing_dropped_nothing_re_run_with_the_ideal_reader(
    tmp_path: Path, capsys, cli_env
) -> None:
    runs = _eval(tmp_path, capsys, "--strategy", "none-unbounded", "--reader", "ideal")
    assert runs["none-unbounded"]["tool_recalls"] == 0


def test_a_checkpoint_after_a_re_run_resumes_the_same_retrieval() -> None:
    m = model()
    window = earlier(ACME, ZETA)
    again = ask(m, window)
    state = json.loads(json.dumps(m.checkpoint()))
    fresh = model()
    fresh.restore(state)
    assert fresh.checkpoint() == state
    note = "Result saved in full to /large_tool_results/c000_01 (first lines: Acme Corp record)"
    after = [*window, again.to_message(), tool_result(again.tool_calls[0], note)]
    here, there = ask(m, after), ask(fresh, after)
    assert (here.text, here.tool_calls) == (there.text, there.tool_calls)
    assert [c.name for c in there.tool_calls] == ["grep"]  # the pending re-run came along
    nothing = [*after, here.to_message(), tool_result(here.tool_calls[0], "No matches")]
    # Both remember what was re-run: Acme's lookup is not run again, Zeta's is off-topic.
    assert ask(m, nothing).text == ask(fresh, nothing).text == DONT_KNOW


def test_a_re_run_result_is_read_with_misses_not_as_the_newest_turn() -> None:
    # A long request where the re-run result sits among the newest turns: on main it was
    # read without misses on every seed; now some seeds miss it as they would in place.
    padding = "\n".join(f"Filler line {k} about nothing in particular." for k in range(2_500))
    outcomes = []
    for seed in range(40):
        m = model(seed=seed)
        window = [user(padding), *earlier(ACME, ZETA)]
        again = ask(m, window)
        assert [c.name for c in again.tool_calls] == ["lookup_record"]
        fresh = tool_result(again.tool_calls[0], "Acme Corp revenue = 42.5 (FY2025)")
        outcomes.append(ask(m, [*window, again.to_message(), fresh]).text)
    assert "42.5" in outcomes and any(o != "42.5" for o in outcomes)
    ideal = model(reader=IDEAL)
    window = [user(padding), *earlier(ACME, ZETA)]
    again = ask(ideal, window)
    fresh = tool_result(again.tool_calls[0], "Acme Corp revenue = 42.5 (FY2025)")
    assert ask(ideal, [*window, again.to_message(), fresh]).text == "42.5"  # ideal stays ideal


def test_re_runs_are_capped_by_retrieval_turns_like_greps() -> None:
    news = ToolCall("x3", "lookup_record", {"name": "Acme Corp", "part": "news"})
    m = model(reader=replace(IDEAL, max_rounds=1))
    window = earlier(ACME, news)
    first = ask(m, window)
    assert len(first.tool_calls) == 1
    nothing = tool_result(first.tool_calls[0], "No record for that name.")
    # Calls remain in the budget, but the one retrieval turn is spent: no second re-run.
    assert ask(m, [*window, first.to_message(), nothing]).text == DONT_KNOW


@pytest.mark.slow
def test_throwing_context_away_never_scores_above_keeping_it_beyond_the_noise() -> None:
    def arm(strategy: str, **params) -> list:
        return [
            run_cell("competitive-analysis", strategy, params, seed, "small") for seed in range(3)
        ]

    full = aggregate(arm("full"))[0]
    for default, removed in (
        (arm("context-edit"), arm("context-edit", **{"context-edit.keep": 0})),
        (arm("mask"), arm("mask", **{"mask.keep": 5})),
    ):
        kept, cut = aggregate(default)[0], aggregate(removed)[0]
        assert cut.accuracy.mean <= full.accuracy.high
        # What the defaults lose by dying of overflow is reported apart; on the probes they
        # reach, keeping more is never beaten beyond the seeds' spread.
        assert cut.reached_accuracy is not None and kept.reached_accuracy is not None
        assert cut.reached_accuracy.mean <= kept.reached_accuracy.high
        assert sum(r.lost_to_overflow for r in default) > 0
