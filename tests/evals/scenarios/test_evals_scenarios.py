"""The scenarios: deterministic from a seed, the sizes the issue asks for, probes that can be
answered only from the run (their cues never hold the answer)."""

import json
import re
from dataclasses import asdict

import pytest

from evals.errors import UnknownScenarioError
from evals.scenarios import export_scenario, get_scenario, list_scenarios, scenario_summary
from evals.scenarios.base import PROBE_KINDS, load_spec
from evals.scenarios.competitive_analysis import build as build_flagship
from evals.scenarios.competitive_probes import cues
from evals.scenarios.market import World
from evals.scenarios.support_transcript import transcript_tokens
from evals.scoring.answers import outcome


@pytest.fixture(scope="module")
def flagship_full():
    return get_scenario("competitive-analysis", 0, "full")


def test_every_scenario_is_listed_and_builds_at_small_scale() -> None:
    assert list_scenarios() == [
        "competitive-analysis", "support-transcript", "research-subagents", "long-horizon",
    ]  # fmt: skip
    for name in list_scenarios():
        scenario = get_scenario(name, 0, "small")
        assert scenario_summary(name)["title"] == scenario.title
        assert scenario.probes and scenario.sessions
        asked = {t.probe for s in scenario.sessions for t in s.turns if t.probe}
        scored_from_files = {p.id for p in scenario.probes if p.check is not None}
        assert asked | scored_from_files == {p.id for p in scenario.probes}
    with pytest.raises(UnknownScenarioError, match="choose one of"):
        get_scenario("nope")


def test_same_seed_same_scenario_other_seed_other_facts() -> None:
    a, b = build_flagship(3, "small"), build_flagship(3, "small")
    assert a.plan == b.plan and a.probes == b.probes
    assert a.files() == b.files()
    c = build_flagship(4, "small")
    assert [p.answer for p in c.probes] != [p.answer for p in a.probes]


def test_flagship_at_full_scale_has_the_sizes_the_issue_asks_for(flagship_full) -> None:
    assert len(flagship_full.probes) >= 30
    kinds = {p.kind for p in flagship_full.probes}
    assert kinds == set(PROBE_KINDS)
    world = World(0, dict(load_spec("competitive-analysis").scales["full"].model_extra))
    assert 8 <= len(world.companies) <= 10
    assert all(df.height >= 20_000 for df in world.exports.values())
    assert [s.id for s in flagship_full.sessions] == ["week-1", "week-2"]
    sweep = flagship_full.subagents[0]
    assert sweep.name == "market-researcher"
    assert (flagship_full.skills_dir / "SKILL.md").exists()


