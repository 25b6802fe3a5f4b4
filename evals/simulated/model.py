"""`SimulatedModel`: a deterministic model for offline evals and demos (model string
`simulated`, registered with the harness when `evals` is imported).

It follows a `Plan` (evals/simulated/plan.py): a recording of what an agent did, turn by
turn, so every context strategy sees the same trajectory. Whatever it writes down is filled
from the request in front of it; it acts on its own only at decision points, and then only
from what that request holds, through its reader (evals/simulated/reader.py):

- `Answer`: a user question. The reader looks for the fact in the request (system prompt,
  messages, summaries) and may miss it or return a look-alike. Not found? It retrieves, then
  reads again, at most `max_retrievals` calls a question, each billed like any other:
  first the cheap way, a grep of the offloaded files and saved history the request names
  (terms from the question); when there is no such file or the greps are used up, it runs
  again an earlier domain lookup it can still see in its messages (the call whose
  arguments best match the question: re-open the article, re-query the export), as real
  agents do. The result comes back through the harness like any tool result, read with the
  reader's misses like any document in the request; if it is offloaded in turn, one grep of
  its saved copy follows. At most `max_rounds` retrieval turns a question, greps and re-runs
  alike. Nothing left to try: "I don't know". (evals/simulated/retrieval.py)
- summaries: a request carrying `SUMMARY_MARKER` gets an extractive summary within a token
  budget, keeping what the summarizer's prompt asks for at the length it allows
  (evals/simulated/summarizer.py).
- `ReadSkill`, `Compose`, `Remember`/`Memorize`, `ReportFindings`: read a skill from the
  system prompt's menu, draft a document from the facts and style preferences in view, save
  to memory (evals/simulated/memory.py), return a subagent's notable findings.

With `delegate=<real model>`, the real model takes over at each decision point until the
turn ends; scripted steps stay replayed. Usage is billed with prompt caching (usage.py). A
request over the profile's window raises `ContextOverflowError`, as a provider would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evals.errors import BudgetExceededError
from evals.simulated.breaks import Break
from evals.simulated.cursor import Cursor, cursor_from
from evals.simulated.drafting import compose, findings
from evals.simulated.memory import memorize, remember
from evals.simulated.plan import (
    UNKNOWN,
    Act,
    Answer,
    Compose,
    Memorize,
    Plan,
    Remember,
    ReportFindings,
    fill,
)
from evals.simulated.reader import FALLIBLE, LINE_NUMBER, ReaderConfig, RequestReader, skill_path
from evals.simulated.request import Renderings, newest_turns
from evals.simulated.retrieval import Retrievals
from evals.simulated.sightings import Rules
from evals.simulated.summarizer import (
    consolidate_memory,
    extractive_summary,
    instructions,
    is_summary_request,
    memory_request,
    summary_units,
)
from evals.simulated.usage import CallRecord, PrefixCache
from harness.errors import ContextOverflowError
from harness.messages import Message, ModelResponse, StopReason, Usage
from harness.models.base import Model, ModelSettings, RequestParams
from harness.profiles import ModelProfile, get_profile
from harness.tokens import TokenCounter


class SimulatedModel:
    """Deterministic model: follows `plan`, decides from what each request holds.

    Args:
        plan: the recording to follow; without one, the model only summarizes and otherwise
            replies that it has nothing planned.
        profile: window, tokenizer and prices (default: the `simulated` profile).
        seed: fixes the reader's draws.
        reader: how it reads (`FALLIBLE` by default, `IDEAL` never misses); rules: the
            import's role rules it finds an imported probe's value by (else by its cue).
        summary_budget: the most tokens a summary uses (less if the request's `max_tokens`
            is lower): about a page, what a model asked for a structured session summary
            typically writes.
        view: a break arm (evals/simulated/breaks.py) rewriting what the model is shown.
        delegate: a real model acting at decision points instead of the simulated reader;
            max_usd: the cap on its spend.
    """

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        profile: ModelProfile | None = None,
        seed: int = 0,
        reader: ReaderConfig = FALLIBLE,
        summary_budget: int = 1_500,
        view: Break | None = None,
        delegate: Model | None = None,
        max_usd: float | None = None,
        name: str = "simulated",
        rules: Rules | None = None,
    ) -> None:
        self.name = name
        self.profile = profile or get_profile("simulated")
        self.plan = plan or Plan()
        self.seed = seed
        self.reader = reader
        self.summary_budget = summary_budget
        self.view, self.delegate, self.max_usd = view, delegate, max_usd
        self.counter = TokenCounter(self.profile.encoding)
        self.ledger: list[CallRecord] = []
        self.overflows: list[tuple[str, int]] = []  # (turn key, request tokens)
        self._main: Cursor | None = None
        self._tasks: dict[str, Cursor] = {}
        self._cache = PrefixCache(self.counter)
        self._retrievals = Retrievals(self.counter, self.plan.questions(), rules)
        self._turn_index = {t.key: i for i, t in enumerate(self.plan.turns)}
        self._render = Renderings()

        # Called with each main request as shown (system prompt, messages) once it fits the
        # window: how a replay audits a probe's point of use (evals/scoring/availability.py).
        self.tap: Callable[[str, Sequence[Message]], None] | None = None

    def __repr__(self) -> str:
        return f"SimulatedModel(turns={len(self.plan.turns)}, reader={self.reader.name})"

    @property
    def spent_usd(self) -> float:
        """What the delegate's own calls cost (the replayed steps cost nothing real)."""
        return sum(r.cost_usd for r in self.ledger if r.role == "delegate")

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        """The model's position in its plan as plain JSON data: where the main conversation
        and each subagent task are (with the lookups each question re-ran), each
        conversation's prompt-cache memory, the retrieval (and re-run) call ids. The ledger
        and token caches are bookkeeping. `restore` it into a model with the same plan (a new
        process resuming a killed run) and it answers the next request as this one would."""
        return {
            "main": self._main.state() if self._main else None,
            "tasks": {key: c.state() for key, c in self._tasks.items()},
            "streams": self._cache.state(),
            "retrieval_ids": sorted(self._retrievals.ids),
            "recall_ids": sorted(self._retrievals.recall_ids),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a `checkpoint()`. Raises ValueError when it names turns or tasks
        this model's plan lacks at the recorded places (taken from another plan)."""
        tasks = {t.key: t for t in self.plan.tasks}
        main = state["main"]
        if main is None:
            self._main = None
        else:
            index = main["index"]
            if not 0 <= index < len(self.plan.turns) or self.plan.turns[index].key != main["turn"]:
                raise ValueError(
                    f"checkpoint turn {main['turn']!r} is not turn {index} of the plan"
                )
            self._main = cursor_from(self.plan.turns[index], main)
        restored: dict[str, Cursor] = {}
        for key, cursor in state["tasks"].items():
            if key not in tasks:
                raise ValueError(f"checkpoint task {key!r} is not in the plan")
            restored[key] = cursor_from(tasks[key], cursor)
        self._tasks = restored
        self._cache.load(state["streams"])
        self._retrievals.ids = set(state["retrieval_ids"])
        self._retrievals.recall_ids = set(state.get("recall_ids", []))

    # -- entry point -----------------------------------------------------------------------

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        consolidation = memory_request(messages)
        if consolidation is not None:
            return self._consolidated(consolidation, messages, params)
        summarizing = is_summary_request(params.system_prompt, messages)
        if summarizing:
            role, stream, cursor = "summarizer", "summarizer", None
        else:
            cursor, role = self._locate(messages)
            stream = "main" if role == "main" else f"task:{cursor.turn.key}" if cursor else "other"
        tokens = self._cache.tokens(stream, messages, params)
        window = self.profile.context_window
        if window is not None and tokens > window:
            self.overflows.append((cursor.turn.key if cursor else role, tokens))
            raise ContextOverflowError(
                f"prompt is too long: {tokens} tokens > {window} maximum",
                tokens=tokens,
                limit=window,
            )
        shown = list(messages) if self.view is None or summarizing else self.view.messages(messages)
        if self.tap is not None and stream == "main":
            self.tap(params.system_prompt, shown)
        if self.delegate is not None and (
            summarizing or (cursor is not None and (cursor.delegating or cursor.decision_next()))
        ):
            return await self._delegated(cursor, messages, settings, params, stream)
        if summarizing:
            budget = min(settings.max_tokens or self.summary_budget, self.summary_budget)
            keep_previous = self.view is None or not self.view.summaries
            units = summary_units(messages, previous=keep_previous)
            if self.view is not None:
                units = self.view.units(units)
            asked = instructions(params.system_prompt)
            text = extractive_summary(units, budget, self.counter, asked=asked)
            response = ModelResponse(text=text)
        elif cursor is None:
            response = ModelResponse(text="(simulated) Nothing is planned for this request.")
        else:
            offered = {str(t.get("name")) for t in params.tools}
            response = self._advance(cursor, shown, params.system_prompt, tokens, offered)
        return self._bill(response, role, stream, cursor, messages, params, tokens)

    def _consolidated(
        self,
        consolidation: tuple[int, str],
        messages: Sequence[Message],
        params: RequestParams,
    ) -> ModelResponse:
        """A memory file rewritten within its budget (evals/simulated/summarizer.py), billed as
        the summarizer's call."""
        budget, text = consolidation
        tokens = self._cache.tokens("consolidator", messages, params)
        response = ModelResponse(text=consolidate_memory(text, budget, self.counter, self.seed))
        return self._bill(response, "summarizer", "consolidator", None, messages, params, tokens)

    # -- where in the plan -----------------------------------------------------------------

    def _locate(self, messages: Sequence[Message]) -> tuple[Cursor | None, str]:
        users = [m for m in messages if m.role == "user"]
        if users and self.plan.tasks:
            first = users[0].content
            for i, task in enumerate(self.plan.tasks):
                if task.key and task.key in first:
                    cursor = self._tasks.get(task.key)
                    if cursor is None:
                        cursor = self._tasks[task.key] = Cursor(task, -1, f"s{i:03d}")
                    return cursor, "subagent"
        current = self._main.index if self._main else -1
        for m in reversed(users):
            index = self._turn_of(m.content)
            if index is not None and index >= current:
                if index > current:
                    if self._main and self.plan.turns[index].session != self._main.turn.session:
                        self._cache.forget("main")  # a week later the cache is long gone
                    self._main = Cursor(self.plan.turns[index], index, f"c{index:03d}")
                return self._main, "main"
        return self._main, "main" if self._main else "other"

    def _turn_of(self, content: str) -> int | None:
        """The plan turn a user message starts: by its first line, or, when the message was
        offloaded, by the first line of the preview (numbered as `read_file` numbers it)."""
        lines = content.strip().split("\n", 16)
        for line in lines[:1] + [LINE_NUMBER.sub("", ln) for ln in lines[1:16]]:
            index = self._turn_index.get(line.strip())
            if index is not None:
                return index
        return None

    # -- following the plan ----------------------------------------------------------------

    def _advance(
        self,
        cursor: Cursor,
        messages: Sequence[Message],
        system_prompt: str,
        tokens: int,
        offered: set[str],
    ) -> ModelResponse:
        texts: list[str] = []  # rendered only when something is read: replays never read
        while cursor.step < len(cursor.turn.steps):
            step = cursor.turn.steps[cursor.step]
            if isinstance(step, Act) and not step.slots:
                cursor.step += 1
                return cursor.call(step.text, list(step.calls))
            texts = texts or [system_prompt, *self._render(messages)]
            recall_ids = self._retrievals.recall_ids
            again = frozenset(
                i + 1 for i, m in enumerate(messages)
                if m.role == "tool" and m.tool_call_id in recall_ids
            ) if recall_ids else frozenset()  # fmt: skip
            reader = RequestReader(
                self.reader, texts, tokens, self.seed, newest_turns(messages), again
            )
            if isinstance(step, Act):
                cursor.step += 1
                return self._noted(cursor, step, reader)
            if isinstance(step, Answer):
                return self._retrievals.answer(
                    self.reader,
                    self.profile.context_window,
                    cursor,
                    step,
                    reader,
                    messages,
                    offered,
                )
            if isinstance(step, Memorize):
                return memorize(cursor, step, messages, reader)
            if isinstance(step, Remember):
                response = remember(cursor, step, messages)
                if response is not None:
                    return response
                continue
            cursor.step += 1
            if isinstance(step, ReportFindings):
                return ModelResponse(text=findings(step, texts))
            if isinstance(step, Compose):
                content = compose(step, reader, f"{cursor.ids}:{cursor.step}")
                return cursor.write(step.note or f"Writing {step.path}.", step.path, content)
            path = skill_path(system_prompt, step.topic)
            if path is not None:
                return cursor.read(f"Reading the {step.topic} skill first.", path)
        return ModelResponse(text=cursor.turn.final)

    def _noted(self, cursor: Cursor, step: Act, reader: RequestReader) -> ModelResponse:
        """A recorded step whose note and arguments carry what the agent read just now."""
        values = {}
        for slot, cue in step.slots:
            reading = reader.read(cue, f"{cursor.ids}:{cursor.step}:{slot}")
            values[slot] = reading.value or UNKNOWN
        calls = [(name, fill(dict(args), values)) for name, args in step.calls]
        return cursor.call(fill(step.text, values), calls)

    # -- live decisions --------------------------------------------------------------------

    async def _delegated(
        self,
        cursor: Cursor | None,
        messages: Sequence[Message],
        settings: ModelSettings,
        params: RequestParams,
        stream: str,
    ) -> ModelResponse:
        """The real model acts; once it stops calling tools, the turn is over."""
        assert self.delegate is not None
        if self.max_usd is not None and self.spent_usd >= self.max_usd:
            raise BudgetExceededError(
                f"spent ${self.spent_usd:.4f} of the ${self.max_usd:.2f} cap; stopping"
            )
        if cursor is not None:
            cursor.delegating = True
        response = await self.delegate.request(messages, settings, params)
        usage = response.usage
        self.ledger.append(
            CallRecord(
                role="delegate", stream=stream, turn=cursor.turn.key if cursor else "",
                input_tokens=usage.input_tokens, cached_tokens=usage.cached_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                output_tokens=usage.output_tokens, tool_calls=len(response.tool_calls),
                retrieval_calls=len(response.tool_calls),
                cost_usd=self.delegate.profile.cost(usage),
            )
        )  # fmt: skip
        if cursor is not None and not response.tool_calls:
            cursor.step = len(cursor.turn.steps)
            cursor.delegating = False
        return response

    # -- billing ---------------------------------------------------------------------------

    def _bill(
        self,
        response: ModelResponse,
        role: str,
        stream: str,
        cursor: Cursor | None,
        messages: Sequence[Message],
        params: RequestParams,
        tokens: int,
    ) -> ModelResponse:
        cached = self._cache.cached(stream, messages, params, tokens)
        out = self.counter.count_text(response.text) + sum(
            self.counter.count_text(json.dumps(c.arguments)) for c in response.tool_calls
        )
        usage = Usage(input_tokens=tokens, output_tokens=out, cached_tokens=cached, requests=1)
        retrieval = sum(c.id in self._retrievals.ids for c in response.tool_calls)
        recalls = sum(c.id in self._retrievals.recall_ids for c in response.tool_calls)
        self.ledger.append(
            CallRecord(
                role=role, stream=stream, turn=cursor.turn.key if cursor else "",
                input_tokens=tokens, cached_tokens=cached, output_tokens=out,
                tool_calls=len(response.tool_calls), retrieval_calls=retrieval,
                tool_recalls=recalls, cost_usd=self.profile.cost(usage),
            )
        )  # fmt: skip
        stop: StopReason = "tool_calls" if response.tool_calls else "end_turn"
        return ModelResponse(
            text=response.text, tool_calls=response.tool_calls, usage=usage,
            stop_reason=stop, model_name=self.name,
        )  # fmt: skip
