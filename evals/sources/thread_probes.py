"""Probes derived from a recorded run, each with its provenance.

- recorded questions: a user question the agent answered from its context becomes a probe
  whose expected answer is the recorded one, asked at the same place.
- recall: a value the agent wrote down in a later turn than the one it read it in, or in a
  file, asked right after that later use and again at the end.
- decision: a value given as the reason of a decision the agent noted ("reason: ...").
- artifact: which file a note of the agent's was saved to; and a file check that each file
  it wrote still carries the read values it wrote there.
- continuation: the next step the agent announced at the end of a turn.

Every probe says where its answer came from (`provenance.from`: message and tool result) and
where the run used it (`provenance.used`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evals.sources.cues import Found, Source, find_cue, label_pattern, spans

if TYPE_CHECKING:
    from evals.sources.plan import NotedValue
    from evals.sources.recording import RecordedTurn, Recording

MAX_PROBES = 60
DONT_KNOW = re.compile(r"(?i)\b(i don't know|i do not know|not sure)\b")
_NEXT = re.compile(r"(?i)\bnext(?: step)?s?\s*[:,-]\s*([^.\n]+)")


def derive_probes(recording: Recording) -> list[dict[str, Any]]:
    """Probes in the order they are asked (recorded questions keep their place)."""
    probes = _recorded(recording)
    work = [t for t in recording.turns if not t.question]
    last = work[-1].id if work else "start"
    probes += _decisions(recording, last)
    probes += _artifacts(recording, last)
    probes += _continuations(work, recording.sources)
    probes += _recalls(recording, work, last)
    probes += _user_facts(recording, last)
    unique: dict[str, dict[str, Any]] = {}
    questions: set[str] = set()
    for p in probes:
        key = p["question"].strip().split("\n", 1)[0]
        if p["id"] in unique or (key in questions and "check" not in p):
            continue
        questions.add(key)
        unique[p["id"]] = p
    kept = list(unique.values())[:MAX_PROBES]
    order = {t.id: i for i, t in enumerate(work)}
    order["start"], order["end"] = -1, len(work)
    return sorted(kept, key=lambda p: order.get(p["after"], len(work)))


def _probe(
    id_: str, kind: str, question: str, answer: str, found: Found | None, after: str,
    source: str, used: list[str], **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    cue = found.cue if found is not None else None
    return {
        "id": id_,
        "kind": kind,
        "question": question,
        "answer": answer,
        "after": after,
        "cue": {
            "patterns": list(cue.patterns) if cue else [],
            "lookalikes": list(cue.lookalikes) if cue else [],
        },  # fmt: skip
        "distractors": list(found.distractors) if found else [],
        "source": source,
        "provenance": {"from": list(found.refs) if found else [], "used": used},
        **extra,
    }


def _source_kind(found: Found) -> str:
    for kind in ("tool", "user", "memory"):
        if kind in found.kinds:
            return kind
    return "agent"


def _recorded(recording: Recording) -> list[dict[str, Any]]:
    out = []
    previous = "start"
    for turn in recording.turns:
        if not turn.question:
            previous = turn.id
            continue
        answer = turn.final.strip()
        before = [s for s in recording.sources if s.turn < turn.index]
        found = None if DONT_KNOW.search(answer) else find_cue(answer, before)
        if found is None:
            turn.question = False  # nothing to score it against: replayed as it went
            previous = turn.id
            continue
        out.append(_probe(
            f"asked-{turn.index:03d}", _kind_of(turn.text), turn.text, answer, found, previous,
            _source_kind(found), [f"turn {turn.index} recorded answer"],
            recorded_answer=answer,
        ))  # fmt: skip
    return out


def _kind_of(question: str) -> str:
    q = question.lower()
    if "file" in q or "saved" in q or "report" in q and "which" in q:
        return "artifact"
    if "next step" in q or "next" in q and "what" in q:
        return "continuation"
    if q.startswith("why") or "reason" in q or "decid" in q:
        return "decision"
    return "recall"


def _asked(fact: NotedValue, sources: list[Source], turn: int) -> Found | None:
    """The fact's cue over everything read up to the turn it is asked after, if a label
    still tells it apart: a label unique when the fact was used may show another value
    in an article read later."""
    found = find_cue(fact.value, [s for s in sources if s.turn <= turn], fact.context)
    return found if found is not None and found.unique else None


def _decisions(recording: Recording, last: str) -> list[dict[str, Any]]:
    out = []
    end = len(recording.turns)
    for fact in recording.facts:
        found = _asked(fact, recording.sources, end) if fact.decision else None
        if found is None or fact.decision is None:
            continue
        head = re.sub(r"\{\{fact_\d+\}\}", "…", fact.decision).rstrip(" ;:,")
        question = f"What was the reason for this decision: “{head}”?"
        out.append(_probe(f"decision-{fact.slot}", "decision", question, fact.value, found,
                          last, _source_kind(found), _uses(fact)))  # fmt: skip
    return out


def _artifacts(recording: Recording, last: str) -> list[dict[str, Any]]:
    out = []
    facts = [f.value for f in recording.facts if f.found.unique]
    for path, (turn, note) in recording.notes.items():
        if path.startswith("/memories/"):
            continue
        start = note.find(path)
        made = label_pattern(path, note, start) if start >= 0 else None
        if made is not None:
            described = note.replace(path, "…").strip()
            found = Found(
                cue=_cue((made.pattern,)), distractors=(), refs=(f"turn {turn} note",),
                kinds=("agent",),
            )  # fmt: skip
            question = f"Which file did you write when you noted “{described}”?"
            out.append(_probe(f"file-{_slug(path)}", "artifact", question, path, found, last,
                              "agent", [f"turn {turn} write"]))  # fmt: skip
        content = recording.files.get(path, (turn, ""))[1]
        values = [v for v in facts if spans(v, content)][:12]
        if values:
            question = f"Does {path} still carry the values read for it?"
            out.append(_probe(
                f"check-{_slug(path)}", "artifact", question, "yes", None, "end", "tool",
                [f"turn {turn} write"], check={"path": path, "contains": values},
            ))  # fmt: skip
    return out


def _continuations(work: list[RecordedTurn], sources: list[Source]) -> list[dict[str, Any]]:
    out = []
    for turn in work:
        m = _NEXT.search(turn.final)
        if m is None:
            continue
        answer = m.group(1).strip()
        made = label_pattern(answer, turn.final, m.start(1))
        if made is None:
            continue
        found = Found(_cue((made.pattern,)), (), (f"turn {turn.index} reply",), ("agent",))
        question = f"Check-in after turn {turn.index + 1}: what is your next step?"
        out.append(_probe(f"next-{turn.index:03d}", "continuation", question, answer, found,
                          turn.id, "agent", [f"turn {turn.index} reply"]))  # fmt: skip
    return out


def _recalls(recording: Recording, work: list[RecordedTurn], last: str) -> list[dict[str, Any]]:
    out = []
    by_index = {t.index: t.id for t in work}
    end = len(recording.turns)
    for fact in recording.facts:
        tools = [r for r in fact.found.refs if " result " in r]
        if fact.decision or not fact.found.unique or all(" /skills/" in r for r in tools):
            continue  # a reason, a label that shows other values too, or the skill's wording
        labels = zip(fact.found.labels, fact.found.kinds, strict=False)
        first = fact.found.labels[0] if fact.found.labels else ""
        label = next((lb for lb, k in labels if k == "tool"), first)
        if not label:
            continue
        tool = next((r.split(" ")[2] for r in fact.found.refs if " result " in r), "a tool")
        question = f"What came after “{label}” in the {tool} result you read?"
        later = sorted({t for t, _ in fact.uses if t > fact.read_turn})
        soon = _asked(fact, recording.sources, later[0]) if later else None
        if soon is not None and later[0] in by_index:
            out.append(_probe(f"recall-{fact.slot}", "recall", question, fact.value, soon,
                              by_index[later[0]], "tool", _uses(fact)))  # fmt: skip
        found = _asked(fact, recording.sources, end)
        if found is not None:
            out.append(_probe(f"recall-{fact.slot}-end", "recall",
                              f"At the end of the run: {question[0].lower()}{question[1:]}",
                              fact.value, found, last, "tool", _uses(fact)))  # fmt: skip
    return out


MAX_USER_FACTS = 5


def _user_facts(recording: Recording, last: str) -> list[dict[str, Any]]:
    """What the user said that the agent wrote down in a later turn, asked at the end."""
    said = [s for s in recording.sources if s.kind == "user"]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for value, _turn, _where, context in recording.user_said:
        if value in seen or len(out) >= MAX_USER_FACTS:
            continue
        seen.add(value)
        found = find_cue(value, said, context)
        if found is None or not found.unique or not found.labels:
            continue
        question = f"At the end of the run: what came after “{found.labels[0]}” in what I told you?"
        used = [w for v, _, w, _ in recording.user_said if v == value]
        out.append(_probe(f"said-{len(out) + 1}", "recall", question, value, found, last,
                          "user", list(dict.fromkeys(used))))  # fmt: skip
    return out


def _uses(fact: NotedValue) -> list[str]:
    return list(dict.fromkeys(where for _, where in fact.uses))


def _cue(patterns: tuple[str, ...]) -> Any:
    from evals.simulated.plan import Cue

    return Cue(patterns)


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")
