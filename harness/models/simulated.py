"""`SimulatedModel`: a deterministic model for offline evals and demos (model string `simulated`).

It follows a `Plan`: a recording of what an agent did (its tool calls and notes, turn by turn).
Replaying the recording gives every context strategy the same trajectory. The model acts on
its own only at decision points, and then only from what the request in front of it holds:

- `Answer`: a user question. The model looks for the fact in the request (system prompt,
  messages, summaries). Not there, but the request names an offloaded file or saved history
  (`/large_tool_results/...`, `/conversation_history/...`)? It greps those files (at most
  `max_retrievals` calls, whose tokens count like any others) and looks again. Otherwise it
  says it does not know.
- summaries: a request carrying `SUMMARY_MARKER` gets an extractive summary within a token
  budget: the agent's and user's own words first (newest first), then the heads of tool
  results. Raw tool output mostly does not survive, as with a real summarizer.
- `ReadSkill`, `Compose`, `Remember`, `ReportFindings`: read a skill listed in the system
  prompt's menu, draft a document from the facts and style preferences in view, save a
  preference to memory, return a subagent's notable findings.

With `rot=NOLIMA_LIKE` a fact that is in view is missed with a probability that grows with the
request's length (a fixed, documented curve; off by default). With `delegate=<real model>`, the
real model takes over at each decision point until the turn ends; scripted steps stay replayed.

Usage is reported the way a provider with automatic prompt caching would: the longest prefix a
request shares with the previous request of the same conversation is a cache read.
A request over the profile's window raises `ContextOverflowError`, as a provider would.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import ContextOverflowError, HarnessError
from harness.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from harness.models.base import Model, ModelSettings, RequestParams
from harness.profiles import ModelProfile, get_profile
from harness.tokens import TokenCounter

SUMMARY_MARKER = "<summary-request>"
POINTER = re.compile(r"(/(?:large_tool_results|conversation_history)/[A-Za-z0-9._\-/]+)")
SKILL_PATH = re.compile(r"(/skills/[A-Za-z0-9._\-/]+/SKILL\.md)")
PREFERENCE = re.compile(
    r"(?i)\b(use (?:bullets|bullet points|paragraphs|tables)(?:, not [a-z ]+)?)"
)
LINE_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)?\t")
DONT_KNOW = "I don't know: nothing in my context or in the files it points to says."

# OpenAI-style automatic caching: prefixes under 1,024 tokens are not cached, longer ones in
# steps of 128 tokens.
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


class BudgetExceededError(HarnessError):
    """A live replay reached its spending cap (`max_usd`) before a real-model call."""


# -- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """How to recognise one fact: regexes whose first group is the value, tried newest text
    first, and literal strings worth grepping for in offloaded files or saved history."""

    patterns: tuple[str, ...]
    grep: tuple[str, ...] = ()


@dataclass(frozen=True)
class Act:
    """A recorded agent step: its note and the tool calls it made, replayed verbatim."""

    text: str = ""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()


@dataclass(frozen=True)
class Answer:
    """Decision point: answer the user's question from the context (or retrieve first)."""

    id: str
    cue: Cue


@dataclass(frozen=True)
class ReadSkill:
    """Decision point: read the skill whose menu entry mentions `topic`, if one is listed."""

    topic: str


@dataclass(frozen=True)
class Fact:
    """One line a composed document should carry: found with `cue`, placed in `section`."""

    section: str
    label: str
    cue: Cue
    unit: str = ""


@dataclass(frozen=True)
class Compose:
    """Decision point: write a document at `path` from the facts in view, with the sections
    of a template read into the context (else `fallback_sections`) and the style the user
    asked for (bullets or paragraphs)."""

    path: str
    title: str
    facts: tuple[Fact, ...]
    fallback_sections: tuple[str, ...] = ("Summary",)
    note: str = ""


@dataclass(frozen=True)
class Remember:
    """Decision point: save the latest preference the user stated (if any) to memory."""

    path: str = "/memories/AGENTS.md"


@dataclass(frozen=True)
class ReportFindings:
    """Decision point ending a subagent's task: return the notable findings it has in view."""

    marker: str = "Key finding:"
    limit: int = 3


