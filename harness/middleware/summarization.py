"""Summarization: past a threshold, the older messages become one summary, and nothing is lost.

Before every model call the whole request is measured: system prompt (with the sections outer
middleware added), tool schemas, messages, plus what middleware further in added last time (see
`guard`). When a trigger fires:
1. the window is cut where no tool call is separated from its result, keeping the newest
   messages verbatim (default: 10% of the model's window);
2. the older messages are appended to `/conversation_history/{thread}.md`, one `## Cycle N`
   heading per summary, where the model can page through them with `read_file`;
3. a summarizer call (the agent's model, or a cheaper one) condenses them, merged with the
   previous summary; its input is bounded by its own window, in several calls if need be;
4. the window becomes [summary, *kept] (persisted) and the call goes on with it.

Triggers: a fraction of the model's window (default 0.85), a token count, a message count, or
several of these (`trigger_mode` "any" or "all"); a change of topic (`topic_shift`); the model
itself (`compact_tool=True` adds `compact_conversation`); and a provider `ContextOverflowError`,
after which the call is retried once. With an unknown window, a fraction trigger fires at
`fallback_trigger_tokens` (170,000) and a fraction keep keeps `fallback_keep_messages` (6).

Records: a `summaries` row and an event per cycle. The summarizer call itself (a `model` step
of the run, retried and journaled like any model call) is in `summarizer`; the history file in
`history`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeGuard

from harness.errors import ContextOverflowError
from harness.messages import Message, ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.cutoff import (
    Threshold,
    ThresholdSpec,
    safe_at_or_after,
    safe_at_or_before,
    safe_cuts,
    tail_cut,
)
from harness.middleware.guard import learn_inner, with_inner
from harness.middleware.history import HISTORY_DIR, history_path, render_message, write_cycle
from harness.middleware.params import flag, number, threshold, whole
from harness.middleware.summarizer import (
    DEFAULT_PROMPT,
    SUMMARIZER_SUFFIX,
    SUMMARY_REQUEST,
    Summarizer,
)
from harness.middleware.topic import LexicalTopicShift, TopicDetector
from harness.models.base import Model
from harness.store import now
from harness.tools import Tool, ToolContext, tool

if TYPE_CHECKING:
    from harness.state import RunState

__all__ = [
    "COMPACT_RESULT",
    "DEFAULT_PROMPT",
    "HISTORY_DIR",
    "SUMMARIZER_SUFFIX",
    "SUMMARY_MESSAGE",
    "SUMMARY_REQUEST",
    "Summarization",
    "render_message",
    "summary_text",
]

SUMMARY_MESSAGE = """\
[Summary of the earlier conversation, cycle {cycle}]
The messages before this point were summarized to free context space. Their full text is \
saved in {path} (one section per summary cycle): read it with read_file, paging with offset \
and limit, when you need exact wording or a detail the summary leaves out.

