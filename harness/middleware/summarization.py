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

Records: a `summaries` row and an event per cycle; each summarizer call is a `model_calls` row
whose model is `<name>#summarize`, and its usage is added to the run's.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeGuard

from harness.errors import ContextOverflowError, HarnessError, ModelError
from harness.filesystem import FileSystem, safe_segment
from harness.messages import Message, ModelResponse, user
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.cutoff import (
    Threshold,
    ThresholdSpec,
    clip_text,
    safe_at_or_after,
    safe_at_or_before,
    safe_cuts,
    tail_cut,
)
from harness.middleware.guard import learn_inner, with_inner
from harness.middleware.topic import LexicalTopicShift, TopicDetector
from harness.models.base import Model, ModelSettings, RequestParams
from harness.store import now
from harness.tokens import TokenCounter
from harness.tools import Tool, ToolContext, tool

if TYPE_CHECKING:
    from harness.state import RunState

SUMMARY_REQUEST = "<summary-request>"
SUMMARIZER_SUFFIX = "#summarize"
HISTORY_DIR = "/conversation_history"

DEFAULT_PROMPT = """\
You condense the earlier part of an AI agent's working session. The agent will continue from \
your summary instead of the messages, so anything you leave out is gone from its view (the \
full record stays in a file it can read, but only if it knows to look). Write the summary \
under these headings:

## Session intent
What the user is trying to achieve, in their own terms, with every constraint, preference and \
instruction about format or tone they gave.

## Facts and figures
What was learned that may be needed again: names, dates, identifiers, amounts, measurements, \
quotes, results of tool calls. Copy numbers exactly as written, with their units; never round, \
convert or paraphrase a figure.

## Artifacts
Every file written, changed or deleted, by full path, with what it now contains; files read \
that matter, by path.

## Decisions
Each decision made, with the reason; approaches tried and dropped, and why.

## Next steps
What remains to be done, in order, and what was in progress at the cut.

When a previous summary is given, produce one merged summary: keep everything it says unless \
the newer messages correct or replace it. Reply with the summary only."""

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
_CLIPPED = "\n[... cut here to fit the summarizer's window; the full text is in {path}]"


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
        self.model = model
        specs: Sequence[object] = trigger if _is_threshold_list(trigger) else [trigger]
        self.triggers = tuple(Threshold.parse(t) for t in specs)
        if trigger_mode not in ("any", "all"):
            raise ValueError("trigger_mode must be 'any' or 'all'")
        self.trigger_mode = trigger_mode
        self.keep = Threshold.parse(keep)
        self.fallback_trigger_tokens = fallback_trigger_tokens
        self.fallback_keep_messages = fallback_keep_messages
        self.prompt = prompt
        self.summary_max_tokens = summary_max_tokens
        if not 0 <= summarizer_headroom < 0.75:
            raise ValueError("summarizer_headroom must be in [0, 0.75)")
        self.summarizer_headroom = summarizer_headroom
        self.topic = _detector(topic_shift)
        self.topic_min_tokens = topic_min_tokens
        self.retry_on_overflow = retry_on_overflow
        self.history_dir = history_dir.rstrip("/")
        self.tools = (self._compact_tool(),) if compact_tool else ()
        self._counters: dict[str, TokenCounter] = {}

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
        window = state.agent.model.profile.context_window
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
        window = state.agent.model.profile.context_window
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
        path = f"{self.history_dir}/{safe_segment(state.thread_id)}.md"
        first_seq, last_seq = _seq_range(state, fresh)
        section = _history_section(state, cycle, fresh, first_seq, last_seq, reason)
        _put_section(state.files, path, cycle, section)
        model = self._summarizer(state)
        text, calls = await self._condense(state, model, previous, fresh, path)
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
             json.dumps([m.id for m in fresh]), tokens, after, summary_tokens, model.name, path,
             text, now()),
        )  # fmt: skip
        state.event(
            self.name, "wrap_model_call", "summarized",
            tokens_before=tokens, tokens_after=after,
            detail={
                "reason": reason, "cycle": cycle, "summarized": len(fresh), "kept": len(kept),
                "history_path": path, "paths_written": [path], "summary_tokens": summary_tokens,
                "summarizer_calls": calls, "model": model.name,
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
            mine["cycle"] = state.store.scalar(
                "SELECT coalesce(max(cycle), 0) FROM summaries WHERE thread_id = ?",
                [state.thread_id],
            )
        return int(mine["cycle"]) + 1

    # -- the summarizer --------------------------------------------------------------------

    def _summarizer(self, state: RunState) -> Model:
        if self.model is None:
            return state.agent.model
        if isinstance(self.model, str):
            from harness.models import resolve_model  # SDK adapters load only when named

            self.model = resolve_model(self.model)
        return self.model

    def _counter(self, model: Model) -> TokenCounter:
        encoding = model.profile.encoding
        if encoding not in self._counters:
            self._counters[encoding] = TokenCounter(encoding)
        return self._counters[encoding]

    async def _condense(
        self, state: RunState, model: Model, previous: str, fresh: list[Message], path: str
    ) -> tuple[str, int]:
        """The merged summary of `previous` and `fresh`, in as many calls as the summarizer's
        window needs: each call folds the next chunk into the running summary."""
        counter = self._counter(model)
        window = model.profile.context_window or self.fallback_trigger_tokens
        reserve = min(self.summary_max_tokens, window // 4)
        limit = int(window * (1 - self.summarizer_headroom)) - reserve
        blocks = [render_message(m) for m in fresh]
        running, i, calls = previous, 0, 0
        while i < len(blocks):
            prior = clip_text(running, limit // 3, counter.count_text, _CLIPPED.format(path=path))
            chunk, i = self._chunk(counter, limit, prior, blocks, i, path)
            running = await self._call(state, model, counter, _request_text(prior, chunk), reserve)
            calls += 1
        return running, calls

    def _chunk(
        self, counter: TokenCounter, limit: int, prior: str, blocks: list[str], i: int, path: str
    ) -> tuple[list[str], int]:
        """The blocks from `i` that fit in one summarizer request, and the next index."""
        room = limit - self._request_tokens(counter, prior, [])
        if room < 100:
            raise HarnessError(
                f"the summarizer's window ({limit:,} usable tokens) cannot hold its prompt; "
                "use a shorter prompt or a summary model with a larger window"
            )
        chunk: list[str] = []
        used = 0
        while i < len(blocks):
            size = counter.count_text(blocks[i]) + 2  # the blank line between blocks
            if chunk and used + size > room:
                break
            block = blocks[i]
            if size > room:
                block = clip_text(block, room - 2, counter.count_text, _CLIPPED.format(path=path))
            chunk.append(block)
            used += size
            i += 1
        # Blocks were counted one by one; the joined text decides.
        while (excess := self._request_tokens(counter, prior, chunk) - limit) > 0:
            if len(chunk) > 1:
                chunk.pop()
                i -= 1
            else:
                target = counter.count_text(chunk[0]) - excess - 8
                marker = _CLIPPED.format(path=path)
                chunk[0] = clip_text(chunk[0], target, counter.count_text, marker)
        return chunk, i

    def _request_tokens(self, counter: TokenCounter, prior: str, chunk: list[str]) -> int:
        return counter.count_request(self.prompt, [user(_request_text(prior, chunk))], [])

    async def _call(
        self, state: RunState, model: Model, counter: TokenCounter, text: str, reserve: int
    ) -> str:
        messages = [user(text)]
        context = counter.count_request(self.prompt, messages, [])
        settings = ModelSettings(max_tokens=reserve, timeout_s=state.agent.settings.timeout_s)
        start = time.perf_counter()
        response = await model.request(messages, settings, RequestParams(system_prompt=self.prompt))
        state.record_model_call(
            model,
            response,
            context_tokens=context,
            latency_ms=state.elapsed_ms(start),
            encoding=counter.encoding_name,
            label=SUMMARIZER_SUFFIX,
        )
        summary = response.text.strip()
        if not summary:
            raise ModelError(f"the summarizer {model.name} returned an empty summary")
        return summary

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


# -- rendering ---------------------------------------------------------------------------------


def render_message(m: Message) -> str:
    """A message as markdown, for the history file and the summarizer: a `### Role` line, the
    text, then the tool calls or, for a tool result, which call it answers."""
    parts = [f"### {m.role.capitalize()}"]
    if m.content:
        parts.append(m.content)
    parts.extend(
        f"-> calls {c.name} (id {c.id}) with {json.dumps(c.arguments, ensure_ascii=False)}"
        for c in m.tool_calls
    )
    notes = [f"result of {m.name or 'a tool'}, call {m.tool_call_id}"] if m.role == "tool" else []
    notes += ["error"] if m.is_error else []
    notes += [m.kind] if m.kind not in ("message", "summary") else []
    if notes:
        parts.append(f"({', '.join(notes)})")
    return "\n".join(parts)


def summary_text(message: Message) -> str:
    """The summary inside a summary message (the whole content for any other message)."""
    head, sep, rest = message.content.partition("<summary>\n")
    body, end, _ = rest.rpartition("\n</summary>")
    return body if sep and end else message.content


def _request_text(prior: str, chunk: list[str]) -> str:
    # The instruction shares the marker's line, so a reader that drops the marker line (the
    # simulated model) sees only summary and messages, each under its `### Role` heading.
    head = f"{SUMMARY_REQUEST} Summarize the conversation below as your instructions say." + (
        " It opens with the summary of the part before it: merge that in." if prior else ""
    )
    parts = [head, f"### Summary\n{prior}"] if prior else [head]
    return "\n\n".join([*parts, *chunk])


def _history_section(
    state: RunState,
    cycle: int,
    messages: list[Message],
    first_seq: int | None,
    last_seq: int | None,
    reason: str,
) -> str:
    stamp = now().strftime("%Y-%m-%d %H:%M:%S UTC")
    where = f"transcript seq {first_seq}-{last_seq}, " if first_seq is not None else ""
    head = (
        f"## Cycle {cycle}: {len(messages)} messages summarized at {stamp}\n\n"
        f"_Run {state.run_id}, step {state.step}, {where}trigger: {reason}._\n\n"
    )
    return head + "\n\n".join(render_message(m) for m in messages) + "\n\n"


def _put_section(files: FileSystem, path: str, cycle: int, section: str) -> None:
    """Append `cycle`'s section to the history file, or replace the one an earlier attempt at
    the same cycle left there: a run killed after the append but before its step committed
    and then resumed, or a summarizer call that failed after it. Cycle `cycle` is the newest
    one, so everything from its heading on is that earlier attempt's."""
    existing = files.read_text(path) if files.exists(path) else ""
    earlier = _cycle_heading(cycle).search(existing)
    if earlier is not None:
        existing = existing[: earlier.start()]
    files.write(path, existing + section)


def _cycle_heading(cycle: int) -> re.Pattern[str]:
    # The heading and the line under it, as `_history_section` writes them: a message that
    # merely quotes "## Cycle N" does not match.
    return re.compile(
        rf"^## Cycle {cycle}: \d+ messages summarized at [^\n]*\n\n_Run ", re.MULTILINE
    )


def _seq_range(state: RunState, messages: list[Message]) -> tuple[int | None, int | None]:
    rows = state.store.query(
        "SELECT min(seq) AS lo, max(seq) AS hi FROM messages "
        "WHERE thread_id = ? AND list_contains(?, message_id)",
        [state.thread_id, [m.id for m in messages]],
    )
    return (rows[0]["lo"], rows[0]["hi"]) if rows else (None, None)


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
        return LexicalTopicShift(min_overlap=float(spec))
    if isinstance(spec, TopicDetector):
        return spec
    raise ValueError(f"topic_shift must be a TopicDetector, True or a float, not {spec!r}")
