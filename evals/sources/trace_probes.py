"""Probes for an imported trace that need no model: what the run itself used.

A value (an id, a number, a path, a date, a name, a token of a command) that first appeared in
a tool result or a user message, and that the agent later used (as a call's argument, in a
command it ran, in a file it wrote, in its final answer), is a probe asked where it was used
(`after` = that turn, `at_step` = that step), with the value as its exact answer and a cue
found in the text that showed it (cues.py). The question names what the agent needed there
(the step, the tool and the argument), never the words around the value in its source, so
a grep for the question finds nothing.

Ground truth first: the arguments of a task's expected actions, the files its gold patch
touches and its expected answer are probed (`provenance.from: ground-truth`) where the run
used them (else at the end), then the run's own uses (`from: trace`). Each probe records its
source step, its use step and the tokens between them; at most `MAX_PROBES` per trace, spread
over the run, the longest distances first.
"""

from __future__ import annotations

from typing import Any

from evals.sources.cues import Found, find_cue, spans
from evals.sources.trace import GroundTruth
from evals.sources.values import common
from evals.sources.walk_record import ReplayPoint, Shown, Use, Walk

MAX_PROBES = 40
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def trace_probes(walk: Walk, truth: GroundTruth, cap: int = MAX_PROBES) -> list[dict[str, Any]]:
    """The probes of a walked trace (to_scenario.py), at most `cap`: ground truth first, so
    the leak check (leaks.py), which drops the later of two probes giving each other away,
    keeps the ground truth."""
    many_turns = len(walk.turns) > 1
    gt = _ground_truth(walk, truth, many_turns)
    taken = {(p["answer"], p["after"], p.get("at_step")) for p in gt}
    candidates: list[dict[str, Any]] = []
    seen: set[str] = set()
    for use in walk.uses:
        if use.value in seen:
            continue  # asked where it was first used; later uses may copy the agent's own words
        probe = _use_probe(walk, use, many_turns)
        if probe is None:
            continue
        seen.add(use.value)
        if (probe["answer"], probe["after"], probe["at_step"]) not in taken:
            candidates.append(probe)
    kept = gt[:cap] + _spread(candidates, cap - min(cap, len(gt)))
    _distinct_questions(kept)
    return kept


def in_asked_order(probes: list[dict[str, Any]], walk: Walk) -> list[dict[str, Any]]:
    """`probes` in the order a replay asks them."""
    order = {t["id"]: i for i, t in enumerate(walk.turns)}
    return sorted(probes, key=lambda p: (order.get(p["after"], len(order)), p.get("at_step", 0)))


