"""Probes for an imported trace that need no model: what the run itself used, asked by role.

A value (an id, a number, a path, a date, a name) that a tool result or a user message showed
under a role (roles.py: a JSON key path and its entity, a line of a listing, the command that
printed it), and that the agent later used (as a call's argument, in a command it ran, in a
file it wrote, in its final answer), is a probe asked where it was used (`after` = that turn,
`at_step` = that step). Its question states the role ("What is the `id` of the
`payment_methods` entry whose `source` is `credit_card` in the `get_user_details` result?"),
so a model could answer it from its window; never the value's place in a later answer.

Only values that pass the hygiene rules (hygiene.py) are probed, and each rejection is
counted by reason. A probe whose value the recorded agent restated between its source and its
use, or the recorded user wrote anywhere before its use, is `carried`: it stays in view
whatever a strategy did to the source.

Ground truth first: the arguments of a task's expected actions and the files its gold patch
touches are probed (`provenance.from: ground-truth`) where the run used them (else at the
end), then the run's own uses (`from: trace`). At most `MAX_PROBES` per trace, spread over the
run, the longest distances first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from evals.simulated.sightings import BY_ROLE
from evals.sources.cues import find_cue, spans
from evals.sources.hygiene import MIN_TOKENS_BETWEEN, Rejections, rejection, shape_refusal
from evals.sources.readable import unreadable
from evals.sources.roles import result_body, role_of
from evals.sources.shelf import holding
from evals.sources.text_roles import noun, only_of_shape
from evals.sources.trace import GroundTruth
from evals.sources.values import common, shape_of
from evals.sources.walk_record import ReplayPoint, Shown, Walk

MAX_PROBES = 40


def trace_probes(
    walk: Walk, truth: GroundTruth, cap: int = MAX_PROBES
) -> tuple[list[dict[str, Any]], Rejections]:
    """The probes of a walked trace (to_scenario.py), at most `cap`, and the candidates
    rejected by reason: ground truth first, so the leak check (leaks.py), which drops the
    later of two probes giving each other away, keeps the ground truth."""
    rejected = Rejections()
    again = _tools_called_again(walk)
    gt = _ground_truth(walk, truth, again, rejected)
    taken = {p["answer"] for p in gt}
    candidates: list[dict[str, Any]] = []
    why: dict[str, str] = {}
    for n, use in enumerate(walk.uses, 1):
        if use.value in taken:
            continue  # asked where it was first used; later uses may copy the agent's own words
        named = use.argument if use.kind == "argument" and use.whole else None
        made = _probe(walk, use.value, use.point, named, again, f"use-{n:03d}", "trace",
                      _used(use))  # fmt: skip
        if isinstance(made, str):
            why.setdefault(use.value, made)
            continue
        taken.add(use.value)
        why.pop(use.value, None)
        candidates.append(made)
    rejected.candidates += len(candidates) + len(why)
    rejected.update(why.values())
    candidates = _unambiguous(candidates, rejected)
    room = cap - min(cap, len(gt))
    kept = gt[:cap] + _spread(candidates, room)
    rejected["over_cap"] += len(gt) + len(candidates) - len(kept)
    _distinct_questions(kept)
    return kept, rejected


def in_asked_order(probes: list[dict[str, Any]], walk: Walk) -> list[dict[str, Any]]:
    """`probes` in the order a replay asks them. Of those asked at one place, a probe whose
    answer another's question names (a flight number naming an entry) is asked first, so
    that question gives nothing away (leaks.py, `ordered`)."""
    order = {t["id"]: i for i, t in enumerate(walk.turns)}

    def named(p: dict[str, Any]) -> bool:
        return any(q is not p and spans(p["answer"], q["question"]) for q in probes
                   if (q["after"], q.get("at_step")) == (p["after"], p.get("at_step")))  # fmt: skip

    return sorted(probes, key=lambda p: (order.get(p["after"], len(order)), p.get("at_step", 0),
                                         not named(p)))  # fmt: skip


def drop_leaking_cues(probes: list[dict[str, Any]]) -> None:
    """A cue is a convenience of the simulated reader; the role is what a probe is asked by.
    A cue whose patterns hold a probe's answer (a neighbour in a list) is dropped, not the
    probe."""
    answers = [str(p["answer"]).strip() for p in probes]
    for p in probes:
        patterns = [*p.get("cue", {}).get("patterns", []), *p.get("cue", {}).get("lookalikes", [])]
        texts = [*patterns, *(re.sub(r"\\(.)", r"\1", t) for t in patterns)]
        if any(a and spans(a, t) for a in answers for t in texts):
            p.pop("cue", None)
            p.pop("distractors", None)


def _used(use: Any) -> str:
    return " ".join(f"{use.kind} {use.tool or ''} {use.argument or ''}".split())


def _tools_called_again(walk: Walk) -> set[str]:
    """Tools the run called with more than one set of arguments: a role in their result must
    say which call's result it means."""
    seen: dict[str, set[str]] = {}
    for s in walk.shown:
        if s.call is not None:
            seen.setdefault(s.call.tool, set()).add(repr(sorted(s.call.arguments.items())))
    return {tool for tool, args in seen.items() if len(args) > 1}


