"""The summarizer call: condensing messages, and a previous summary, into one merged summary.

The input is bounded by the summarizer's own window: when the messages do not fit in one
request, each call folds the next chunk into the running summary, and a block too large even
alone is clipped with a note pointing at the history file. Every call is a `model` step of the
run (the step runner retries it like any model call, and a flow's journal replays it on
resume instead of paying for it again), a `model_calls` row whose model is
`<name>#summarize`, and part of the run's usage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import HarnessError, ModelError
from harness.messages import Message, user
from harness.middleware.cutoff import clip_text
from harness.middleware.history import rendered_lines
from harness.middleware.params import number
from harness.models.base import Model, ModelSettings, RequestParams
from harness.tokens import MESSAGE_OVERHEAD, TokenCounter

if TYPE_CHECKING:
    from harness.state import RunState

SUMMARY_REQUEST = "<summary-request>"
SUMMARIZER_SUFFIX = "#summarize"

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

_CLIPPED = "\n[... cut here to fit the summarizer's window; the full text is in {path}]"


@dataclass(frozen=True, slots=True)
class Condensed:
    """A merged summary, the model that wrote it and how many calls it took."""

    text: str
    model: Model
    calls: int


class Summarizer:
    """Writes summaries with a model: the agent's own (`model=None`) or another one.

    model: a spec ("openai:...") or a `Model`; None uses the agent's.
    prompt: the summarizer's instructions.
    max_tokens: output cap of one call (at most a quarter of the summarizer's window).
    headroom: share of the summarizer's window left unused, because our token count can fall
        short of the provider's.
    fallback_window: the window assumed when the summarizer's is unknown.
    """

    def __init__(
        self,
        model: str | Model | None,
        *,
        prompt: str,
        max_tokens: int,
        headroom: float,
        fallback_window: int,
    ) -> None:
        headroom = number("summarize.summarizer_headroom", headroom, high=0.75, open_high=True)
        self.model = model
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.headroom = headroom
        self.fallback_window = fallback_window
        self._counters: dict[str, TokenCounter] = {}

    def resolve(self, state: RunState) -> Model:
        """The model that summarizes for this run."""
        if self.model is None:
            return state.config.model
        if isinstance(self.model, str):
            from harness.models import resolve_model  # SDK adapters load only when named

            self.model = resolve_model(self.model)
        return self.model

    async def condense(
        self, state: RunState, previous: str, fresh: list[Message], path: str
    ) -> Condensed:
        """The merged summary of `previous` and `fresh`, in as many calls as the summarizer's
        window needs: each call folds the next chunk into the running summary. `path` is the
        history file a clipped block points to."""
        model = self.resolve(state)
        counter = self._counter(model)
        window = model.profile.context_window or self.fallback_window
        reserve = min(self.max_tokens, window // 4)
        limit = int(window * (1 - self.headroom)) - reserve
        marker = _CLIPPED.format(path=path)
        # Each block's size from its lines (the message's text is counted already), not by
        # tokenizing the block again: `count` answers a block's size, any other text's count.
        sizes: dict[str, int] = {}
        blocks = []
        for m in fresh:
            lines = rendered_lines(m)
            block = "\n".join(lines)
            sizes[block] = counter.count_joined(lines, "\n", _with_content(counter, m))
            blocks.append(block)

        def count(text: str) -> int:
            n = sizes.get(text)
            return counter.count_text(text) if n is None else n

        running, i, calls = previous, 0, 0
        while i < len(blocks):
            prior = clip_text(running, limit // 3, counter.count_text, marker)
            if prior:
                summary = f"### Summary\n{prior}"
                sizes[summary] = counter.count_joined(["### Summary", prior], "\n")
            chunk, i, tokens = self._chunk(counter, count, limit, prior, blocks, i, marker)
            request = user("\n\n".join(_request_parts(prior, chunk)))
            counter.count_message(request, tokens)  # counted once, whoever counts it next
            running = await self._call(state, model, counter, request, reserve)
            calls += 1
        return Condensed(running, model, calls)

    def _counter(self, model: Model) -> TokenCounter:
        encoding = model.profile.encoding
        if encoding not in self._counters:
            self._counters[encoding] = TokenCounter(encoding)
        return self._counters[encoding]

    def _chunk(
        self,
        counter: TokenCounter,
        count: Callable[[str], int],
        limit: int,
        prior: str,
        blocks: list[str],
        i: int,
        marker: str,
    ) -> tuple[list[str], int, int]:
        """The blocks from `i` that fit in one summarizer request, the next index, and the
        tokens of the request's text."""
        empty = counter.count_joined(_request_parts(prior, []), "\n\n", count)
        room = limit - self._request_tokens(counter, empty)
        if room < 100:
            raise HarnessError(
                f"the summarizer's window ({limit:,} usable tokens) cannot hold its prompt; "
                "use a shorter prompt or a summary model with a larger window"
            )
        chunk: list[str] = []
        used = 0
        while i < len(blocks):
            size = count(blocks[i]) + 2  # the blank line between blocks
            if chunk and used + size > room:
                break
            block = blocks[i]
            if size > room:
                block = clip_text(block, room - 2, count, marker)
            chunk.append(block)
            used += size
            i += 1
        # Blocks were counted one by one; the joined text decides.
        while True:
            tokens = counter.count_joined(_request_parts(prior, chunk), "\n\n", count)
            excess = self._request_tokens(counter, tokens) - limit
            if excess <= 0:
                return chunk, i, tokens
            if len(chunk) > 1:
                chunk.pop()
                i -= 1
            else:
                target = count(chunk[0]) - excess - 8
                chunk[0] = clip_text(chunk[0], target, count, marker)

    def _request_tokens(self, counter: TokenCounter, text_tokens: int) -> int:
        """`count_request` of the prompt and one user message whose text has `text_tokens`."""
        return counter.count_request(self.prompt, [], [], MESSAGE_OVERHEAD + text_tokens)

    async def _call(
        self, state: RunState, model: Model, counter: TokenCounter, request: Message, reserve: int
    ) -> str:
        messages = [request]
        context = counter.count_request(self.prompt, messages, [])
        settings = ModelSettings(max_tokens=reserve, timeout_s=state.config.settings.timeout_s)
        params = RequestParams(system_prompt=self.prompt)
        start = time.perf_counter()
        # The same step, with the same arguments, as the loop's own model calls: the runner
        # retries it on rate limits and a flow's journal keys it by the request's content.
        response = await state.run_step("model", model.request, messages, settings, params)
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


def _with_content(counter: TokenCounter, m: Message) -> Callable[[str], int]:
    """Counts a rendered line of `m`: its text from the message's count (`count_content`)."""
    content = counter.count_content(m)
    return lambda line: content if line is m.content else counter.count_text(line)


def _request_parts(prior: str, chunk: list[str]) -> list[str]:
    """The request's text is these joined by blank lines. The instruction shares the marker's
    line, so a reader that drops the marker line (the simulated model) sees only summary and
    messages, each under its `### Role` heading."""
    head = f"{SUMMARY_REQUEST} Summarize the conversation below as your instructions say." + (
        " It opens with the summary of the part before it: merge that in." if prior else ""
    )
    return [head, f"### Summary\n{prior}", *chunk] if prior else [head, *chunk]
