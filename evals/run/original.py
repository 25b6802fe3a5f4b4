"""The `original` arm's middleware: show the model what the recorded harness showed it.

An imported trace keeps each compaction its harness made (`Scenario.compactions`, from
`source.compactions`; evals/sources/compactions.py). Before each model call this finds the
newest compaction whose anchor (the first user turn or tool result after it) is in the
window, and replaces everything before it with the harness's summary and the messages it kept
verbatim: the context the harness itself sent from then on. Before the first compaction, and
in a trace whose harness never compacted, the window is left whole. Nothing is persisted: the
transcript keeps everything, this only rewrites each request, with the same summary message
every call so the provider's prefix cache sees the same prefix (and a compaction's cache
rewrite is billed where the harness paid it).
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.run.replay import MiddlewareFactory
from evals.scenarios.base import Scenario
from evals.scenarios.format import CompactionSpec
from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest

SUMMARY_KIND = "summary"


class OriginalContext(Middleware):
    """Narrows each request to what the recorded harness sent (see the module docstring)."""

    name = "original-context"

    def __init__(self, compactions: Sequence[CompactionSpec]) -> None:
        self.compactions = tuple(compactions)
        self._summaries: dict[int, Message] = {}
        self.applied: set[int] = set()  # the compactions a request was rewritten by

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        found = self.rewrite(request.messages)
        if found is None:
            return await handler(request)
        return await handler(request.override(messages=found))

    def rewrite(self, messages: Sequence[Message]) -> list[Message] | None:
        """`messages` as the harness's newest compaction in them left them, or None."""
        for n in range(len(self.compactions) - 1, -1, -1):
            at = self._anchor(messages, self.compactions[n])
            if at is None:
                continue
            spec = self.compactions[n]
            cut = max(at - spec.offset, 0)
            start = max(cut - spec.kept, 0)
            while start < len(messages) and messages[start].role == "tool":
                start += 1  # a result without its call: the call went with the summary
            self.applied.add(n)
            return [self._summary(n), *messages[start:]]
        return None

    def _anchor(self, messages: Sequence[Message], spec: CompactionSpec) -> int | None:
        """Where the `occurrence`-th user or tool message starting with the anchor is."""
        seen = 0
        for i, message in enumerate(messages):
            if message.role not in ("user", "tool") or message.kind != "message":
                continue
            if message.content.strip().startswith(spec.anchor):
                if seen == spec.occurrence:
                    return i
                seen += 1
        return None

    def _summary(self, n: int) -> Message:
        if n not in self._summaries:
            text = self.compactions[n].summary or "[The harness compacted the conversation.]"
            self._summaries[n] = Message("user", text, kind=SUMMARY_KIND)
        return self._summaries[n]


def original_middleware(scenario: Scenario) -> MiddlewareFactory:
    """A factory of `OriginalContext` over `scenario`'s recorded compactions."""
    return lambda: [OriginalContext(scenario.compactions)]