def test_seeds_vary_structure_and_result_sizes_are_heavy_tailed() -> None:
    sizes = dict(load_spec("competitive-analysis").scales["full"].model_extra or {})
    worlds = [World(seed, sizes) for seed in range(4)]
    assert len({len(w.companies) for w in worlds}) > 1  # how many companies
    assert len({tuple(c.articles for c in w.companies) for w in worlds}) == 4
    assert len({tuple(c.broad_quarter for c in w.companies) for w in worlds}) > 1
    words = sorted(len(a.text().split()) for w in worlds for a in w.articles.values()
                   if a.id.startswith("a-"))  # fmt: skip
    median, top = words[len(words) // 2], words[-1]
    assert top > 20 * median  # many short articles, a few very long ones
    plans = [build_flagship(seed, "small").probes for seed in (0, 1)]
    asked = [[p.id.split("-")[0] for p in probes] for probes in plans]
    assert asked[0] != asked[1]  # probe delays vary with the seed


def test_probes_are_spread_over_the_run_and_early_facts_are_asked_late(flagship_full) -> None:
    turns = [t for t in flagship_full.sessions[0].turns]
    position = {t.probe: i for i, t in enumerate(turns) if t.probe}
    first_company = flagship_full.probes[0].planted
    early = [p for p in flagship_full.probes if p.planted == first_company]
    asked_at = sorted(position[p.id] for p in early if p.id in position)
    work = [i for i, t in enumerate(turns) if not t.probe]  # the company turns, the report
    assert asked_at[0] < work[1] and asked_at[-1] > work[len(work) // 2]


def test_no_cue_holds_its_answer() -> None:
    for name in list_scenarios():
        for probe in get_scenario(name, 0, "small").probes:
            for pattern in (*probe.cue.patterns, *probe.cue.lookalikes):
                # The cue says where a fact is, never what it is.
                assert not re.search(rf"(?<![\w.]){re.escape(probe.answer)}(?![\w])", pattern), (
                    probe.id
                )


def test_no_plan_carries_a_value_the_tools_return() -> None:
    """What the agent writes is filled from the request at replay time: the recorded plan
    never holds a value a tool returns (the leak that let notes carry the truth)."""
    for name in list_scenarios():
        scenario = get_scenario(name, 0, "small")
        plan = json.dumps(asdict(scenario.plan), default=str)
        values = [p.answer for p in scenario.probes if p.source == "tool" and p.check is None]
        values += [v for p in scenario.probes if p.check for v in p.check.contains]
        leaked = [v for v in values if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w])", plan)]
        assert not leaked, (name, leaked[:3])


def test_long_horizon_orders_are_unique() -> None:
    scenario = get_scenario("long-horizon", 0, "full")
    questions = [p.question for p in scenario.probes if p.id.startswith("refund-")]
    data = scenario.files()["tickets.txt"]
    orders = re.findall(r"\| order ([0-9]+) \|", data)
    assert len(orders) == len(set(orders)) == 640
    for q in questions:
        order = re.search(r"order ([0-9]+)", q).group(1)
        assert orders.count(order) == 1


def test_distractors_are_in_the_data_the_agent_sees(flagship_full) -> None:
    export_probe = next(p for p in flagship_full.probes if p.id.startswith("export-"))
    assert len(export_probe.distractors) >= 3
    assert export_probe.answer not in export_probe.distractors


def test_support_transcript_is_over_60k_tokens_at_full_scale() -> None:
    assert transcript_tokens(get_scenario("support-transcript", 0, "full")) >= 60_000


def test_long_horizon_has_600_plus_steps_at_full_scale() -> None:
    scenario = get_scenario("long-horizon", 0, "full")
    assert sum(len(t.steps) for t in scenario.plan.turns) >= 600


def test_export_writes_the_plan_probes_and_data(tmp_path) -> None:
    scenario = get_scenario("support-transcript", 0, "small")
    written = export_scenario(scenario, tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"scenario.json", "sessions.json", "probes.json", "plan.json",
            "data/transcript.txt"} <= names  # fmt: skip
    probes = json.loads((tmp_path / "probes.json").read_text())
    assert len(probes) == len(scenario.probes) and probes[0]["answer"]
    assert json.loads((tmp_path / "scenario.json").read_text())["name"] == "support-transcript"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_each_company_words_its_set_aside_figure_its_own_way(seed: int) -> None:
    world = World(seed, dict(load_spec("competitive-analysis").scales["full"].model_extra or {}))
    phrases = [c.qualifier for c in world.companies]
    assert len(set(phrases)) == len(phrases) == len(world.companies) >= 8
    # No phrase holds another, so naming one never names a second by accident.
    assert not [(a, b) for a in phrases for b in phrases if a != b and a in b]
    for c in world.companies:
        assert c.decoy_qualifier != c.qualifier


@pytest.mark.parametrize("seed", [0, 1])
def test_a_decision_answer_taken_from_another_company_is_scored_wrong(seed: int) -> None:
    scenario = get_scenario("competitive-analysis", seed, "full")
    world = World(seed, dict(load_spec("competitive-analysis").scales["full"].model_extra or {}))
    probes = {p.id: p for p in scenario.probes}
    for c in world.companies:
        probe = probes[f"decision-{c.slug}"]
        assert outcome(probe, f"It was given {c.qualifier}.") == "right"
        for other in world.companies:
            if other is not c:
                assert outcome(probe, f"It was given {other.qualifier}.") == "wrong"
        assert outcome(probe, f"It was given {c.decoy_qualifier}.") == "wrong"


def test_decision_lookalikes_name_the_company_s_own_lookalike_firms() -> None:
    world = World(0, dict(load_spec("competitive-analysis").scales["small"].model_extra or {}))
    news = "\n".join(a.text() for a in world.articles.values())
    for c in world.companies:
        (pattern,) = cues(c)["decision"].lookalikes
        found = [m.group(1) for m in re.finditer(pattern, news)]
        # Its look-alike's sentence, never its own nor another target company's.
        assert found == [c.decoy_qualifier]