def _sightings(walk: Walk, value: str, message: int) -> Iterator[Shown]:
    """The texts that showed `value` before message `message`, while the agent had not yet
    written it (after that, a sighting may echo the agent's own words)."""
    for shown in walk.showing(value, message):
        if walk.wrote(value, shown.message):
            return
        yield shown


def _probe(
    walk: Walk, value: str, point: ReplayPoint, argument: str | None, again: set[str], id_: str,
    origin: str, used: str, fallback: dict[str, Any] | None = None,
) -> dict[str, Any] | str:  # fmt: skip
    """The probe of `value` used at `point`, or why there is none (a key of hygiene.REASONS).
    `fallback` is the role to ask by when no source shows the value under one (ground truth)."""
    if value in walk.system:
        return "in_prompt"
    bad = rejection(value)
    if bad:
        return bad
    before = walk.before(point.message)
    if common(value, (s.text for s in holding(before, value))):
        return "common"
    role, shown, refused, read_from = None, None, None, None
    for sighting in _sightings(walk, value, point.message):
        shown = shown or sighting
        call = sighting.call
        if call is not None and call.tool in again:
            call = replace(call, again=True)
        role = role_of(value, sighting.source.text, sighting.source.kind, call, argument)
        if role is not None:
            shown, read_from = sighting, call
            break
        refused = refused or _refused(value, sighting)
    if role is None:
        if fallback is None or shown is None:
            return refused or "no_role"
        role = fallback
    elif role["phrase"] == f"the `{argument}` the user gave" and shown is not None and \
            _rivals(walk, value, argument, shown.source.text):  # fmt: skip
        return "ambiguous"
    elif role["phrase"] == f"the {noun(value)} the user gave" and \
            _user_gave_others(walk, value, point.message):  # fmt: skip
        return "shape_only"
    # A role of command_roles.py brings a cue built from what names the value (a key, a label,
    # the line next to it), never from its neighbours (which another probe may ask for).
    role = dict(role)
    own = role.pop("cue", None)
    assert shown is not None
    steps = walk.steps_between(shown.message, point.message)
    tokens = max(0, point.tokens - shown.tokens)
    if steps == 0 and tokens < MIN_TOKENS_BETWEEN:
        return "nothing_between"
    carried = _carried(walk, value, shown.message, point.message)
    found = find_cue(value, before, " ".join(role["terms"]), distractors="unique")
    cue = {"patterns": list(found.cue.patterns), "lookalikes": list(found.cue.lookalikes)} \
        if found is not None and found.unique else {}  # fmt: skip
    if own:
        cue, found = {"patterns": [own], "lookalikes": []}, None
    if not cue and role["kind"] in BY_ROLE:
        # Without a cue the reader has the role alone to find the value by: a role that
        # names another value of the source too, or none whole, asks what no reader can say.
        why = unreadable(value, shown.source.text, read_from, role)
        if why:
            return why
    probe: dict[str, Any] = {
        "id": id_,
        "kind": "recall",
        "question": f"What is {role['phrase']}?",
        "answer": value,
        "after": point.turn,
        "at_step": point.step,
        "source": shown.source.kind,
        "role": role,
        "carried": carried,
        "provenance": {
            "from": origin,
            "source": shown.source.ref,
            "source_step": shown.step,
            "use_step": f"turn {point.turn_index + 1} step {point.step + 1}",
            "steps_between": steps,
            "tokens_between": tokens,
            "used": used,
        },
    }
    if cue:
        probe["cue"] = cue
        probe["distractors"] = list(found.distractors) if found is not None else []
    return probe


