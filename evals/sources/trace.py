"""The one shape every trace format is parsed into, whatever harness wrote it.

Parsers (one per format) produce `Trace`s; the importer turns a `Trace` into a
`ctxlab-scenario/1` file and the exporters write a ctxlab run as one. A parser keeps what the
original harness did (its usage, its compactions, its subagents) beside the conversation, so
the eval can show the original cost next to ctxlab's, and it records every record it could
not use in `skipped` instead of stopping at the first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Where:
    """Where a record came from, for messages that name a skipped or bad record."""

    file: str
    line: int | None = None  # 1-based line of a JSONL record, or of the record's start

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Skipped:
    """A record the parser could not use, and why (one line, for the import summary)."""

    where: Where
    reason: str


@dataclass
class TraceToolCall:
    """A call the model made. `arguments` is the decoded object; `raw_arguments` the text the
    model wrote when it was not valid JSON (then `arguments` is `{}`)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None


@dataclass
class TraceUsage:
    """What one model call cost in the original harness (any part may be unknown)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None


# Formats whose `input_tokens` leave out the cached part of the prompt (Anthropic's usage).
CACHE_APART = frozenset({"anthropic", "claude-code"})


def prompt_tokens(usage: TraceUsage | None, format: str) -> int | None:
    """The whole prompt a call sent, cached part included, in `format`'s spelling of usage."""
    if usage is None or usage.input_tokens is None:
        return None
    if format in CACHE_APART:
        return (
            usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_creation_tokens or 0)
        )
    return usage.input_tokens


@dataclass
class TraceMessage:
    """One message of the conversation, in the order the model saw them.

    A tool result is its own `tool` message naming the call it answers (`tool_call_id`),
    whatever the source format nests it in (Anthropic `tool_result` blocks, Responses
    `function_call_output` items, a mini-swe-agent user message with `<output>`)."""

    role: Role
    text: str = ""
    tool_calls: list[TraceToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # role "tool": the call this answers
    tool_name: str | None = None  # role "tool": the tool, when the format says it
    is_error: bool = False  # role "tool": the tool reported failure
    usage: TraceUsage | None = None  # role "assistant": the call that produced it
    model: str | None = None  # role "assistant": the model that wrote it
    where: Where | None = None
    # The id the format gives the record it came from (a Claude Code event's uuid), kept by
    # copies of the record: a resumed session's file repeats the records it resumes.
    record_id: str | None = None


@dataclass
class Compaction:
    """The original harness compacted its context here: before message `index` of
    `Trace.messages`, with this summary (empty when the format does not keep it). After it
    the model saw the system prompt, the summary, the `kept` messages just before `index`
    verbatim, then what follows. Tokens before and after, and what started it (`auto`,
    `manual`), where the format records them."""

    index: int
    summary: str = ""
    where: Where | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    kept: int = 0
    trigger: str | None = None


@dataclass
class ExpectedAction:
    """A ground-truth action the task expected (a benchmark's `{"name", "kwargs"}`)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class GroundTruth:
    """What the trace's task says was right, where the trace carries it."""

    actions: list[ExpectedAction] = field(default_factory=list)
    outcome: dict[str, Any] = field(default_factory=dict)  # reward, resolved, exit_status...
    patch_files: list[str] = field(default_factory=list)  # files a gold or submitted patch touches
    answer: str | None = None  # an expected final answer, if the task has one

    def __bool__(self) -> bool:
        return bool(self.actions or self.outcome or self.patch_files or self.answer)


@dataclass
class ToolDef:
    """A tool the original harness offered, when the trace lists them."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    """One agent run: its messages, what the harness offered and did, and what went wrong
    while reading it. `subagents` are runs the agent spawned (Claude Code sidechains), each
    naming in `parent_call_id` the call of the parent that started it, when known."""

    id: str
    format: str  # the parser's name: "openai-chat", "anthropic", "claude-code", ...
    source: str  # the file it was read from
    messages: list[TraceMessage] = field(default_factory=list)
    system: str = ""  # the system prompt, when the format keeps it apart from messages
    tools: list[ToolDef] = field(default_factory=list)
    model: str | None = None
    compactions: list[Compaction] = field(default_factory=list)
    subagents: list[Trace] = field(default_factory=list)
    parent_call_id: str | None = None
    ground_truth: GroundTruth = field(default_factory=GroundTruth)
    metadata: dict[str, Any] = field(default_factory=dict)  # the record's other fields
    skipped: list[Skipped] = field(default_factory=list)

    def original_usage(self) -> dict[str, Any]:
        """The original harness's totals, for `source.original` of the scenario file: only the
        keys the trace has, subagents included."""
        totals: dict[str, Any] = {}
        for trace in (self, *self.subagents):
            for message in trace.messages:
                if message.usage is None:
                    continue
                for key in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_tokens",
                    "cache_creation_tokens",
                    "cost_usd",
                ):
                    value = getattr(message.usage, key)
                    if value is not None:
                        totals[key] = totals.get(key, 0) + value
        totals["compactions"] = len(self.compactions) + sum(
            len(sub.compactions) for sub in self.subagents
        )
        if self.model:
            totals["model"] = self.model
        return totals
