"""The import-time leak check (#20 item 1) and probes asked inside a turn (`at_step`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from evals.scenarios.from_file import PAUSED, load_scenario_file, resume_text
from evals.sources.leaks import drop_leaks


def _probe(id_: str, question: str, answer: str, pattern: str = r"figure: (\S+)") -> dict:
    return {"id": id_, "kind": "recall", "question": question, "answer": answer,
            "cue": {"patterns": [pattern], "lookalikes": []}}  # fmt: skip


def test_a_decision_question_quoting_recall_answers_is_dropped_and_counted() -> None:
    probes = [
        _probe("recall-1", "What came after “export revenue” in the export result?", "849.7"),
        _probe("recall-2", "What came after “article revenue” in the article?", "957.5"),
        _probe(
            "decision-3",
            "What was the reason for this decision: “keep the export figure "
            "(849.7) over the article's 957.5”?",
            "the export is audited",
        ),  # fmt: skip
        _probe("recall-4", "Which rate?", "4.25", pattern=r"rate 4\.25 \((\S+)\)"),
    ]
    kept, dropped = drop_leaks(probes)
    assert [p["id"] for p in kept] == ["recall-1", "recall-2"]
    assert dropped == 2  # the decision quoting two answers, the cue holding its own answer


def test_clean_probes_are_all_kept() -> None:
    probes = [_probe("a", "Which figure did step 3 need?", "849.7"),
              _probe("b", "Which path did step 5 need?", "/src/app.py")]  # fmt: skip
    assert drop_leaks(probes) == (probes, 0)


def test_a_probe_at_a_step_is_asked_inside_the_turn_before_that_step(tmp_path: Path) -> None:
    doc = {
        "format": "ctxlab-scenario/1", "name": "mid-turn", "model": {"window": 8000},
        "tools": [{"name": "lookup"}],
        "turns": [{"id": "t1", "text": "Find the order.", "final": "Order found.", "steps": [
            {"calls": [{"tool": "lookup", "arguments": {"q": "a"}}]},
            {"calls": [{"tool": "lookup", "arguments": {"q": "b"}}]},
        ]}],
        "replies": [{"tool": "lookup", "arguments": {"q": "a"}, "content": "order id: ORD-991"},
                    {"tool": "lookup", "arguments": {"q": "b"}, "content": "ok"}],
        "probes": [{"id": "p1", "kind": "recall", "question": "Which order id does step 2 need?",
                    "answer": "ORD-991", "after": "t1", "at_step": 1,
                    "cue": {"patterns": [r"order id: (\S+)"]}}],
    }  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    scenario = load_scenario_file(path)
    texts = [t.text for t in scenario.sessions[0].turns]
    assert texts == ["Find the order.", "Which order id does step 2 need?", resume_text("t1", 1)]
    first, _, rest = scenario.plan.turns
    assert len(first.steps) == 1 and first.final == PAUSED
    assert len(rest.steps) == 1 and rest.final == "Order found."


def test_a_step_past_the_turn_is_refused(tmp_path: Path) -> None:
    import pytest

    from evals.errors import ScenarioFileError

    doc = {"format": "ctxlab-scenario/1", "name": "bad", "model": {"window": 8000},
           "turns": [{"id": "t1", "text": "Go."}],
           "probes": [{"id": "p", "kind": "recall", "question": "Q?", "answer": "x",
                       "after": "t1", "at_step": 3, "cue": {"patterns": ["(x)"]}}]}  # fmt: skip
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioFileError, match="at_step: 3 is past turn"):
        load_scenario_file(path)