<summary>
{summary}
</summary>"""

COMPACT_RESULT = (
    "Compaction scheduled: before your next turn the older part of this conversation will be "
    "replaced by a summary (its full text stays readable in /conversation_history/)."
)


class Summarization(Middleware):
    """Condenses older messages into a summary when a trigger fires (see the module doc)."""

    name = "summarize"

    def __init__(
        self,
        *,
        model: str | Model | None = None,
        trigger: ThresholdSpec | Sequence[ThresholdSpec] = 0.85,
        trigger_mode: Literal["any", "all"] = "any",
        keep: ThresholdSpec = 0.10,
        fallback_trigger_tokens: int = 170_000,
        fallback_keep_messages: int = 6,
        prompt: str = DEFAULT_PROMPT,
        summary_max_tokens: int = 4_000,
        summarizer_headroom: float = 0.1,
        topic_shift: float | bool | TopicDetector | None = None,
        topic_min_tokens: int = 2_000,
        compact_tool: bool = False,
        retry_on_overflow: bool = True,
        history_dir: str = HISTORY_DIR,
    ) -> None:
        """Parameters:
        model: the summarizer, as a spec ("openai:...") or a `Model`; None uses the agent's.
        trigger: when to summarize: a fraction of the model's window (0.85), tokens
            (120_000), ("messages", N), or a list of these combined by `trigger_mode`.
        trigger_mode: "any" (default) fires when one trigger is met, "all" when all are.
        keep: what stays verbatim: a fraction of the window (0.10), tokens, or
            ("messages", N). The cut moves so no tool call is separated from its result.
        fallback_trigger_tokens, fallback_keep_messages: used instead of fractions when the
            model's window is unknown (170,000 tokens; 6 messages).
        prompt: the summarizer's instructions (default `DEFAULT_PROMPT`).
        summary_max_tokens: output cap of a summarizer call (at most a quarter of its window).
        summarizer_headroom: share of the summarizer's window left unused, because our token
            count can fall short of the provider's (0.1). A summarizer whose window is unknown
            is taken to have `fallback_trigger_tokens`.
        topic_shift: also summarize when a new user message changes the subject: a
            `TopicDetector`, True for `LexicalTopicShift()`, or a float, the `min_overlap` of
            a `LexicalTopicShift`. Off by default.
        topic_min_tokens: a topic change summarizes only windows at least this large.
        compact_tool: give the model a `compact_conversation` tool to ask for a summary.
        retry_on_overflow: on `ContextOverflowError`, summarize and retry the call once.
        history_dir: where the per-thread history files go.
        """
        specs: Sequence[object] = trigger if _is_threshold_list(trigger) else [trigger]
        self.triggers = tuple(threshold("summarize.trigger", t) for t in specs)
        if trigger_mode not in ("any", "all"):
            raise ValueError(f"summarize.trigger_mode must be 'any' or 'all', got {trigger_mode!r}")
        self.trigger_mode = trigger_mode
        self.keep = threshold("summarize.keep", keep)
        self.fallback_trigger_tokens = whole(
            "summarize.fallback_trigger_tokens", fallback_trigger_tokens, minimum=1
        )
        self.fallback_keep_messages = whole(
            "summarize.fallback_keep_messages", fallback_keep_messages
        )
        self.summarizer = Summarizer(
            model,
            prompt=prompt,
            max_tokens=whole("summarize.summary_max_tokens", summary_max_tokens, minimum=1),
            headroom=summarizer_headroom,
            fallback_window=self.fallback_trigger_tokens,
        )
        self.topic = _detector(topic_shift)
        self.topic_min_tokens = whole("summarize.topic_min_tokens", topic_min_tokens)
        self.retry_on_overflow = flag("summarize.retry_on_overflow", retry_on_overflow)
        self.history_dir = history_dir.rstrip("/")
        self.tools = (self._compact_tool(),) if flag("summarize.compact_tool", compact_tool) else ()

    # -- the hook --------------------------------------------------------------------------

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        state = request.state
        tokens = with_inner(state, self.name, request.count_tokens())
        reason = self._due(request, tokens)
        if reason:
            request = await self._compact(request, reason, tokens)
        passed = request.count_tokens()
        try:
            response = await handler(request)
        except ContextOverflowError as exc:
            learn_inner(state, self.name, passed)
            if not self.retry_on_overflow:
                raise
            before = exc.tokens or with_inner(state, self.name, passed)
            compacted = await self._compact(request, "overflow", before)
            if compacted is request:
                raise
            request, passed = compacted, compacted.count_tokens()
            response = await handler(request)  # a second overflow is the caller's to see
        learn_inner(state, self.name, passed)
        return response

    def _due(self, request: ModelRequest, tokens: int) -> str | None:
        """Why to summarize now, or None."""
        state = request.state
        mine = state.scratch.setdefault(self.name, {})
        if mine.pop("requested", False):
            return "requested"
        window = request.context_window
        hits = [self._reached(t, window, tokens, len(request.messages)) for t in self.triggers]
        if any(hits) if self.trigger_mode == "any" else all(hits):
            met = [str(t) for t, hit in zip(self.triggers, hits, strict=True) if hit]
            return "threshold " + "+".join(met)
        if self.topic is not None and self._topic_changed(state, request.messages):
            return "topic"
        return None

    def _reached(self, t: Threshold, window: int | None, tokens: int, messages: int) -> bool:
        if t.kind == "messages":
            return messages >= t.value
        if t.kind == "fraction" and window is None:
            return tokens >= self.fallback_trigger_tokens
        return tokens >= (t.tokens(window, self.fallback_trigger_tokens) or 0)

    def _topic_changed(self, state: RunState, messages: Sequence[Message]) -> bool:
        latest = messages[-1] if messages else None
        if latest is None or latest.role != "user" or latest.kind != "message":
            return False
        mine = state.scratch[self.name]
        if mine.get("topic_checked") == latest.id:
            return False  # each new user message is judged once
        mine["topic_checked"] = latest.id
        earlier = messages[:-1]
        if state.counter.count_messages(earlier) < self.topic_min_tokens:
            return False
        assert self.topic is not None
        return self.topic.is_new_topic(earlier, latest)

    # -- where to cut ----------------------------------------------------------------------

    def _cut(self, state: RunState, messages: Sequence[Message], reason: str) -> int:
        """How many leading messages to summarize."""
        n = len(messages)
        if reason == "topic":
            return n - 1  # the new subject's opening message starts the kept part
        ok = safe_cuts(messages)
        # The latest exchange (the user's message, or the tool results just returned) stays
        # verbatim: it is what the model must act on now. Only an overflow summarizes it too.
        cut = min(self._keep_cut(state, messages, ok), safe_at_or_before(ok, max(n - 1, 0)))
        if reason == "overflow" and not _has_new(messages[:cut]):
            return n
        return cut

    def _keep_cut(self, state: RunState, messages: Sequence[Message], ok: list[bool]) -> int:
        n = len(messages)
        window = state.config.context_window
        keep = self.keep
        if keep.kind == "fraction" and window is None:
            keep = Threshold("messages", self.fallback_keep_messages)
        if keep.kind == "messages":
            target = max(n - int(keep.value), 0)
            cut = safe_at_or_before(ok, target)
            return cut or safe_at_or_after(ok, target)
        budget = keep.tokens(window, self.fallback_trigger_tokens) or 0
        return tail_cut([state.counter.count_message(m) for m in messages], ok, budget)

    # -- compaction ------------------------------------------------------------------------

    async def _compact(self, request: ModelRequest, reason: str, tokens: int) -> ModelRequest:
        state = request.state
        cut = self._cut(state, request.messages, reason)
        if not _has_new(request.messages[:cut]):
            state.event(
                self.name, "wrap_model_call", "skipped", tokens_before=tokens,
                detail={"reason": reason, "why": "nothing older than the kept messages"},
            )  # fmt: skip
            return request
        return await state.run_step("summarize", self._summarize, request, cut, reason, tokens)

    async def _summarize(
        self, request: ModelRequest, cut: int, reason: str, tokens: int
    ) -> ModelRequest:
        start = time.perf_counter()
        state = request.state
        older, kept = request.messages[:cut], request.messages[cut:]
        previous = "\n\n".join(summary_text(m) for m in older if m.kind == "summary")
        fresh = [m for m in older if m.kind != "summary"]
        cycle = self._next_cycle(state)
        path = history_path(self.history_dir, state.thread_id)
        first_seq, last_seq = write_cycle(state, path, cycle, fresh, reason)
        condensed = await self.summarizer.condense(state, previous, fresh, path)
        text = condensed.text
        summary = Message(
            role="user",
            content=SUMMARY_MESSAGE.format(cycle=cycle, path=path, summary=text),
            kind="summary",
            meta={"cycle": cycle, "history_path": path},
        )
        window = [summary, *kept]
        state.replace_window(window, reason="summarize")
        state.scratch[self.name]["cycle"] = cycle
        edited = request.override(messages=window, messages_tokens=state.window_tokens)
        after = with_inner(state, self.name, edited.count_tokens())
        summary_tokens = state.counter.count_text(text)
        state.add_row(
            "summaries",
            (state.run_id, state.thread_id, cycle, state.step, first_seq, last_seq,
             json.dumps([m.id for m in fresh]), tokens, after, summary_tokens, condensed.model.name,
             path,
             text, now()),
        )  # fmt: skip
        state.event(
            self.name, "wrap_model_call", "summarized",
            tokens_before=tokens, tokens_after=after,
            detail={
                "reason": reason, "cycle": cycle, "summarized": len(fresh), "kept": len(kept),
                "history_path": path, "paths_written": [path], "summary_tokens": summary_tokens,
                "summarizer_calls": condensed.calls, "model": condensed.model.name,
            },
            ms=state.elapsed_ms(start),
        )  # fmt: skip
        return edited

    def _next_cycle(self, state: RunState) -> int:
        """One past the last cycle that produced a summary. The counter moves only once a
        cycle's summary replaced the window, so an attempt that failed half-way is retried
        under the same number (and so rewrites, not repeats, its history section)."""
        mine = state.scratch[self.name]
        if "cycle" not in mine:
            # A continued thread numbers on from its earlier runs' summaries.
            mine["cycle"] = state.store.summaries.last_cycle(state.thread_id)
        return int(mine["cycle"]) + 1

    # -- the compact_conversation tool -----------------------------------------------------

    def _compact_tool(self) -> Tool:
        owner = self.name

        async def compact_conversation(ctx: ToolContext) -> str:
            """Free context space: before your next turn, the older part of this conversation
            is replaced by a summary, and its full text is saved to a file you can read. Use
            it when the conversation is long and its older details are no longer needed
            verbatim, for example between two phases of a task."""
            ctx.state.scratch.setdefault(owner, {})["requested"] = True
            return COMPACT_RESULT

        return tool(name="compact_conversation")(compact_conversation)


def summary_text(message: Message) -> str:
    """The summary inside a summary message (the whole content for any other message)."""
    head, sep, rest = message.content.partition("<summary>\n")
    body, end, _ = rest.rpartition("\n</summary>")
    return body if sep and end else message.content


def _has_new(messages: Sequence[Message]) -> bool:
    return any(m.kind != "summary" for m in messages)


def _is_threshold_list(spec: object) -> TypeGuard[Sequence[ThresholdSpec]]:
    # A 2-tuple led by a string is one threshold, ("messages", 40), not a list of two.
    if isinstance(spec, list):
        return True
    return isinstance(spec, tuple) and not (len(spec) == 2 and isinstance(spec[0], str))


def _detector(spec: float | bool | TopicDetector | None) -> TopicDetector | None:
    if spec is None or spec is False:
        return None
    if spec is True:
        return LexicalTopicShift()
    if isinstance(spec, int | float):
        return LexicalTopicShift(min_overlap=number("summarize.topic_shift", spec, high=1.0))
    if isinstance(spec, TopicDetector):
        return spec
    raise ValueError(
        f"summarize.topic_shift must be a TopicDetector, true or a number in [0, 1], not {spec!r}"
    )
