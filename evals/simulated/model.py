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
  alike. Nothing left to try: "I don't know".
- summaries: a request carrying `SUMMARY_MARKER` gets an extractive summary within a token
  budget (evals/simulated/summarizer.py).
- `ReadSkill`, `Compose`, `Remember`, `ReportFindings`: read a skill listed in the system
  prompt's menu, draft a document from the facts and style preferences in view, save a
  preference to memory, return a subagent's notable findings.

With `delegate=<real model>`, the real model takes over at each decision point until the
turn ends; scripted steps stay replayed. Usage is billed with prompt caching
(evals/simulated/usage.py). A request over the profile's window raises
`ContextOverflowError`, as a provider would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.simulated.breaks import Break
from evals.simulated.plan import (
    UNKNOWN,
    Act,
    Answer,
    Compose,
    Plan,
    Remember,
    ReportFindings,
    Turn,
    fill,
)
from evals.simulated.reader import (
    DONT_KNOW,
    FALLIBLE,
    LINE_NUMBER,
    POINTER,
    Reader,
    ReaderConfig,
    grep_query,
    lookups,
    pointers,
    preference,
    signature,
    skill_path,
    strip_line_numbers,
    template_sections,
)
from evals.simulated.summarizer import extractive_summary, is_summary_request, summary_units
from evals.simulated.usage import BudgetExceededError, CallRecord, PrefixCache
from harness.errors import ContextOverflowError
from harness.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from harness.models.base import Model, ModelSettings, RequestParams
from harness.profiles import ModelProfile, get_profile
from harness.tokens import TokenCounter


def render(message: Message) -> str:
    """A message as the simulated reader sees it: content, then each tool call's arguments."""
    parts = [message.content] if message.content else []
    for c in message.tool_calls:
        args = "\n".join(f"{k}: {v}" for k, v in c.arguments.items())
        parts.append(f"[{c.name}]\n{args}")
    return "\n".join(parts)


@dataclass
class _Cursor:
    turn: Turn
    index: int
    ids: str  # tool-call id prefix: stable, so offload paths are the same on every replay
    step: int = 0
    retrievals: int = 0
    rounds: int = 0  # grep rounds of the current question
    turns: int = 0  # retrieval turns of the current question (greps and re-runs alike)
    delegating: bool = False
    calls: int = 0
    pending: str | None = None
    recalled: list[str] = field(default_factory=list)  # signatures of the lookups re-run
    recall: str | None = None  # id of the latest re-run lookup, until its result is read

    def state(self) -> dict[str, Any]:
        return {
            "turn": self.turn.key, "index": self.index, "ids": self.ids, "step": self.step,
            "retrievals": self.retrievals, "rounds": self.rounds, "turns": self.turns,
            "delegating": self.delegating, "calls": self.calls, "pending": self.pending,
            "recalled": list(self.recalled), "recall": self.recall,
        }  # fmt: skip


def _cursor_from(turn: Turn, state: Mapping[str, Any]) -> _Cursor:
    return _Cursor(
        turn=turn, index=int(state["index"]), ids=str(state["ids"]), step=int(state["step"]),
        retrievals=int(state["retrievals"]), rounds=int(state.get("rounds", 0)),
        turns=int(state.get("turns", 0)),
        delegating=bool(state["delegating"]), calls=int(state["calls"]),
        pending=state["pending"], recalled=[str(s) for s in state.get("recalled", [])],
        recall=state.get("recall"),
    )  # fmt: skip