Step = Act | Answer | ReadSkill | Compose | Remember | ReportFindings


@dataclass(frozen=True)
class Turn:
    """One user turn and the agent's steps in answer to it. The model recognises the turn by
    the first line of `prompt` (what survives when a long message is offloaded)."""

    prompt: str
    steps: tuple[Step, ...] = ()
    final: str = "Done."
    session: int = 0

    @property
    def key(self) -> str:
        return self.prompt.strip().split("\n", 1)[0].strip()


@dataclass(frozen=True)
class Plan:
    """The main agent's turns in order, and the subagent tasks (recognised by their text)."""

    turns: tuple[Turn, ...] = ()
    tasks: tuple[Turn, ...] = ()

    def __post_init__(self) -> None:
        keys = [t.key for t in (*self.turns, *self.tasks)]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"plan turns must start with distinct first lines: {dupes[:3]}")
        for turn in (*self.turns, *self.tasks):
            for step in turn.steps:
                if isinstance(step, Act) and not step.calls:
                    raise ValueError(f"an Act must call tools (turn {turn.key!r})")


# -- context rot ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RotCurve:
    """Probability of noticing a fact that is in view, by request length:
    `clamp(1 - drop_per_doubling * log2(tokens / start_tokens), floor, 1)`.

    `NOLIMA_LIKE` is shaped after NoLiMa's GPT-4o figures (99% at 1k tokens, ~70% at 32k) and
    is fixed: it is never fitted to make any strategy look better."""

    start_tokens: int = 1_000
    drop_per_doubling: float = 0.06
    floor: float = 0.5

    def keep(self, tokens: int) -> float:
        if tokens <= self.start_tokens:
            return 1.0
        return max(self.floor, 1.0 - self.drop_per_doubling * math.log2(tokens / self.start_tokens))


NOLIMA_LIKE = RotCurve()


def _draw(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by `parts`: the same seed gives the same misses."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


# -- what the model reads ------------------------------------------------------------------


def render(message: Message) -> str:
    """A message as the simulated reader sees it: content, then each tool call's arguments."""
    parts = [message.content] if message.content else []
    for c in message.tool_calls:
        args = "\n".join(f"{k}: {v}" for k, v in c.arguments.items())
        parts.append(f"[{c.name}]\n{args}")
    return "\n".join(parts)


def find(cue: Cue, texts: Sequence[str]) -> str | None:
    """The value of the newest occurrence of `cue` in `texts` (ordered oldest first)."""
    compiled = [_regex(p) for p in cue.patterns]
    for text in reversed(texts):
        best: tuple[int, str] | None = None
        for regex in compiled:
            for m in regex.finditer(text):
                if best is None or m.start() > best[0]:
                    best = (m.start(), m.group(1).strip())
        if best is not None:
            return best[1]
    return None


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def pointers(texts: Sequence[str], question: str = "") -> list[str]:
    """Offloaded files and saved histories the context names, the likeliest first: by how
    many words of `question` the text naming the file shares (a preview that names the same
    company as the question), then by how recently it was named."""
    wanted = _words(question)
    found: dict[str, tuple[int, int]] = {}
    for age, text in enumerate(reversed(texts)):
        paths = [p.rstrip(".,;:)") for p in POINTER.findall(text)]
        if not paths:
            continue
        overlap = len(wanted & _words(text[:2_000])) if wanted else 0
        for path in paths:
            best, newest = found.get(path, (0, age))
            found[path] = (min(best, -overlap), newest)
    return sorted(found, key=found.__getitem__)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def strip_line_numbers(text: str) -> str:
    return "\n".join(LINE_NUMBER.sub("", line) for line in text.splitlines())


# -- extractive summaries ------------------------------------------------------------------


def extractive_summary(
    units: Sequence[tuple[str, str]], budget: int, counter: TokenCounter, *, head_lines: int = 2
) -> str:
    """Keep what a careful summarizer keeps, within `budget` tokens.

    `units` are (role, text), oldest first, the previous summary's lines included. The user's
    and the agent's own lines (instructions, notes, decisions, files written) come first,
    newest first, so recent intent wins and the oldest details fade cycle after cycle; then
    the first `head_lines` lines of each tool result, newest first. Raw tool output beyond its
    head is never kept. Kept lines come out in their original order."""
    candidates: list[tuple[int, int, str]] = []  # (priority, order, line)
    for role, text in units:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if role == "tool":
            lines = [ln[:240] for ln in lines[:head_lines]]
        priority = 0 if role in ("user", "assistant") else 1
        candidates += [
            (priority, len(candidates) + k, f"[{role}] {ln}") for k, ln in enumerate(lines)
        ]
    kept: list[tuple[int, str]] = []
    used = 0
    for _, order, line in sorted(candidates, key=lambda c: (c[0], -c[1])):
        cost = counter.count_text(line) + 1
        if used + cost > budget:
            continue
        kept.append((order, line))
        used += cost
    body = "\n".join(line for _, line in sorted(kept))
    return f"{SUMMARY_HEADER} ({used} tokens):\n{body}"


SUMMARY_HEADER = "Summary of the earlier conversation, extractive"
_HEADING = re.compile(r"^#{2,4} ([A-Za-z]+)[^\n]*$", re.MULTILINE)
_CALL = re.compile(r"^-> calls (\S+) \(id [^)]*\) with (.*)$")
_TAGGED = re.compile(r"^\[(user|assistant|tool)\] (.*)$")
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
          "tool": "tool", "summary": "summary", "previous": "summary"}  # fmt: skip