def _spread(probes: list[dict[str, Any]], room: int) -> list[dict[str, Any]]:
    """At most `room` of `probes`: round-robin over the places they are asked (so every part
    of the run is probed), the longest distance between source and use first in each."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for p in sorted(probes, key=lambda p: -p["provenance"]["tokens_between"]):
        groups.setdefault((p["after"], p["at_step"]), []).append(p)
    queue = sorted(groups.values(), key=lambda g: -g[0]["provenance"]["tokens_between"])
    out: list[dict[str, Any]] = []
    while queue and len(out) < room:
        for group in list(queue):
            if len(out) >= room:
                break
            out.append(group.pop(0))
            if not group:
                queue.remove(group)
    return out


def _distinct_questions(probes: list[dict[str, Any]]) -> None:
    """A replay tells questions apart by their first line: a repeated one gets a number."""
    seen: dict[str, int] = {}
    for p in probes:
        key = p["question"].strip().split("\n", 1)[0]
        if key in seen:
            seen[key] += 1
            p["question"] = f"{p['question']} (question {seen[key]})"
        else:
            seen[key] = 1


def _where(point: ReplayPoint, many_turns: bool) -> str:
    step = f"Step {point.step + 1}"
    return f"{step} of turn {point.turn_index + 1}" if many_turns else step


def _which(use: Use) -> str:
    nth = f" (the {_ORDINALS[use.ordinal - 1]} in it)" if use.of > 1 and use.ordinal <= 8 else ""
    return f"which {use.shape}{nth}"


def question_for(use: Use, many_turns: bool) -> str:
    """What the agent needed at the point of use, named by the step, tool and argument."""
    where = _where(use.point, many_turns)
    if use.kind == "answer":
        turn = f" of turn {use.point.turn_index + 1}" if many_turns else ""
        return f"The final answer{turn} states a value read earlier: {_which(use)} is it?"
    if use.kind == "command":
        return f"{where} runs a `{use.tool}` command: {_which(use)} does it use?"
    if use.kind == "content":
        return (f"{where} writes a file with `{use.tool}`: {_which(use)} does the "
                f"`{use.argument}` it writes need?")  # fmt: skip
    if use.whole:
        return f"{where} calls `{use.tool}`: which `{use.argument}` does it need?"
    return f"{where} calls `{use.tool}`: {_which(use)} does its `{use.argument}` need?"


def _cue_for(walk: Walk, value: str, message: int, context: str) -> tuple[Found, Shown] | None:
    """The cue for `value` over what was shown before message `message`, and where it first
    appeared; None when nothing shown tells it apart (a reader could not answer it)."""
    shown = walk.first_shown(value, message)
    if shown is None or common(value, (s.text for s in walk.before(message))):
        return None
    found = find_cue(value, walk.before(message), context)
    if found is None or not found.unique:
        return None
    return found, shown


def _probe(
    id_: str, question: str, answer: str, point: ReplayPoint, found: Found, shown: Shown,
    origin: str, used: str,
) -> dict[str, Any]:  # fmt: skip
    return {
        "id": id_,
        "kind": "recall",
        "question": question,
        "answer": answer,
        "after": point.turn,
        "at_step": point.step,
        "cue": {"patterns": list(found.cue.patterns), "lookalikes": list(found.cue.lookalikes)},
        "distractors": list(found.distractors),
        "source": shown.source.kind,
        "provenance": {
            "from": origin,
            "source": shown.source.ref,
            "source_step": shown.step,
            "use_step": _step_number(point),
            "tokens_between": max(0, point.tokens - shown.tokens),
            "used": used,
        },
    }


def _step_number(point: ReplayPoint) -> str:
    return f"turn {point.turn_index + 1} step {point.step + 1}"


def _use_probe(walk: Walk, use: Use, many_turns: bool) -> dict[str, Any] | None:
    made = _cue_for(walk, use.value, use.point.message, use.context)
    if made is None:
        return None
    found, shown = made
    used = f"{use.kind} {use.tool or ''} {use.argument or ''}".split()
    return _probe(f"use-{walk.uses.index(use) + 1:03d}",
                  question_for(use, many_turns), use.value, use.point, found, shown, "trace",
                  " ".join(used))  # fmt: skip


def _end(walk: Walk) -> ReplayPoint:
    last = walk.turns[-1]
    return ReplayPoint(last["id"], len(walk.turns) - 1, len(last["steps"]), 1 << 30, walk.tokens)


def _ground_truth(walk: Walk, truth: GroundTruth, many_turns: bool) -> list[dict[str, Any]]:
    """Probes of what the task says was right, asked where the run used it (else at the end
    of the run), if what the run was shown tells the value apart."""
    out: list[dict[str, Any]] = []
    asked: set[tuple[str, str, str]] = set()

    def add(question: str, value: str, point: ReplayPoint, context: str, used: str) -> None:
        made = _cue_for(walk, value, point.message, context)
        if made is None:
            return
        found, shown = made
        out.append(_probe(f"gt-{len(out) + 1:03d}", question, value, point, found, shown,
                          "ground-truth", used))  # fmt: skip

    for action in truth.actions:
        calls = [(p, a) for p, n, a in walk.calls if n == action.name]
        for key, value in action.arguments.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                continue
            text = str(value)
            if (action.name, key, text) in asked or not text.strip():
                continue
            asked.add((action.name, key, text))
            point = next((p for p, a in calls if str(a.get(key)) == text),
                         calls[0][0] if calls else _end(walk))  # fmt: skip
            question = (f"{_where(point, many_turns)}: the task expects a `{action.name}` call "
                        f"here: which `{key}` should it get?")  # fmt: skip
            add(question, text, point, f"{action.name} {key}", f"expected {action.name} {key}")
    for n, path in enumerate(truth.patch_files, 1):
        point = next(
            (p for p, _, a in walk.calls if any(spans(path, str(v)) for v in a.values())),
            _end(walk),
        )
        nth = f" ({_ORDINALS[n - 1]} of {len(truth.patch_files)})" if len(truth.patch_files) > 1 \
            and n <= 8 else ""  # fmt: skip
        question = (f"{_where(point, many_turns)}: which file path does the task's fix "
                    f"change{nth}?")  # fmt: skip
        add(question, path, point, "file path patch", "gold patch file")
    if truth.answer and truth.answer.strip():
        point = _end(walk)
        add("The task's expected final answer: what is it?", truth.answer.strip(), point,
            "answer", "expected answer")  # fmt: skip
    return out
