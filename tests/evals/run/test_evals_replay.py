"""Replays through the real harness at small scale: what each strategy keeps, what it costs,
that the numbers are deterministic, and that the CI suite still matches its baseline."""

import asyncio

import pytest

from evals import load_runs, run_cell, save_results
from evals.gate.check import DEFAULT_BASELINE, SUITES, cell_key, gate
from evals.run.cell import run_cells
from evals.run.replay import replay
from evals.scenarios import get_scenario
from evals.scoring.storage import load_probes, results_from_frame
from harness import Store, get_profile
from harness.models import FunctionModel


@pytest.fixture(scope="module")
def ci():
    """The CI suite's runs (every scenario at small scale), shared by the tests below."""
    return {cell_key(r): r for r in run_cells(SUITES["ci"])}


def flagship(ci, strategy):
    return ci[f"competitive-analysis/{strategy}/small/seed=0"]


def test_the_ci_suite_matches_the_committed_baseline(ci) -> None:
    ok, lines = gate(list(ci.values()), DEFAULT_BASELINE)
    assert ok, "\n".join(lines)


def test_full_keeps_what_truncation_loses_and_none_overflows(ci) -> None:
    full, truncate, none = (flagship(ci, s) for s in ("full", "truncate", "none"))
    assert full.accuracy >= 0.85 and full.status == "completed" and full.simulated
    assert truncate.accuracy < full.accuracy
    lost = {p.id for p in truncate.probe_results if not p.correct}
    first = get_scenario("competitive-analysis", 0, "small").probes[0].planted.lower()
    assert any(first.replace(" ", "-") in pid for pid in lost)  # early facts go first
    assert none.overflowed and none.status == "overflow" and none.overflow_step > 1
    assert {p.status for p in none.probe_results} >= {"answered", "not_reached"}


def test_week_two_follows_the_preference_remembered_in_week_one(ci) -> None:
    full = {p.id: p for p in flagship(ci, "full").probe_results}
    assert full["memory-format"].correct and full["report-bullets"].correct
    assert full["report-figures"].status == "checked"
    none = {p.id: p for p in flagship(ci, "none").probe_results}
    assert not none["report-bullets"].correct  # week 1 died before the feedback


def test_offloading_a_pasted_transcript_trades_retrievals_for_tokens(ci) -> None:
    full = ci["support-transcript/full/small/seed=0"]
    none = ci["support-transcript/none/small/seed=0"]
    assert full.accuracy >= 0.8 and none.accuracy >= 0.8
    assert full.offloads == 1 and full.retrieval_calls > 0 and none.retrieval_calls == 0
    assert full.input_tokens < 0.7 * none.input_tokens
    assert full.peak_context_tokens < none.peak_context_tokens


def test_long_runs_summarize_in_cycles_and_recover_from_the_history(ci) -> None:
    run = ci["long-horizon/full/small/seed=0"]
    assert run.summaries >= 2 and run.summarizer_input_tokens > 0
    assert run.accuracy >= 0.9 and run.retrieval_calls > 0


def test_subagents_absorb_the_noise(ci) -> None:
    run = ci["research-subagents/full/small/seed=0"]
    assert run.accuracy == 1.0
    # The pages went through the subagents' windows; the main window never held them.
    assert run.peak_context_tokens < run.subagent_input_tokens / 4


def test_same_seed_gives_byte_identical_results(ci) -> None:
    again = run_cell("support-transcript", "full", {}, 0, "small")
    before = ci["support-transcript/full/small/seed=0"]
    assert again.to_json(probes=True, wall=False) == before.to_json(probes=True, wall=False)


def test_cached_tokens_are_billed_from_the_shared_prefix(ci) -> None:
    run = flagship(ci, "full")
    assert 0 < run.cached_input_tokens < run.input_tokens
    assert run.cost_usd < run.input_tokens * 2.0 / 1e6 + run.output_tokens * 10.0 / 1e6


def test_every_run_and_probe_lands_in_duckdb(ci, tmp_path) -> None:
    runs = [flagship(ci, "full"), flagship(ci, "none")]
    db = tmp_path / "evals.duckdb"
    batch = save_results(db, runs)
    frame = load_runs(db, "competitive-analysis")
    assert frame["strategy"].to_list() == ["full", "none"] and set(frame["batch"]) == {batch}
    assert load_probes(db).height == sum(r.probes for r in runs)
    back = results_from_frame(frame)
    assert [b.to_json() for b in back] == [r.to_json() for r in runs]


def test_the_replay_store_holds_the_whole_run() -> None:
    store = Store(":memory:")
    scenario = get_scenario("long-horizon", 0, "small")
    out = asyncio.run(replay(scenario, "summarize", {"summarize.trigger": 0.5}, store=store))
    assert out.summaries == len(store.summaries.all()) >= 2
    history = len(store.files.rows("/conversation_history/"))
    assert history == 1
    assert len({r["thread_id"] for r in store.runs.all()}) == 1


def test_a_real_model_decides_at_the_decision_points_within_a_cap() -> None:
    asked = []

    def live(messages, params) -> str:
        asked.append(messages[-1].content)
        return "It was Tilburg, I believe."

    delegate = FunctionModel(live, name="live-model", profile=get_profile("test"))
    run = run_cell("support-transcript", "full", {}, 0, "small", model=delegate)
    questions = [p.question for p in get_scenario("support-transcript", 0, "small").probes]
    assert asked == questions  # the recorded work was replayed; only the questions were asked
    assert run.model == "live-model" and not run.simulated and run.status == "completed"
    capped = run_cell("support-transcript", "full", {}, 0, "small", model=delegate, max_usd=0.0)
    assert capped.status == "budget_exceeded"
    assert all(p.status == "not_reached" for p in capped.probe_results)