def summary_units(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """What a summarization request asks to condense, as (role, text) units, oldest first.

    The request renders the conversation as markdown blocks, one per message, each under a
    heading naming its role ("### User", "### Assistant", "### Tool ...", "### Summary" for the
    previous summary). A tool call becomes a line naming the call, or the file it wrote."""
    text = "\n".join(m.content for m in messages if SUMMARY_MARKER in m.content)
    previous = _between(text, "<previous-summary>", "</previous-summary>")
    units = _summary_lines(previous) if previous else []
    heads = [h for h in _HEADING.finditer(text) if h.group(1).lower() in _ROLES]
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        body = text[head.end() : end]
        body = body.split("</conversation>")[0].split("</summary-request>")[0].strip("\n")
        role = _ROLES[head.group(1).lower()]
        if role == "summary":
            units += _summary_lines(body)
            continue
        lines = [ln for ln in body.splitlines() if not ln.startswith("(result of ")]
        if role == "assistant":
            lines = [_call_line(ln) for ln in lines]
        units.append((role, "\n".join(lines)))
    return units


def _summary_lines(text: str) -> list[tuple[str, str]]:
    """A previous (extractive) summary back into units: its lines carry their roles."""
    units = []
    for line in text.splitlines():
        m = _TAGGED.match(line.strip())
        if m:
            units.append((m.group(1), m.group(2)))
        elif line.strip() and not line.startswith(SUMMARY_HEADER):
            units.append(("assistant", line.strip()))
    return units


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.rfind(end)
    return text[i + len(start) : j].strip("\n") if i >= 0 and j > i else ""


def _call_line(line: str) -> str:
    """A rendered tool call as a summarizer would keep it: only files written matter."""
    m = _CALL.match(line)
    if not m:
        return line
    name, raw = m.groups()
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        args = {}
    path = args.get("file_path") if isinstance(args, dict) else None
    if name in ("write_file", "edit_file") and path:
        return f"{'Wrote' if name == 'write_file' else 'Edited'} {path}."
    return ""  # the call itself is process, not content; its result has its own block


# -- prompt caching ------------------------------------------------------------------------


def cacheable(shared: int) -> int:
    if shared < CACHE_MIN_TOKENS:
        return 0
    return CACHE_MIN_TOKENS + (shared - CACHE_MIN_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


@dataclass(frozen=True)
class CallRecord:
    """One request the model served. `role`: main, subagent, summarizer or delegate."""

    role: str
    stream: str
    turn: str
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    tool_calls: int
    retrieval_calls: int = 0
    cost_usd: float = 0.0
    cache_write_tokens: int = 0


# -- the model -----------------------------------------------------------------------------


@dataclass
class _Cursor:
    turn: Turn
    index: int
    ids: str  # tool-call id prefix: stable, so offload paths are the same on every replay
    step: int = 0
    retrievals: int = 0
    delegating: bool = False
    calls: int = 0
    pending: str | None = None


def _cursor_state(cursor: _Cursor) -> dict[str, Any]:
    return {
        "turn": cursor.turn.key, "index": cursor.index, "ids": cursor.ids, "step": cursor.step,
        "retrievals": cursor.retrievals, "delegating": cursor.delegating,
        "calls": cursor.calls, "pending": cursor.pending,
    }  # fmt: skip


def _cursor_from(turn: Turn, state: Mapping[str, Any]) -> _Cursor:
    return _Cursor(
        turn=turn, index=state["index"], ids=state["ids"], step=state["step"],
        retrievals=state["retrievals"], delegating=state["delegating"], calls=state["calls"],
        pending=state["pending"],
    )  # fmt: skip


@dataclass
class _Stream:
    """Prompt-cache memory of one conversation: the previous request's items and tokens."""

    items: list[tuple[str, int]] = field(default_factory=list)


class SimulatedModel:
    """Deterministic model: follows `plan`, decides from what each request holds.

    Args:
        plan: the recording to follow; without one, the model only summarizes and otherwise
            replies that it has nothing planned.
        profile: window, tokenizer and prices (default: the `simulated` profile).
        seed: fixes the context-rot draws.
        rot: a `RotCurve` (e.g. `NOLIMA_LIKE`) or None for a reader that never misses.
        summary_budget: the most tokens a summary uses (less if the request's `max_tokens`
            is lower): about a page, what a model asked for a structured session summary
            typically writes.
        max_retrievals: grep calls allowed per question.
        delegate: a real model that acts at decision points instead of the simulated reader.
        max_usd: spending cap for the delegate's calls.
    """

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        profile: ModelProfile | None = None,
        seed: int = 0,
        rot: RotCurve | None = None,
        summary_budget: int = 1_500,
        max_retrievals: int = 3,
        delegate: Model | None = None,
        max_usd: float | None = None,
        name: str = "simulated",
    ) -> None:
        self.name = name
        self.profile = profile or get_profile("simulated")
        self.plan = plan or Plan()
        self.seed = seed
        self.rot = rot
        self.summary_budget = summary_budget
        self.max_retrievals = max_retrievals
        self.delegate = delegate
        self.max_usd = max_usd
        self.counter = TokenCounter(self.profile.encoding)
        self.ledger: list[CallRecord] = []
        self.overflows: list[tuple[str, int]] = []  # (turn key, request tokens)
        self._main: _Cursor | None = None
        self._tasks: dict[str, _Cursor] = {}
        self._streams: dict[str, _Stream] = {}
        self._fingerprints: dict[str, tuple[str, int]] = {}
        self._retrieval_ids: set[str] = set()
        self._turn_index = {t.key: i for i, t in enumerate(self.plan.turns)}

    def __repr__(self) -> str:
        return f"SimulatedModel(turns={len(self.plan.turns)}, rot={self.rot is not None})"

    @property
    def spent_usd(self) -> float:
        """What the delegate's own calls cost (the replayed steps cost nothing real)."""
        return sum(r.cost_usd for r in self.ledger if r.role == "delegate")

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        """The model's position in its plan, as JSON-serialisable data.

        It holds what decides the next responses: where the main conversation and each
        subagent task are in their turns (step, retrievals, calls made, a pending read), the
        prompt-cache memory of each conversation and the ids of the retrieval calls made.
        The ledger, overflows and token caches are not part of it: they are bookkeeping, not
        position. Take one after a call; `restore` it into a model with the same plan (say, in
        a new process resuming a killed run) and that model answers the next request exactly
        as this one would have."""
        return {
            "main": _cursor_state(self._main) if self._main else None,
            "tasks": {key: _cursor_state(c) for key, c in self._tasks.items()},
            "streams": {
                name: [list(item) for item in s.items] for name, s in self._streams.items()
            },
            "retrieval_ids": sorted(self._retrieval_ids),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a `checkpoint()`: the position it recorded replaces this model's.

        Raises ValueError when the checkpoint names turns or tasks this model's plan does
        not have at the recorded places (it was taken from a model following another plan)."""
        tasks = {t.key: (i, t) for i, t in enumerate(self.plan.tasks)}
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
            restored[key] = _cursor_from(tasks[key][1], cursor)
        self._tasks = restored
        self._streams = {
            name: _Stream([(str(fp), int(n)) for fp, n in items])
            for name, items in state["streams"].items()
        }
        self._retrieval_ids = set(state["retrieval_ids"])

    # -- entry point -----------------------------------------------------------------------

    async def request(
        self, messages: Sequence[Message], settings: ModelSettings, params: RequestParams
    ) -> ModelResponse:
        summarizing = SUMMARY_MARKER in params.system_prompt or any(
            SUMMARY_MARKER in m.content for m in messages[-2:]
        )
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
        if summarizing:
            budget = min(settings.max_tokens or self.summary_budget, self.summary_budget)
            units = summary_units(messages)
            response = ModelResponse(text=extractive_summary(units, budget, self.counter))
        elif cursor is None:
            response = ModelResponse(text="(simulated) Nothing is planned for this request.")
        else:
            response = self._advance(cursor, messages, params.system_prompt, tokens)
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
                        self._streams.pop("main", None)  # a week later the cache is long gone
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
        self, cursor: _Cursor, messages: Sequence[Message], system_prompt: str, tokens: int
    ) -> ModelResponse:
        texts: list[str] = []  # rendered only at decision points: replayed steps never read
        while cursor.step < len(cursor.turn.steps):
            step = cursor.turn.steps[cursor.step]
            if isinstance(step, Act):
                cursor.step += 1
                return self._calls(cursor, step.text, list(step.calls))
            texts = texts or [system_prompt, *(render(m) for m in messages)]
            if isinstance(step, Answer):
                return self._answer(cursor, step, texts, tokens)
            if isinstance(step, Remember):
                response = self._remember(cursor, step, messages)
                if response is not None:
                    return response
                continue
            cursor.step += 1
            if isinstance(step, ReportFindings):
                return ModelResponse(text=self._findings(step, texts))
            if isinstance(step, Compose):
                content = self._compose(step, texts)
                return self._write(cursor, step.note or f"Writing {step.path}.", step.path, content)
            path = self._skill_path(system_prompt, step.topic)
            if path is not None:
                return self._read(cursor, f"Reading the {step.topic} skill first.", path)
        return ModelResponse(text=cursor.turn.final)

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
        self, cursor: _Cursor, step: Answer, texts: list[str], tokens: int
    ) -> ModelResponse:
        value = find(step.cue, texts)
        missed = self.rot is not None and (
            _draw(self.seed, step.id, cursor.retrievals) >= self.rot.keep(tokens)
        )
        if missed:
            value = None
        if value is not None:
            cursor.step += 1
            return ModelResponse(text=value)
        budget = self.max_retrievals - cursor.retrievals
        if cursor.retrievals == 0 and budget > 0 and step.cue.grep:
            targets = pointers(texts, cursor.turn.prompt)[:budget]
            if targets:
                cursor.retrievals += len(targets)
                calls = [("grep", {**_grep_args(step.cue), "path": p}) for p in targets]
                response = self._calls(cursor, "Searching the saved files for it.", calls)
                self._retrieval_ids.update(c.id for c in response.tool_calls)
                return response
        cursor.step += 1
        return ModelResponse(text=DONT_KNOW)

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

    @staticmethod
    def _skill_path(system_prompt: str, topic: str) -> str | None:
        lines = system_prompt.splitlines()
        for i, line in enumerate(lines):
            chunk = " ".join(lines[i : i + 3])
            if topic.lower() in line.lower():
                m = SKILL_PATH.search(chunk)
                if m:
                    return m.group(1)
        return None

    @staticmethod
    def _preference(texts: Sequence[str]) -> str | None:
        for text in reversed(texts):
            found = PREFERENCE.findall(text)
            if found:
                return found[-1].rstrip(" .").lower()
        return None

    def _compose(self, step: Compose, texts: list[str]) -> str:
        sections = _template_sections(texts) or list(step.fallback_sections)
        preference = self._preference(texts) or ""
        bullets = "bullet" in preference.split(", not")[0]
        by_section: dict[str, list[str]] = {s: [] for s in sections}
        for fact in step.facts:
            value = find(fact.cue, texts)
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
        preference = self._preference([m.content for m in messages if m.role == "user"])
        if preference is None:
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
        if preference in existing.lower():
            return None
        content = f"{existing.rstrip() or '# Agent memory'}\n\n- Reports: {preference}.\n"
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
        items = self._items(messages, params)
        previous = self._streams.setdefault(stream, _Stream()).items
        shared = 0
        for (fp, n), (prev_fp, _) in zip(items, previous, strict=False):
            if fp != prev_fp:
                break
            shared += n
        self._streams[stream].items = items
        cached = min(cacheable(shared), tokens)
        out = self.counter.count_text(response.text) + sum(
            self.counter.count_text(json.dumps(c.arguments)) for c in response.tool_calls
        )
        usage = Usage(input_tokens=tokens, output_tokens=out, cached_tokens=cached, requests=1)
        retrieval = sum(c.id in self._retrieval_ids for c in response.tool_calls)
        self.ledger.append(
            CallRecord(
                role=role, stream=stream, turn=cursor.turn.key if cursor else "",
                input_tokens=tokens, cached_tokens=cached, output_tokens=out,
                tool_calls=len(response.tool_calls), retrieval_calls=retrieval,
                cost_usd=self.profile.cost(usage),
            )
        )  # fmt: skip
        stop: StopReason = "tool_calls" if response.tool_calls else "end_turn"
        return ModelResponse(
            text=response.text, tool_calls=response.tool_calls, usage=usage,
            stop_reason=stop, model_name=self.name,
        )  # fmt: skip

    def _items(self, messages: Sequence[Message], params: RequestParams) -> list[tuple[str, int]]:
        head = json.dumps(list(params.tools), sort_keys=True) + "\x00" + params.system_prompt
        items = [
            (_digest(head), self.counter.count_request(params.system_prompt, [], params.tools))
        ]
        for m in messages:
            fp = self._fingerprints.get(m.id)
            if fp is None:
                body = json.dumps(
                    [m.role, m.content, [[c.id, c.name, c.arguments] for c in m.tool_calls],
                     m.tool_call_id, m.name], sort_keys=True, default=str,
                )  # fmt: skip
                fp = self._fingerprints[m.id] = (_digest(body), self.counter.count_message(m))
            items.append(fp)
        return items


def _grep_args(cue: Cue) -> dict[str, Any]:
    """One grep for any of the cue's strings, showing the matching lines."""
    if len(cue.grep) == 1:
        return {"pattern": cue.grep[0], "output_mode": "content"}
    return {"pattern": "|".join(map(re.escape, cue.grep)), "regex": True, "output_mode": "content"}


def _decision_next(cursor: _Cursor) -> bool:
    steps = cursor.turn.steps
    return cursor.step < len(steps) and not isinstance(steps[cursor.step], Act)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _is_error(result: Message) -> bool:
    return result.is_error or result.content.lstrip().lower().startswith("error")


def _template_sections(texts: Sequence[str]) -> list[str]:
    """Section names from a template read into the context: the bullet list that follows a
    line mentioning "sections" (line numbers from `read_file` are ignored)."""
    for text in reversed(texts):
        if "sections" not in text.lower():
            continue
        lines = strip_line_numbers(text).splitlines()
        for i, line in enumerate(lines):
            if "sections" in line.lower() and line.lstrip().startswith("#"):
                out = []
                for nxt in lines[i + 1 :]:
                    s = nxt.strip()
                    if s.startswith("- "):
                        out.append(s[2:].strip())
                    elif out or (s and not s.startswith("-")):
                        break
                if out:
                    return out
    return []


__all__ = [
    "NOLIMA_LIKE",
    "SUMMARY_MARKER",
    "Act",
    "Answer",
    "BudgetExceededError",
    "CallRecord",
    "Compose",
    "Cue",
    "Fact",
    "Plan",
    "ReadSkill",
    "Remember",
    "ReportFindings",
    "RotCurve",
    "SimulatedModel",
    "Turn",
    "extractive_summary",
]
