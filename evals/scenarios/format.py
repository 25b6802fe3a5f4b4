"""The `ctxlab-scenario/1` format (evals/README.md "Recorded scenarios"), as one pydantic model:
the importer builds a `ScenarioFile` and dumps it, the loader (evals/scenarios/from_file.py)
validates a file into it, so the two cannot drift apart."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

import pydantic
import regex

from evals.simulated.plan import slots_in
from evals.simulated.reader import compile_cue

FORMAT = "ctxlab-scenario/1"


def reply_key(name: str, arguments: dict[str, Any]) -> str:
    """The key a recorded reply is found by: the tool and its arguments, canonically."""
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class _Spec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class CueSpec(_Spec):
    patterns: list[str] = []
    lookalikes: list[str] = []

    @pydantic.field_validator("patterns", "lookalikes")
    @classmethod
    def _regexes(cls, values: list[str]) -> list[str]:
        for pattern in values:
            _check_cue(pattern)
        return values


@functools.lru_cache(maxsize=8192)
def _check_cue(pattern: str) -> None:
    """Raise ValueError unless `pattern` compiles in both engines with a capture group. Cached:
    a suite's files repeat the same cues thousands of times, and `regex` compiles slowly."""
    try:
        compiled = re.compile(pattern)
        # The engine cues run on, compiled by the reader and kept in its cache, so a checked
        # cue is compiled once per process (`regex`'s own cache forgets what it holds once
        # more than 500 patterns have been compiled).
        compile_cue(pattern)
    except (re.error, regex.error) as exc:
        raise ValueError(f"{pattern!r} is not a valid regex: {exc}") from None
    if compiled.groups < 1:
        raise ValueError(f"{pattern!r} needs a capture group around the value")


class CallSpec(_Spec):
    tool: str
    arguments: dict[str, Any] = {}


class StepSpec(_Spec):
    note: str = ""
    calls: list[CallSpec] = pydantic.Field(min_length=1)
    slots: dict[str, CueSpec] = {}

    @pydantic.model_validator(mode="after")
    def _slots_match(self) -> StepSpec:
        used = slots_in([self.note, *(call.arguments for call in self.calls)])
        if used - set(self.slots):
            raise ValueError(f"slots used without a cue: {sorted(used - set(self.slots))}")
        if set(self.slots) - used:
            raise ValueError(f"slots never used: {sorted(set(self.slots) - used)}")
        return self


class TurnSpec(_Spec):
    id: str = pydantic.Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    text: str = pydantic.Field(min_length=1)
    steps: list[StepSpec] = []
    final: str = "Done."


class TaskSpec(_Spec):
    prompt: str = pydantic.Field(min_length=1)
    steps: list[StepSpec] = []
    final: str = "Done."


class ReplySpec(_Spec):
    tool: str
    arguments: dict[str, Any] = {}
    occurrence: int = pydantic.Field(default=1, ge=1)
    content: str


class ToolSpec(_Spec):
    name: str = pydantic.Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}


class SubagentSpec(_Spec):
    name: str
    description: str
    system_prompt: str = ""
    tools: list[str] = []


class FileSpec(_Spec):
    path: str = pydantic.Field(pattern=r"^/")
    content: str


class CheckSpec(_Spec):
    path: str = pydantic.Field(pattern=r"^/")
    contains: list[str] = []
    bullets: bool = False


class RoleSpec(_Spec):
    """What a probed value is in its source, so that a question (and a reader's search) can
    name it the way a person would, without quoting the text around it."""

    kind: Literal[
        "json_key", "table_cell", "listing", "command_output", "argument", "user_text", "truth"
    ]
    # The role in words, as the question states it ("the `payment_id` of the credit card in
    # user `mia_li_3668`'s `payment_methods`").
    phrase: str = pydantic.Field(min_length=1)
    # What a reader may search saved files with: key name, entity, symbol, file name, column,
    # command; never a step number.
    terms: list[str] = []
    # The value's shape (`id`, `number`, `path`, `date`, ...): what a search may match.
    shape: str = ""


class ProbeSpec(_Spec):
    id: str = pydantic.Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    kind: Literal["recall", "artifact", "continuation", "decision"]
    question: str = pydantic.Field(min_length=1)
    answer: str = pydantic.Field(min_length=1)
    after: str = "end"
    # Asked inside the turn `after` names, before its step `at_step` (0-based; the number of
    # its steps: before its final answer), where the recorded run used the value; without
    # it, once that turn has ended (evals/README.md "Recorded scenarios").
    at_step: int | None = pydantic.Field(default=None, ge=0)
    cue: CueSpec = CueSpec()
    distractors: list[str] = []
    source: Literal["tool", "user", "agent", "memory", "skill"] = "tool"
    provenance: dict[str, Any] = {}
    check: CheckSpec | None = None
    recorded_answer: str | None = None
    role: RoleSpec | None = None
    # The recorded user or agent restated the value between its source and its use, so it
    # stays in view whatever a strategy did to the source: scored apart.
    carried: bool = False

    @pydantic.model_validator(mode="after")
    def _answerable(self) -> ProbeSpec:
        if self.check is None and not self.cue.patterns and self.role is None:
            raise ValueError("a probe asked as a question needs a role, cue.patterns or a check")
        return self


class CompactionSpec(_Spec):
    """One compaction of the recorded harness (`source.compactions` of an imported trace): the
    `original` arm replays it. It sits `offset` messages before the first user or tool
    message whose text starts with `anchor` (its `occurrence`-th such message, 0-based);
    after it the model saw `summary`, the `kept` messages before it verbatim, and what
    follows. `lost`: the probes whose value it took out of the context."""

    anchor: str = pydantic.Field(min_length=1)
    occurrence: int = pydantic.Field(default=0, ge=0)
    offset: int = pydantic.Field(default=0, ge=0)
    kept: int = pydantic.Field(default=0, ge=0)
    summary: str = ""
    tokens_before: int | None = pydantic.Field(default=None, ge=0)
    tokens_after: int | None = pydantic.Field(default=None, ge=0)
    trigger: str | None = None
    turn: str = ""  # the turn it happened in
    lost: list[str] = []


class ModelSpec(_Spec):
    window: int = pydantic.Field(gt=1000)
    max_steps: int = pydantic.Field(default=100, ge=1)


class ScenarioFile(_Spec):
    format: Literal["ctxlab-scenario/1"]
    name: str = pydantic.Field(min_length=1)
    title: str = ""
    description: str = ""
    source: dict[str, Any] = {}
    model: ModelSpec
    params: dict[str, Any] = {}
    system_prompt: str = ""
    tools: list[ToolSpec] = []
    subagents: list[SubagentSpec] = []
    skills: list[FileSpec] = []
    memory: list[FileSpec] = []
    turns: list[TurnSpec] = pydantic.Field(min_length=1)
    tasks: list[TaskSpec] = []
    replies: list[ReplySpec] = []
    probe_counts: dict[str, int] = {}
    probes: list[ProbeSpec] = []
