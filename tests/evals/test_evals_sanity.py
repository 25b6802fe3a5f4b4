"""The eval tests itself: break arms must drive accuracy under their bounds on every
scenario, and the check must fail when truth leaks through the plan again."""

import asyncio
import json

from evals.cli import register
from evals.sanity import check_scenario, may_pass
from evals.scenarios import competitive_analysis as flagship
from evals.scenarios import list_scenarios
from evals.scenarios.base import load_spec
from evals.scenarios.market import World
from evals.simulated import BREAKS


def _run_cli(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.handler(args)


def test_ctxlab_check_sanity_passes_with_one_json_object_per_scenario_and_arm(capsys) -> None:
    assert _run_cli(["check", "--sanity", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["scenario"], r["arm"]) for r in rows} == {
        (s, a) for s in list_scenarios() for a in BREAKS
    }
    for r in rows:
        assert r["ok"] and not r["leaks"]
        if r["bound"] is not None:
            assert r["accuracy"] <= r["bound"]
    empty = [r for r in rows if r["arm"] == "empty-window"]
    assert max(r["accuracy"] for r in empty) < 0.1  # only memory-derived probes survive
    withheld = {r["scenario"]: r for r in rows if r["arm"] == "withhold-summaries"}
    assert withheld["long-horizon"]["bound"] is not None  # summaries fired: they must matter


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
