"""The eval tests itself: break arms must drive accuracy under their bounds on every
scenario, and the check must fail when truth leaks through the plan again."""

import asyncio
import json

from evals.gate.sanity import check_scenario, default_arms, may_pass, relabel_middleware
from evals.run.replay import replay
from evals.scenarios import competitive_analysis as flagship
from evals.scenarios import list_scenarios
from evals.scenarios.base import load_spec
from evals.scenarios.market import World
from evals.simulated import BREAKS
from flows.cli import add_eval_commands


def _run_cli(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.handler(args)


def test_ctxlab_check_sanity_passes_with_one_json_object_per_scenario_and_arm(capsys) -> None:
    assert _run_cli(["check", "--sanity", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["scenario"], r["arm"]) for r in rows} == {
        (s, a) for s in list_scenarios() for a in default_arms(False)
    }
    for r in rows:
        assert r["ok"] and not r["leaks"]
        if r["bound"] is not None:
            assert r["accuracy"] <= r["bound"]
    empty = [r for r in rows if r["arm"] == "empty-window"]
    assert max(r["accuracy"] for r in empty) < 0.1  # only memory-derived probes survive
    withheld = {r["scenario"]: r for r in rows if r["arm"] == "withhold-summaries"}
    assert withheld["long-horizon"]["bound"] is not None  # summaries fired: they must matter
    relabel = {r["scenario"]: r for r in rows if r["arm"] == "relabel"}
    assert relabel[flagship.NAME]["bound"] is not None  # the flagship names its entities
    assert relabel["research-subagents"]["bound"] is not None  # read by the subagent only


def test_sanity_fails_when_a_note_carries_the_true_value(monkeypatch) -> None:
    sizes = dict(load_spec(flagship.NAME).scales["small"].model_extra or {})
    world = World(0, sizes)
    truth = {c.name: world.value(c, "revenue_musd") for c in world.companies}
    honest = flagship.export_note

    def leaky(c: World) -> str:  # the old leak: the plan's note names the real figure
        return f"{honest(c)} {flagship.revenue_label(c)}: {truth[c.name]}."

    monkeypatch.setattr(flagship, "export_note", leaky)
    (blank,) = asyncio.run(check_scenario(flagship.build(0, "small"), arms=("blank-tools",)))
    assert not blank.ok
    assert any(p.startswith("export-") for p in blank.leaks)


def test_which_probes_may_pass_follows_where_the_answer_comes_from() -> None:
    probes = {p.id: p for p in flagship.build(0, "small").probes}
    export = next(p for k, p in probes.items() if k.startswith("export-"))
    closure = next(p for k, p in probes.items() if k.startswith("closure-"))
    assert not may_pass(export, "blank-tools") and not may_pass(export, "corrupt-digits")
    assert may_pass(closure, "corrupt-digits") and not may_pass(closure, "blank-tools")
    assert may_pass(probes["memory-format"], "empty-window")
    assert not may_pass(probes["report-path"], "empty-window")


def test_relabel_reaches_the_subagent_and_drops_data_accuracy_to_its_floor() -> None:
    """Names swapped in the domain tools' output, in both stacks: every data-derived probe
    fails, the analyst subagent's suppliers too, and the run's JSON shows data-derived
    accuracy at zero beside the data-free floor. In the main stack only, the suppliers
    survive (as every break let them before breaks reached subagents)."""
    from evals.scoring.results import from_replay

    scenario = flagship.build(0, "small")
    relabel = relabel_middleware(scenario)

    def run(**options):  # type: ignore[no-untyped-def]
        return asyncio.run(replay(scenario, "full", seed=0, middleware=relabel, **options))

    both = run()
    assert not [p.id for p in both.probes if p.correct and p.source == "tool"]
    main_only = {p.id for p in run(subagent_middleware=lambda: ()).probes if p.correct}
    survivors = {p for p in main_only if p.startswith(("export-", "supplier-", "closure-"))}
    assert survivors and all(p.startswith("supplier-") for p in survivors)

    result = from_replay(
        both, scenario=scenario.name, strategy="full", params={}, seed=0, scale="small",
        model="simulated", reader="fallible", wall_s=0.0,
    )  # fmt: skip
    doc = json.loads(result.to_json(probes=True))
    data_free = [p for p in scenario.probes if p.source != "tool"]
    assert doc["data_probes"] == len(scenario.probes) - len(data_free)
    assert doc["data_accuracy"] == 0.0 and doc["data_free_accuracy"] == 1.0
    assert doc["accuracy"] == round(len(data_free) / len(scenario.probes), 6)
    assert {p["source"] for p in doc["probe_results"]} >= {"tool", "agent", "memory", "skill"}


def test_every_probe_is_labelled_by_what_it_is_derived_from() -> None:
    sources = {p.id: p.source for p in flagship.build(0, "small").probes}
    assert sources["report-sections"] == "skill" and sources["memory-format"] == "memory"
    assert sources["report-path"] == "agent" and sources["report-figures"] == "tool"
    assert all(v == "agent" for k, v in sources.items() if k.startswith(("next-", "notes-")))


LEAKY_FILE = """format: ctxlab-scenario/1
name: leaky
model:
  window: 16000
tools:
- name: lookup
  parameters: {type: object, properties: {key: {type: string}}}
replies:
- tool: lookup
  arguments: {key: k1}
  content: "The access code is ZX-41 and the depot is in Tromso."
turns:
- id: u1
  text: Look up k1 and keep the code in mind.
  steps:
  - note: Looking it up.
    calls: [{tool: lookup, arguments: {key: k1}}]
  final: Looked it up.
probes:
- id: depot
  kind: recall
  after: u1
  question: "Where is the depot of the code ZX-41?"
  answer: Tromso
  cue: {patterns: ["depot is in ([A-Z][a-z]+)"]}
- id: code
  kind: recall
  after: end
  question: Which access code did the lookup give?
  answer: ZX-41
  cue: {patterns: ["code (?:is )?([A-Z]{2}-[0-9]+)"]}
"""


def test_questions_only_catches_an_answer_given_away_by_a_question(tmp_path, capsys) -> None:
    path = tmp_path / "leaky.yaml"
    path.write_text(LEAKY_FILE, encoding="utf-8")
    assert "questions-only" in default_arms(True) and "questions-only" not in default_arms(False)
    assert _run_cli(["check", "--sanity", "--json", "--scenario", str(path)]) == 1
    rows = {r["arm"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(rows) == set(BREAKS)
    assert rows["questions-only"]["leaks"] == ["code"] and not rows["questions-only"]["ok"]
    assert rows["questions-only"]["bound"] == rows["empty-window"]["accuracy"] == 0.0
    assert rows["relabel"]["ok"] and rows["relabel"]["bound"] is None  # no entities named
