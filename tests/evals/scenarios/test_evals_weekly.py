"""A year of Mondays: the recurring competitive-analysis family, memory policies measured week
by week (evals/scenarios/weekly.py, harness/middleware/memory.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from evals.report.markdown import write_report
from evals.run.cell import run_cell
from evals.run.replay import replay
from evals.scenarios import check_options, get_scenario
from evals.scenarios.drift import subjects
from evals.scenarios.weekly import family
from evals.scoring.results import from_replay
from evals.scoring.storage import load_runs, results_from_frame, save_results
from evals.simulated.summarizer import consolidate_memory
from harness.tokens import TokenCounter

NAME = "competitive-analysis"
# A 12-week run at the small scale: under append a smaller character cap makes the cut come
# within the quarter that CI can afford to replay (the default 20,000 cuts at week ~29).
APPEND = {"memory.policy": "append", "memory.max_chars": 4_000}
CONSOLIDATE = {"memory.policy": "consolidate"}


def test_weeks_make_one_session_a_week_with_drifting_probes() -> None:
    scenario = get_scenario(NAME, 0, "small", {"weeks": 12})
    assert len(scenario.sessions) == 12 and scenario.recurring
    assert len({s.thread for s in scenario.sessions}) == 12
    by_week: dict[int, set[str]] = {}
    for p in scenario.probes:
        by_week.setdefault(p.session, set()).add(family(p.id))
        assert p.source == "memory" and p.answer not in p.distractors
    assert 0 not in by_week  # week 1 only learns
    assert all({"pref", "fact", "decision"} <= fams for fams in by_week.values())
    assert any("stale" in fams for fams in by_week.values())
    stale = [p for p in scenario.probes if family(p.id) == "stale"]
    assert stale and all(p.distractors for p in stale)  # an earlier value is wrong
    # The world drifts: some subject takes a new value within the quarter.
    world_subjects = subjects(_world(), 12)
    assert any(len(s.history) > 1 for s in world_subjects)
    assert get_scenario(NAME, 0, "small").sessions == get_scenario(NAME, 0, "small").sessions
    assert not get_scenario(NAME, 0, "small").recurring  # no `weeks`: the two-week flagship


def _world():
    from evals.scenarios.base import load_spec
    from evals.scenarios.market import World

    sizes = load_spec(NAME).scales["small"]
    return World(0, dict(sizes.model_extra or {}))


def test_each_mondays_export_drifts_and_supersedes_facts_the_probes_ask_about() -> None:
    """The exports drift too: every week's figures move, and a company's capacity, price or
    plant status changes in the export data (not only in the news); the `fact` and `stale`
    probes ask about those export-derived values."""
    from evals.scenarios.competitive_analysis import build
    from evals.scenarios.drift import EXPORT_FACTS, WeeklyExports, export_key, monday

    world = _world()
    subs = subjects(world, 12)
    exports = WeeklyExports(world, subs, 12)
    c = world.companies[0]

    def rows(week: int) -> dict[tuple[str, str, str], str]:
        df = exports.frame(c, week)
        return {(f, r, m): v for _, f, r, m, v in df.iter_rows()}

    first, second = rows(1), rows(2)
    assert first.keys() == second.keys()
    figures = [k for k in first if k[2] == "units_k"]
    moved = [k for k in figures if first[k] != second[k]]
    assert len(moved) >= 0.9 * len(figures)  # the figures drift (a few round the same)
    assert rows(1) == first  # seeded: the same week reads the same
    # Each tracked cell shows its subject's value in force that week; some change within 12.
    superseded = 0
    for company in world.companies:
        for metric in EXPORT_FACTS:
            subject = next(s for s in subs if s.key == export_key(company, metric))
            for week in (1, 6, 12):
                df = exports.frame(company, week)
                (value,) = df.filter(
                    (df["company"] == company.name) & (df["region"] == company.region)
                    & (df["metric"] == metric)
                )["value"]  # fmt: skip
                assert value == subject.value(week)
            superseded += len(subject.history) > 1
    assert superseded >= 3

    scenario = build(0, "small", weeks=12)
    query = scenario.tools[0]
    out = query.fn(company=c.name, date=monday(3), region=c.region)
    assert out.startswith(f"{c.name} export, {monday(3)}:") and f"{monday(3)},{c.name}," in out
    assert "no export dated '2026-01-13'" in query.fn(company=c.name, date="2026-01-13")
    # The two-week flagship keeps its one export and its tool, unchanged.
    assert "date" not in build(0, "small").tools[0].parameters["properties"]
    files = scenario.files()
    assert f"exports/{monday(12)}/{c.slug}.csv" in files and f"exports/{c.slug}.csv" not in files
    # Probes: every week asks an export-derived fact; the stale checks cover exports too.
    by_week: dict[int, list[str]] = {}
    for p in scenario.probes:
        by_week.setdefault(p.session, []).append(p.id)
    assert all(any(i.startswith("fact-export-") for i in ids) for ids in by_week.values())
    stale = [p for p in scenario.probes if p.id.startswith("stale-export-")]
    assert stale and all(p.distractors and p.answer not in p.distractors for p in stale)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"weeks": 0}, "weeks must be a whole number from 1 to 260"),
     ({"weeks": "many"}, "weeks must be a whole number"),
     ({"week": 3}, "has no parameter 'week' .its parameters: weeks")],
)  # fmt: skip
def test_scenario_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_options(NAME, options)
    with pytest.raises(ValueError, match="it takes none"):
        check_options("long-horizon", {"weeks": 3})


def test_simulated_consolidation_keeps_the_newest_entry_of_each_subject() -> None:
    counter = TokenCounter("o200k_base")
    text = "# Agent memory\n\n" + "\n".join(
        [f"- Week of 2026-01-{d:02d}: a long log line about that week, kept in memory." for d in
         range(10, 30)]
        + ["- [format] bullets (said 2026-01-12)", "- [fact: X CEO] Ann Lee (as of 2026-01-12)",
           "- [format] a table (said 2026-02-02)"]
    )  # fmt: skip
    out = consolidate_memory(text, 120, counter, seed=0)
    assert counter.count_text(out) <= 120
    assert "- [format] a table (said 2026-02-02)" in out and "bullets" not in out
    assert "Ann Lee" in out and out.startswith("# Agent memory")
    assert "2026-01-29" in out and "2026-01-10" not in out  # old logs go first


def test_the_eval_sees_append_lose_the_newest_lessons_that_consolidate_keeps() -> None:
    """The 12-week CI version of the soak test (the year is `test_a_year_of_mondays`)."""
    append = run_cell(NAME, "full", {"weeks": 12, **APPEND}, seed=1)
    consolidate = run_cell(NAME, "full", {"weeks": 12, **CONSOLIDATE}, seed=1)
    grow = [w["memory_tokens"] for w in append.weeks]
    kept = [w["memory_tokens"] for w in consolidate.weeks]
    assert grow == sorted(grow) and grow[-1] > max(kept)  # append only grows, to its cap
    assert max(kept) <= 800  # consolidate stays within its budget (the default)
    late = slice(8, 12)
    lost = [w["accuracy"] for w in append.weeks[late]]
    held = [w["accuracy"] for w in consolidate.weeks[late]]
    assert sum(held) > sum(lost) + 1  # the cut hides the newest entries: stale answers
    assert consolidate.weeks[-1]["input_tokens"] < append.weeks[-1]["input_tokens"]
    line = json.loads(consolidate.to_json())
    assert [sorted(w) for w in line["weeks"]] == [
        ["accuracy", "cost_usd", "input_tokens", "memory_tokens", "probes", "week"]
    ] * 12
    assert "weeks" not in json.loads(run_cell(NAME, "none", seed=0).to_json())


def test_week_numbers_are_stored_and_every_memory_version_reads_back(tmp_path) -> None:
    scenario = get_scenario(NAME, 2, "small", {"weeks": 6})
    out = asyncio.run(replay(scenario, "full", {"memory.budget_tokens": 300}, seed=2))
    assert out.store is not None
    versions = out.store.memory.versions("/memories/AGENTS.md")
    authors = {v["author"] for v in versions}
    assert authors == {"agent", "consolidate"}
    assert [v["version"] for v in versions] == list(range(1, len(versions) + 1))
    # Every week's memory as it stood at the week's start is still there.
    first_line = "- [format] bullets (said 2026-01-12)"
    assert first_line in versions[0]["content"]
    assert all(v["content"].startswith("# Agent memory") for v in versions)
    result = from_replay(
        out, scenario=NAME, strategy="full", params={"weeks": 6}, seed=2, scale="small",
        model="simulated", reader="fallible", wall_s=0.0,
    )  # fmt: skip
    db = tmp_path / "e.duckdb"
    save_results(str(db), [result])
    (back,) = results_from_frame(load_runs(str(db)))
    assert back.weeks == result.weeks and len(back.weeks) == 6
    # The report: a week-by-week table and plot per setting.
    md, _png, _svg, weeks_png, _weeks_svg = write_report([back], tmp_path / "reports")
    text = md.read_text()
    assert "### full, memory.policy=consolidate (1 seed)" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| 6 |")]
    assert rows and rows[0].endswith("|") and weeks_png.read_bytes().startswith(b"\x89PNG")
    assert "![tokens and accuracy per week](competitive-analysis-weeks.png)" in text


@pytest.mark.slow
def test_a_year_of_mondays() -> None:
    """52 weeks under each policy: consolidate keeps memory within budget, input flat and
    current-preference accuracy up; append grows and loses the newest lessons."""
    consolidate = run_cell(NAME, "full", {"weeks": 52, **CONSOLIDATE}, seed=0)
    append = run_cell(NAME, "full", {"weeks": 52, "memory.policy": "append"}, seed=0)
    w = consolidate.weeks
    assert max(x["memory_tokens"] for x in w) <= 800
    assert w[51]["input_tokens"] <= 1.25 * w[3]["input_tokens"]
    first = [x["probes"]["pref"] for x in w[1:14]]
    last = [x["probes"]["pref"] for x in w[-13:]]
    assert sum(last) / len(last) >= sum(first) / len(first)
    a = append.weeks
    assert a[51]["memory_tokens"] > 4 * w[51]["memory_tokens"]
    assert sum(x["accuracy"] for x in a[-13:]) < sum(x["accuracy"] for x in w[-13:]) - 3
