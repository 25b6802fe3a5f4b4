"""The sanity breaks on an imported trace whose probes are named by role: carried probes are
left out as the headline leaves them out, and `relabel` swaps the role-named values in pairs
across tool results, so a relabelled trace answers with another value of the same kind."""

import asyncio
from pathlib import Path
from typing import Any

from role_scenario import OTHER_PAYMENT, PAYMENT, role_scenario

from evals.gate.sanity import check_scenario, relabel_middleware
from evals.run.replay import replay
from evals.scenarios.format import ProbeSpec
from evals.scenarios.from_file import load_scenario_file
from evals.scenarios.recorded import relabelled
from evals.simulated import BREAKS
from evals.simulated.breaks import entity_pairs
from evals.sources.trace_import import import_path


def test_breaks_pass_on_a_sound_trace_with_a_carried_value(tmp_path) -> None:
    scenario = load_scenario_file(role_scenario(tmp_path))
    results = asyncio.run(
        check_scenario(scenario, arms=("blank-tools", "corrupt-digits", "relabel"))
    )
    assert [r.arm for r in results if r.ok] == ["blank-tools", "corrupt-digits", "relabel"]
    relabel = results[-1]
    assert relabel.bound == 0.0 and relabel.probes == 2  # the carried probe is left out


def test_relabel_swaps_role_named_values_of_an_imported_trace(tmp_path) -> None:
    scenario = load_scenario_file(role_scenario(tmp_path))
    assert set(scenario.entities) == {PAYMENT, OTHER_PAYMENT}
    out = asyncio.run(
        replay(scenario, "full", reader="ideal", view=BREAKS["relabel"],
               middleware=relabel_middleware(scenario))
    )  # fmt: skip
    if out.store is not None:
        out.store.close()
    answers = {p.id: p.answer for p in out.probes}
    assert answers["pay"] == OTHER_PAYMENT and answers["gift"] == PAYMENT


def test_relabel_never_pairs_a_value_with_one_that_holds_it() -> None:
    def probe(n: int, answer: str) -> ProbeSpec:
        return ProbeSpec.model_validate({
            "id": f"p{n}", "kind": "recall", "question": f"Which name {n}?", "answer": answer,
            "after": "u000", "source": "tool",
            "role": {"kind": "listing", "phrase": f"the name {n}", "terms": ["set_output"],
                     "shape": "identifier"},
        })  # fmt: skip

    # Sorted by role, `cls.wrap_keys` and `cls.wrap_keys.add` would be neighbours: partners.
    values = ["cls.wrap_keys", "cls.wrap_keys.add", "get_config", "est_output_config"]
    pairs = entity_pairs(relabelled([probe(n, v) for n, v in enumerate(values)]))
    assert pairs["cls.wrap_keys"] != "cls.wrap_keys.add"
    assert all(a not in b and b not in a for a, b in pairs.items())


def _named(n: int, answer: str, shape: str, term: str) -> ProbeSpec:
    return ProbeSpec.model_validate({
        "id": f"p{n}", "kind": "recall", "question": f"Which value {n}?", "answer": answer,
        "after": "u000", "source": "tool",
        "role": {"kind": "listing", "phrase": f"the value {n}", "terms": [term], "shape": shape},
    })  # fmt: skip


def test_relabel_pairs_values_within_a_shape_only() -> None:
    # A command and a path on one README line, swapped, leave "the path on line 49" where it
    # was; a value with no partner of its own shape is not swapped at all.
    probes = [_named(1, "python3", "identifier", "README.md"),
              _named(2, "scripts/build_site.py", "file path", "README.md")]  # fmt: skip
    assert entity_pairs(relabelled(probes)) == {}
    probes.append(_named(3, "docs/index.md", "file path", "README.md"))
    assert entity_pairs(relabelled(probes)) == {
        "scripts/build_site.py": "docs/index.md", "docs/index.md": "scripts/build_site.py",
    }  # fmt: skip


