"""The import-time leak check (issue #20, item 1): no probe's question or cue may contain a
probe's answer, its own or another's. A window that holds only the questions asked so far
would otherwise answer the probes whose answers they quote ("keep the export figure (849.7)
over the article's 957.5" gives away two recall answers), and a strategy that keeps nothing
but the questions would look like one that remembers.

Every import path runs its probes through `drop_leaks` before writing them.
"""

from __future__ import annotations

import re
from typing import Any

from evals.sources.cues import spans

_ESCAPE = re.compile(r"\\(.)")


def _texts(probe: dict[str, Any]) -> list[str]:
    """What a reader is shown or searches with: the question and the cue's patterns, both as
    written and with regex escapes undone (`849\\.7` quotes 849.7)."""
    cue = probe.get("cue") or {}
    patterns = [*cue.get("patterns", []), *cue.get("lookalikes", [])]
    return [probe["question"], *patterns, *(_ESCAPE.sub(r"\1", p) for p in patterns)]


def _asked(probe: dict[str, Any]) -> bool:
    # A file check is scored from the file, never asked: its question and its "yes" are
    # neither shown nor an answer a question could give away.
    return not probe.get("check")


def leaks(probes: list[dict[str, Any]], ordered: bool = False) -> dict[str, set[str]]:
    """For each asked probe whose question or cue contains an answer: the ids of the probes
    whose answers it contains (its own included). `ordered`: `probes` are in the order a
    replay asks them, and a question gives away only the answers of probes asked with it or
    after it (an earlier probe was answered before the question was in any window)."""
    asked = [p for p in probes if _asked(p)]
    answers = [(p["id"], str(p["answer"]).strip()) for p in asked]
    found: dict[str, set[str]] = {}
    for n, p in enumerate(asked):
        texts = _texts(p)
        for other, answer in answers[n if ordered else 0 :]:
            if answer and any(spans(answer, t) for t in texts):
                found.setdefault(p["id"], set()).add(other)
    return found


def drop_leaks(
    probes: list[dict[str, Any]], ordered: bool = False
) -> tuple[list[dict[str, Any]], int]:
    """`probes` without those whose question or cue contains a probe's answer, and how many
    were dropped. The probe giving the most answers away goes first (the later one on a
    tie); an answer that only a dropped probe had is no longer given away, so the others are
    checked again without it. `ordered` as for `leaks`."""
    kept = list(probes)
    dropped = 0
    while True:
        found = leaks(kept, ordered)
        if not found:
            return kept, dropped
        order = {p["id"]: i for i, p in enumerate(kept)}
        worst = max(found, key=lambda pid: (len(found[pid]), order[pid]))
        kept = [p for p in kept if p["id"] != worst]
        dropped += 1
