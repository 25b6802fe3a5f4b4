"""A trace's compactions as the scenario file records them (`source.compactions`, one
`CompactionSpec` each): where each sits in the replay, what the model saw after it, and the
probes whose value it took out of the context.

A replay's window holds the trace's user turns and tool results with their recorded text (and
probe questions between them), so a compaction is anchored on the first user or tool message
after it, by the start of its text and its occurrence, and on how many messages before that
message it sat. A probe is `lost` by a compaction when it is asked after it and its answer was
in the context before it, but neither in its summary nor in the messages it kept (a probe
is placed by its turn and step, a compaction by the turn it fell in and the steps before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.scenarios.format import CompactionSpec
from evals.sources.trace import Compaction, Trace, TraceMessage

ANCHOR_CHARS = 200


def anchor_text(text: str) -> str:
    """The start of a message's text a compaction is found by."""
    return text.strip()[:ANCHOR_CHARS]


def compaction_specs(
    trace: Trace, turns: Sequence[dict[str, Any]], probes: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The `source.compactions` of the scenario made from `trace` (already redacted), whose
    plan has `turns` and which asks `probes`. A compaction after the last user or tool message
    changes nothing the replay sees and is left out."""
    order = {str(t["id"]): n for n, t in enumerate(turns)}
    specs = []
    for compaction in trace.compactions:
        anchor_at = next(
            (i for i in range(compaction.index, len(trace.messages))
             if trace.messages[i].role in ("user", "tool") and anchor_text(trace.messages[i].text)),
            None,
        )  # fmt: skip
        if anchor_at is None:
            continue
        anchor = anchor_text(trace.messages[anchor_at].text)
        occurrence = sum(
            m.role in ("user", "tool") and m.text.strip().startswith(anchor)
            for m in trace.messages[:anchor_at]
        )
        turn = max(sum(m.role == "user" for m in trace.messages[: compaction.index]) - 1, 0)
        opened = max((i for i, m in enumerate(trace.messages[: compaction.index])
                      if m.role == "user"), default=0)  # fmt: skip
        step = sum(m.role == "assistant" and bool(m.tool_calls)
                   for m in trace.messages[opened : compaction.index])  # fmt: skip
        turn_id = str(turns[min(turn, len(turns) - 1)]["id"]) if turns else ""
        spec = CompactionSpec(
            anchor=anchor,
            occurrence=occurrence,
            offset=anchor_at - compaction.index,
            kept=min(compaction.kept, compaction.index),
            summary=compaction.summary,
            tokens_before=compaction.tokens_before,
            tokens_after=compaction.tokens_after,
            trigger=compaction.trigger,
            turn=turn_id,
            lost=_lost(trace.messages, compaction, probes, order, (turn, step)),
        )
        specs.append(spec.model_dump(exclude_defaults=True))
    return specs


def _lost(
    messages: list[TraceMessage],
    compaction: Compaction,
    probes: Sequence[dict[str, Any]],
    order: dict[str, int],
    at: tuple[int, int],
) -> list[str]:
    """The probes asked after the compaction (turn, then step: a probe is asked before its
    `at_step`) whose answer it took out of the context."""
    cut = compaction.index - min(compaction.kept, compaction.index)
    before = "\n".join(_texts(messages[:cut]))
    kept = "\n".join([compaction.summary, *_texts(messages[cut : compaction.index])])
    lost = []
    for probe in probes:
        answer = str(probe.get("answer") or "")
        step = probe.get("at_step")
        asked = (order.get(str(probe.get("after")), len(order)),
                 step if isinstance(step, int) else 1 << 30)  # fmt: skip
        if answer and asked >= at and answer in before and answer not in kept:
            lost.append(str(probe["id"]))
    return lost


def _texts(messages: Sequence[TraceMessage]) -> list[str]:
    out = []
    for m in messages:
        out.append(m.text)
        out += [f"{c.arguments}" for c in m.tool_calls]
    return out