def test_relabel_never_pairs_a_line_number_with_the_next_line() -> None:
    # Lines 1207 (blank, named by the `def` after it) and 1208 (the `def`) swapped leave the
    # listing saying "1207 def ...": the line before the `def` is found where it was.
    values = [("1207", "def load_rows"), ("1208", "def load_rows"), ("1206", "return rows"),
              ("1205", "if not rows:")]  # fmt: skip
    probes = [_named(n, v, "number", t) for n, (v, t) in enumerate(values)]
    pairs = entity_pairs(relabelled(probes))
    assert set(pairs) == {"1205", "1206", "1207", "1208"}
    assert all(abs(int(a) - int(b)) > 1 for a, b in pairs.items())


def test_relabel_pairs_a_value_with_one_of_another_role_where_one_is_left() -> None:
    # Two tasks' `agentId`s swapped with each other: a reader falling back on the newest
    # `agentId` in view answers one of the two questions right by chance.
    values = [("a1f3c9e", "agentId"), ("b7d2e40", "agentId"), ("TileNode.swift", "plan.md"),
              ("GridNode.swift", "plan.md")]  # fmt: skip
    probes = [_named(n, v, "identifier", t) for n, (v, t) in enumerate(values)]
    pairs = entity_pairs(relabelled(probes))
    assert pairs["a1f3c9e"] in {"TileNode.swift", "GridNode.swift"}
    assert pairs["b7d2e40"] in {"TileNode.swift", "GridNode.swift"}


def test_relabel_reaches_a_value_a_recorded_subagent_answered_with(tmp_path) -> None:
    # The subagent's recorded answer ("Invoice INV-5512 for ...") is literal text in the
    # scenario: a relabelled subagent would have answered with the swapped value, so the
    # parent's probe on it must not pass under `relabel`.

    fixture = Path(__file__).parents[1] / "sources" / "fixtures" / "claude_code_fix.jsonl"
    out = tmp_path / "fix.yaml"
    import_path(fixture, out, min_probes=1)
    scenario = load_scenario_file(out)
    assert any(p.answer == "INV-5512" and not p.carried for p in scenario.probes)
    results = asyncio.run(check_scenario(scenario, arms=("relabel",)))
    assert results[0].ok, results[0]


def test_relabel_cannot_move_a_value_its_question_names_part_of() -> None:
    from evals.gate.sanity import relabel_kept
    from evals.scenarios.base import Cue, Probe

    def listed(pid: str, name: str, path: str) -> Probe:
        return Probe(
            pid,
            "recall",
            f"What is the path of `{name}` that `find` listed?",
            path,
            Cue(patterns=()),
            role="listing",
            terms=(name,),
            shape="file path",
        )

    a = listed("a", "test_products.py", "sympy/concrete/tests/test_products.py")
    b = listed("b", "test_sums.py", "sympy/concrete/tests/test_sums.py")
    line = Probe(
        "c",
        "recall",
        "What is the line number of `def f` in `x.py`?",
        "567",
        Cue(patterns=()),
        role="listing",
        terms=("def f", "x.py"),
        shape="number",
    )
    entities = (a.answer, b.answer, "567", "912")
    # Both paths stay in the swapped listing, each under its own file name: a reader still
    # answers them; the line number is swapped for another and may not pass.
    assert relabel_kept([a, b, line], entities) == {"a", "b"}


def test_withholding_summaries_that_held_no_probe_value_cannot_fail() -> None:
    from types import SimpleNamespace

    from evals.gate.sanity import _judge
    from evals.scoring.records import ProbeResult, Replay

    def run(*verdicts: str, correct: bool = True) -> Replay:
        probes = [ProbeResult(f"p{k}", "recall", 0, "q", "a", "a", correct, "answered",
                              availability=v) for k, v in enumerate(verdicts)]  # fmt: skip
        return Replay(probes=probes, summaries=2)

    scenario: Any = SimpleNamespace(name="t")  # the withhold judgement reads only its name
    same = _judge(scenario, "withhold-summaries", run("in_view", "lost"), run("in_view", "lost"))
    assert same.bound is None and "held no probe" in same.note
    # A value the summary held is lost without it: the break must then lower accuracy.
    moved = _judge(scenario, "withhold-summaries", run("in_view", "in_view"),
                   run("in_view", "lost"))  # fmt: skip
    assert moved.bound is not None and not moved.ok
