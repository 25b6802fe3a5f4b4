"""Traces of one import that repeat another: every record a trace has, by the ids its format
gives records (trace.py `record_id`), is in another trace. Claude Code's `--resume` writes a
new session file that repeats the records of the one it resumes, then goes on; importing both
would count the same conversation, and its probes, twice. A subagent's own file
(`agent-<id>.jsonl`) whose run its session file holds too, as sidechain events, is the same
run twice: the session replays it as its Task call's subagent."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evals.sources.trace import Skipped, Trace


def _ids(trace: Trace) -> frozenset[str]:
    return frozenset(m.record_id for m in trace.messages if m.record_id)


def held_elsewhere(items: Iterable[Trace | Skipped]) -> dict[int, str]:
    """Why a trace is left out, by its position among the traces of `items`: all its records
    are in another trace, or in another trace's subagent runs, named with its file. The trace
    holding the most is kept, and of two with the same records the first; a trace whose
    format gives no ids is always kept. Only the ids are held, never a trace."""
    ids: list[frozenset[str]] = []  # each trace's own records
    holds: list[frozenset[str]] = []  # and its subagents'
    names: list[str] = []
    for item in items:
        if isinstance(item, Trace):
            ids.append(_ids(item))
            holds.append(ids[-1].union(*(_ids(s) for s in item.subagents)))
            names.append(f"trace {item.id} ({Path(item.source).name})")
    holders: dict[str, list[int]] = {}
    for i, held in enumerate(holds):
        for record in held:
            holders.setdefault(record, []).append(i)
    out: dict[int, str] = {}
    for i, held in enumerate(ids):
        if not held:
            continue
        # Any trace holding all of them holds this one record too: the only ones to compare.
        others = [j for j in holders[min(held)] if j != i and held <= holds[j]]
        if not others:
            continue
        best = max(others, key=lambda j: (len(holds[j]), -j))
        if holds[best] == held and best > i:
            continue  # the same records, and this trace came first: it is the one kept
        if held <= ids[best]:
            where = (f"are in {names[best]} (a resumed session repeats the one it resumes), "
                     "which is imported instead")  # fmt: skip
        else:
            where = (f"are a subagent's run in {names[best]}, which replays it as the subagent "
                     "of its Task call")  # fmt: skip
        out[i] = f"{names[i]}: all {len(held)} of its records {where}"
    return out