class SimulatedModel:
    """Deterministic model: follows `plan`, decides from what each request holds.

    Args:
        plan: the recording to follow; without one, the model only summarizes and otherwise
            replies that it has nothing planned.
        profile: window, tokenizer and prices (default: the `simulated` profile).
        seed: fixes the reader's draws.
        reader: how it reads (`FALLIBLE` by default, `IDEAL` never misses).
        summary_budget: the most tokens a summary uses (less if the request's `max_tokens`
            is lower): about a page, what a model asked for a structured session summary
            typically writes.
        view: a break arm (evals/simulated/breaks.py) rewriting what the model is shown.
        delegate: a real model that acts at decision points instead of the simulated reader.
        max_usd: spending cap for the delegate's calls.
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
    ) -> None:
        self.name = name
        self.profile = profile or get_profile("simulated")
        self.plan = plan or Plan()
        self.seed = seed
        self.reader = reader
        self.summary_budget = summary_budget
        self.view = view
        self.delegate = delegate
        self.max_usd = max_usd
        self.counter = TokenCounter(self.profile.encoding)
        self.ledger: list[CallRecord] = []
        self.overflows: list[tuple[str, int]] = []  # (turn key, request tokens)
        self._main: _Cursor | None = None
        self._tasks: dict[str, _Cursor] = {}
        self._cache = PrefixCache(self.counter)
        self._retrieval_ids: set[str] = set()
        self._recall_ids: set[str] = set()  # the retrieval calls that re-ran a domain lookup
        self._turn_index = {t.key: i for i, t in enumerate(self.plan.turns)}

    def __repr__(self) -> str:
        return f"SimulatedModel(turns={len(self.plan.turns)}, reader={self.reader.name})"

    @property
    def spent_usd(self) -> float:
        """What the delegate's own calls cost (the replayed steps cost nothing real)."""
        return sum(r.cost_usd for r in self.ledger if r.role == "delegate")

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        """The model's position in its plan, as plain JSON data (dicts, lists, str, int).

        It holds what decides the next responses: where the main conversation and each
        subagent task are in their turns (with the lookups each question re-ran), the
        prompt-cache memory of each conversation and the ids of the retrieval calls made (and
        of those that re-ran a lookup). The ledger and token caches are bookkeeping, not
        position. `restore` it into a model with the same plan (say, in a new process
        resuming a killed run) and that model answers the next request as this one would."""
        return {
            "main": self._main.state() if self._main else None,
            "tasks": {key: c.state() for key, c in self._tasks.items()},
            "streams": self._cache.state(),
            "retrieval_ids": sorted(self._retrieval_ids),
            "recall_ids": sorted(self._recall_ids),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a `checkpoint()`: the position it recorded replaces this model's.

        Raises ValueError when the checkpoint names turns or tasks this model's plan does
        not have at the recorded places (it was taken from a model following another plan)."""
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
            self._main = _cursor_from(self.plan.turns[index], main)
        restored: dict[str, _Cursor] = {}
        for key, cursor in state["tasks"].items():
            if key not in tasks:
                raise ValueError(f"checkpoint task {key!r} is not in the plan")
            restored[key] = _cursor_from(tasks[key], cursor)
        self._tasks = restored
        self._cache.load(state["streams"])
        self._retrieval_ids = set(state["retrieval_ids"])
        self._recall_ids = set(state.get("recall_ids", []))

    # -- entry point -----------------------------------------------------------------------

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        summarizing = is_summary_request(params.system_prompt, messages)
        if summarizing:
            role, stream, cursor = "summarizer", "summarizer", None
        else:
            cursor, role = self._locate(messages)
            stream = "main" if role == "main" else f"task:{cursor.turn.key}" if cursor else "other"
        tokens = self.counter.count_request(params.system_prompt, messages, params.tools)
        window = self.profile.context_window
        if window is not None and tokens > window:
            self.overflows.append((cursor.turn.key if cursor else role, tokens))
            raise ContextOverflowError(
                f"prompt is too long: {tokens} tokens > {window} maximum",
                tokens=tokens,
                limit=window,
            )
        if self.delegate is not None and (
            summarizing or (cursor is not None and (cursor.delegating or _decision_next(cursor)))
        ):
            return await self._delegated(cursor, messages, settings, params, stream)
        shown = list(messages) if self.view is None or summarizing else self.view.messages(messages)
        if summarizing:
            budget = min(settings.max_tokens or self.summary_budget, self.summary_budget)
            keep_previous = self.view is None or not self.view.summaries
            units = summary_units(messages, previous=keep_previous)
            if self.view is not None:
                units = self.view.units(units)
            response = ModelResponse(text=extractive_summary(units, budget, self.counter))
        elif cursor is None:
            response = ModelResponse(text="(simulated) Nothing is planned for this request.")
        else:
            offered = {str(t.get("name")) for t in params.tools}
            response = self._advance(cursor, shown, params.system_prompt, tokens, offered)
        return self._bill(response, role, stream, cursor, messages, params, tokens)

    # -- where in the plan -----------------------------------------------------------------

    def _locate(self, messages: Sequence[Message]) -> tuple[_Cursor | None, str]:
        users = [m for m in messages if m.role == "user"]
        if users and self.plan.tasks:
            first = users[0].content
            for i, task in enumerate(self.plan.tasks):
                if task.key and task.key in first:
                    cursor = self._tasks.get(task.key)
                    if cursor is None:
                        cursor = self._tasks[task.key] = _Cursor(task, -1, f"s{i:03d}")
                    return cursor, "subagent"
        current = self._main.index if self._main else -1
        for m in reversed(users):
            index = self._turn_of(m.content)
            if index is not None and index >= current:
                if index > current:
                    if self._main and self.plan.turns[index].session != self._main.turn.session:
                        self._cache.forget("main")  # a week later the cache is long gone
                    self._main = _Cursor(self.plan.turns[index], index, f"c{index:03d}")
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
        cursor: _Cursor,
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
                return self._calls(cursor, step.text, list(step.calls))
            texts = texts or [system_prompt, *(render(m) for m in messages)]
            again = frozenset(
                i + 1 for i, m in enumerate(messages)
                if m.role == "tool" and m.tool_call_id in self._recall_ids
            )  # fmt: skip
            reader = Reader(self.reader, texts, tokens, self.seed, _newest_turns(messages), again)
            if isinstance(step, Act):
                cursor.step += 1
                return self._noted(cursor, step, reader)
            if isinstance(step, Answer):
                return self._answer(cursor, step, reader, messages, offered)
            if isinstance(step, Remember):
                response = self._remember(cursor, step, messages)
                if response is not None:
                    return response
                continue
            cursor.step += 1
            if isinstance(step, ReportFindings):
                return ModelResponse(text=self._findings(step, texts))
            if isinstance(step, Compose):
                content = self._compose(step, reader, f"{cursor.ids}:{cursor.step}")
                return self._write(cursor, step.note or f"Writing {step.path}.", step.path, content)
            path = skill_path(system_prompt, step.topic)
            if path is not None:
                return self._read(cursor, f"Reading the {step.topic} skill first.", path)
        return ModelResponse(text=cursor.turn.final)

    def _noted(self, cursor: _Cursor, step: Act, reader: Reader) -> ModelResponse:
        """A recorded step whose note and arguments carry what the agent read just now."""
        values = {}
        for slot, cue in step.slots:
            reading = reader.read(cue, f"{cursor.ids}:{cursor.step}:{slot}")
            values[slot] = reading.value or UNKNOWN
        calls = [(name, fill(dict(args), values)) for name, args in step.calls]
        return self._calls(cursor, fill(step.text, values), calls)

    def _calls(
        self, cursor: _Cursor, text: str, calls: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> ModelResponse:
        made = []
        for name, args in calls:
            cursor.calls += 1
            made.append(
                ToolCall(id=f"{cursor.ids}_{cursor.calls:02d}", name=name, arguments=dict(args))
            )
        return ModelResponse(text=text, tool_calls=tuple(made))

    def _read(self, cursor: _Cursor, text: str, path: str) -> ModelResponse:
        return self._calls(cursor, text, [("read_file", {"file_path": path})])

    def _write(self, cursor: _Cursor, text: str, path: str, content: str) -> ModelResponse:
        return self._calls(cursor, text, [("write_file", {"file_path": path, "content": content})])

    def _answer(
        self,
        cursor: _Cursor,
        step: Answer,
        reader: Reader,
        messages: Sequence[Message],
        offered: set[str],
    ) -> ModelResponse:
        # A re-run result is a new reading: its draws are its own, keyed by how many lookups
        # this question re-ran (never by what the earlier reading found).
        again = f":r{len(cursor.recalled)}" if cursor.recalled else ""
        reading = reader.read(step.cue, f"{step.id}:{cursor.rounds}{again}")
        if reading.value is not None:
            cursor.step += 1
            return ModelResponse(text=reading.value)
        question = cursor.turn.prompt
        budget = self.reader.max_retrievals - cursor.retrievals
        if cursor.turns >= self.reader.max_rounds:
            budget = 0  # every retrieval turn of this question is spent
        rerun, cursor.recall = cursor.recall, None
        if budget > 0 and rerun is not None:
            # The lookup just re-run was offloaded in turn: search its saved copy.
            saved = _offloaded_to(messages, rerun)
            pattern = grep_query(question, 0)
            if saved is not None and pattern is not None:
                return self._grep(cursor, [saved], pattern)
        pattern = grep_query(question, cursor.rounds)
        if budget > 0 and pattern is not None and not cursor.recalled:
            # The first search spreads over the likeliest files; a narrower second one goes
            # to the likeliest file alone.
            width = max(budget - 1, 1) if cursor.rounds == 0 else 1
            targets = pointers(reader.texts, question)[:width]
            if targets:
                cursor.rounds += 1
                return self._grep(cursor, targets, pattern)
        if budget > 0:
            # Nothing saved to search, or the search came back empty: run a lookup again.
            seen = [(c.name, c.arguments) for m in messages for c in m.tool_calls]
            window = self.profile.context_window
            room = None if window is None else window - reader.tokens
            # The best-ranked lookup that fits; sizes are counted only until one does.
            fresh = next(
                (
                    (name, args)
                    for name, args in lookups(seen, question, offered)
                    if signature(name, args) not in cursor.recalled
                    and (room is None or self._earlier_size(messages, name, args) < room)
                ),
                None,
            )
            if fresh is not None:
                name, args = fresh
                cursor.recalled.append(signature(name, args))
                cursor.retrievals += 1
                cursor.turns += 1
                response = self._calls(cursor, f"Checking {name} again for this.", [fresh])
                cursor.recall = response.tool_calls[0].id
                self._retrieval_ids.add(cursor.recall)
                self._recall_ids.add(cursor.recall)
                return response
        cursor.step += 1
        return ModelResponse(text=DONT_KNOW)

    def _earlier_size(
        self, messages: Sequence[Message], name: str, arguments: Mapping[str, Any]
    ) -> int:
        """Tokens the earlier result of this call took, as far as the request shows: its text,
        or the size a placeholder or an offload note states (the agent will not pull back a
        result it can see would not fit its window)."""
        key = signature(name, arguments)
        ids = {
            c.id for m in messages for c in m.tool_calls if signature(c.name, c.arguments) == key
        }
        size = 0
        for m in messages:
            if m.role == "tool" and m.tool_call_id in ids:
                stated = [int(n.replace(",", "")) for n in _TOKENS.findall(m.content)]
                size = max(size, self.counter.count_message(m), *stated)
        return size

    def _grep(self, cursor: _Cursor, paths: Sequence[str], pattern: str) -> ModelResponse:
        cursor.retrievals += len(paths)
        cursor.turns += 1
        args = {"pattern": pattern, "regex": True, "output_mode": "content",
                "max_count": self.reader.grep_results}  # fmt: skip
        calls = [("grep", {**args, "path": p}) for p in paths]
        response = self._calls(cursor, "Searching the saved files for it.", calls)
        self._retrieval_ids.update(c.id for c in response.tool_calls)
        return response

    def _findings(self, step: ReportFindings, texts: list[str]) -> str:
        found: dict[str, None] = {}
        for text in texts[1:]:
            for line in text.splitlines():
                at = line.find(step.marker)
                if at >= 0:
                    sentence = line[at + len(step.marker) :].strip().split(". ")[0]
                    found.setdefault(sentence.rstrip(".") + ".", None)
        if not found:
            return "No notable findings."
        return "\n".join(f"- {f}" for f in list(found)[: step.limit])

    def _compose(self, step: Compose, reader: Reader, key: str) -> str:
        sections = template_sections(reader.texts) or list(step.fallback_sections)
        bullets = "bullet" in (preference(reader.texts) or "").split(", not")[0]
        by_section: dict[str, list[str]] = {s: [] for s in sections}
        for k, fact in enumerate(step.facts):
            value = reader.read(fact.cue, f"{key}:{k}").value
            line = f"{fact.label}: {value}{fact.unit}" if value else f"{fact.label} (not at hand)"
            target = fact.section if fact.section in by_section else sections[-1]
            by_section[target].append(line)
        out = [f"# {step.title}", ""]
        for section in sections:
            out.append(f"## {section}")
            items = by_section[section] or ["Nothing to report."]
            if bullets:
                out.extend(f"- {item}" for item in items)
            else:
                out.append(" ".join(item.rstrip(".") + "." for item in items))
            out.append("")
        return "\n".join(out)

    def _remember(
        self, cursor: _Cursor, step: Remember, messages: Sequence[Message]
    ) -> ModelResponse | None:
        """Read the memory file, then write it back with the user's latest preference added.
        None when there is nothing (more) to do: the step is then finished."""
        stated = preference([m.content for m in messages if m.role == "user"])
        if stated is None:
            cursor.step += 1
            return None
        if cursor.pending is None:
            response = self._read(cursor, "Checking what memory already holds.", step.path)
            cursor.pending = response.tool_calls[0].id
            return response
        result = next((m for m in messages if m.tool_call_id == cursor.pending), None)
        cursor.pending = None
        cursor.step += 1
        existing = "" if result is None or _is_error(result) else strip_line_numbers(result.content)
        existing = "\n".join(ln for ln in existing.splitlines() if not ln.startswith("[Read "))
        if stated in existing.lower():
            return None
        content = f"{existing.rstrip() or '# Agent memory'}\n\n- Reports: {stated}.\n"
        return self._write(cursor, "Saving this preference to memory.", step.path, content)

    # -- live decisions --------------------------------------------------------------------

    async def _delegated(
        self,
        cursor: _Cursor | None,
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
        cursor: _Cursor | None,
        messages: Sequence[Message],
        params: RequestParams,
        tokens: int,
    ) -> ModelResponse:
        cached = self._cache.cached(stream, messages, params, tokens)
        out = self.counter.count_text(response.text) + sum(
            self.counter.count_text(json.dumps(c.arguments)) for c in response.tool_calls
        )
        usage = Usage(input_tokens=tokens, output_tokens=out, cached_tokens=cached, requests=1)
        retrieval = sum(c.id in self._retrieval_ids for c in response.tool_calls)
        recalls = sum(c.id in self._recall_ids for c in response.tool_calls)
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


def _newest_turns(messages: Sequence[Message], turns: int = 2) -> int | None:
    """The index (in the reader's texts, after the system prompt) where the newest `turns`
    user turns start: the previous turn and the current one are read reliably."""
    starts = [i for i, m in enumerate(messages) if m.role == "user" and m.kind == "message"]
    return starts[-turns] + 1 if len(starts) >= turns else None


def _decision_next(cursor: _Cursor) -> bool:
    steps = cursor.turn.steps
    return cursor.step < len(steps) and not isinstance(steps[cursor.step], Act)


_TOKENS = re.compile(r"\b([0-9][0-9,]*) tokens\b")


def _offloaded_to(messages: Sequence[Message], call_id: str) -> str | None:
    """The file the result of call `call_id` was offloaded to, if the request shows one."""
    for m in messages:
        if m.role == "tool" and m.tool_call_id == call_id:
            found = POINTER.search(m.content)
            return found.group(1).rstrip(".,;:)") if found else None
    return None


def _is_error(result: Message) -> bool:
    return result.is_error or result.content.lstrip().lower().startswith("error")