def _rivals(walk: Walk, value: str, argument: str | None, text: str) -> bool:
    """Whether the run passed another value the user's message `text` shows as the same whole
    `argument`: "the `company` the user gave" then names each of them (a value rejected for
    itself, a word, is a rival all the same)."""
    return any(u.argument == argument and u.whole and u.kind == "argument" and u.value != value
               and spans(u.value, text) for u in walk.uses)  # fmt: skip


def _user_gave_others(walk: Walk, value: str, message: int) -> bool:
    """Whether the user wrote another value of `value`'s shape before message `message`:
    "the id the user gave" then names none of them, whichever message held one alone."""
    said = "\n".join(s.source.text for s in walk.shown
                     if s.source.kind == "user" and s.message < message)  # fmt: skip
    return not only_of_shape(value, said)


def _refused(value: str, sighting: Shown) -> str | None:
    """Why `value`, the one value of its shape in the text `sighting` shows, is not named by
    that shape (hygiene.shape_refusal: `w/o` is no path), else None: counted apart from
    `no_role`."""
    user = sighting.source.kind == "user"
    text = sighting.source.text if user else result_body(sighting.source.text)
    return shape_refusal(value, user) if only_of_shape(value, text) else None


def _carried(walk: Walk, value: str, source: int, use: int) -> bool:
    """The recorded agent wrote `value` between its source and its use, or the recorded user
    wrote it before its use: before the source too ("my card ending in 7334", then the tool
    shows it), the user's words keep it in view whatever befalls the tool result."""
    if walk.wrote(value, use, source):
        return True
    return any(s.source.kind == "user" and s.message != source for s in walk.showing(value, use))


def _unambiguous(probes: list[dict[str, Any]], rejected: Rejections) -> list[dict[str, Any]]:
    """Without the probes whose role names more than one value ("the name the user gave",
    twice, of two names): a model could not tell which is meant."""
    answers: dict[str, set[str]] = {}
    for p in probes:
        answers.setdefault(p["question"], set()).add(p["answer"])
    kept = [p for p in probes if len(answers[p["question"]]) == 1]
    rejected["ambiguous"] += len(probes) - len(kept)
    return kept


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


def _end(walk: Walk) -> ReplayPoint:
    last = walk.turns[-1]
    return ReplayPoint(last["id"], len(walk.turns) - 1, len(last["steps"]), 1 << 30, walk.tokens)


def _leaves(value: Any, key: str) -> Iterator[tuple[str, str]]:
    """The scalar arguments of an expected action, nested ones named by their own key."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield key, str(value)


def _ground_truth(
    walk: Walk, truth: GroundTruth, again: set[str], rejected: Rejections
) -> list[dict[str, Any]]:
    """Probes of what the task says was right, asked where the run used it (else at the end
    of the run), when what the run was shown holds the value."""
    out: list[dict[str, Any]] = []
    asked: set[str] = set()

    def add(value: str, point: ReplayPoint, fallback: dict[str, Any], used: str) -> None:
        if value in asked or not value.strip() or next(_sightings(walk, value, point.message),
                                                       None) is None:  # fmt: skip
            return  # asked, or never shown before its use: nothing to remember
        asked.add(value)
        rejected.candidates += 1
        made = _probe(walk, value, point, None, again, f"gt-{len(out) + 1:03d}", "ground-truth",
                      used, fallback)  # fmt: skip
        if isinstance(made, str):
            rejected[made] += 1
        else:
            out.append(made)

    for action in truth.actions:
        calls = [(p, a) for p, n, a in walk.calls if n == action.name]
        for key, text in _leaves(action.arguments, ""):
            point = next((p for p, a in calls if spans(text, str(a.get(key, a)))),
                         calls[0][0] if calls else _end(walk))  # fmt: skip
            role = {
                "kind": "truth",
                "terms": [key, action.name],
                "shape": shape_of(text),
                "phrase": f"the `{key}` the task expects its `{action.name}` call to get",
            }
            add(text, point, role, f"expected {action.name} {key}")
    if len(truth.patch_files) == 1:
        path = truth.patch_files[0]
        point = next(
            (p for p, _, a in walk.calls if any(spans(path, str(v)) for v in a.values())),
            _end(walk),
        )
        role = {
            "kind": "truth",
            "terms": [path.rsplit("/", 1)[-1]],
            "shape": "file path",
            "phrase": "the file the task's fix changes",
        }
        add(path, point, role, "gold patch file")
    return out
