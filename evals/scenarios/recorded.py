"""`ctxlab scenarios import`: a recorded run (its thread in a ctxlab store) as a replayable
scenario file (format `ctxlab-scenario/1`, evals/README.md "Recorded scenarios").

What the store holds becomes the scenario: the user turns; the agent's steps as intentions
(the tool it called, the arguments, the note it wrote), where every figure, name or phrase
it wrote down that came from a tool result is a `{{slot}}` with a cue (evals/scenarios/
cues.py), so a replay writes what *its* context still shows; the recorded tool results as
the tools' replies; the subagents' tasks, the skills and the memory it started with; the
window and the step limit; and probes derived from the run (evals/scenarios/
probes_from_run.py). Every string passes through a `Redactor` before it is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from evals.scenarios.cues import Found, Source, find_cue, spans
from evals.scenarios.redact import Redactor
from harness.files.storage import whole_content

if TYPE_CHECKING:
    from harness.store import Reader

FORMAT = "ctxlab-scenario/1"
# Tools the harness itself provides: a replay runs them for real on its own store.
BUILTIN_TOOLS = frozenset(
    {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete", "task"}
)
# Where the agent writes things down: its note, and the text it puts in files.
WRITTEN_ARGS = {"write_file": ("content",), "edit_file": ("new_string",)}
READ_ONLY_TOOLS = frozenset({"read_file", "grep", "glob", "ls"})
_SEGMENT = re.compile(r"[\n;:()\[\]]|, |\. ")
_FIGURE = re.compile(r"(?<![\w.\-/])-?\d[\d,]*(?:\.\d+)?(?![\w\-/]|\.\d)")


class RunNotFoundError(LookupError):
    """The run or thread to import is not in the store (the message says which)."""


@dataclass
class Fact:
    """A value the agent wrote down that it had read in a tool result."""

    slot: str
    value: str
    found: Found
    read_turn: int
    uses: list[tuple[int, str]] = field(default_factory=list)  # (turn, where)
    decision: str | None = None  # the decision sentence it is the reason of, if any
    context: str = ""  # the line it was first written in


@dataclass
class RecordedTurn:
    """One user turn of the run and what the agent did in answer."""

    id: str
    index: int
    text: str
    steps: list[dict[str, Any]]
    final: str
    run_id: str
    question: bool = False
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Recording:
    """Everything read from the store, before probes are derived."""

    turns: list[RecordedTurn]
    facts: list[Fact]
    sources: list[Source]
    files: dict[str, tuple[int, str]]  # path -> (turn last written, final content)
    notes: dict[str, tuple[int, str]]  # path -> (turn, the note of the write)
    user_said: list[tuple[str, int, str, str]] = field(default_factory=list)


# -- reading the store ---------------------------------------------------------------------


def resolve(con: Reader, run_id: str | None, thread: str | None) -> tuple[str, str]:
    """(thread, run id) of what to import: a run (a subagent's resolves to its parent's
    thread), a `ctxlab run` session id or a thread id; or `thread`, whose first run names
    it."""
    if run_id is not None:
        row = con.run(run_id)
        if row is None and _has_table(con, "flow_runs"):
            # A `ctxlab run` session (flows' own table): its first turn's run.
            found = con.query(
                "SELECT f.run_id, f.thread_id, NULL AS parent_run_id FROM flow_runs f "
                "WHERE f.session_id = ? ORDER BY f.turn LIMIT 1",
                [run_id],
            )
            row = found[0] if found else None
        if row is None:  # a thread id, as `ctxlab run` prints it: its first run
            row = con.first_run_of_thread(run_id)
        if row is None:
            raise RunNotFoundError(f"no run, session or thread {run_id!r} in the store")
        while row["parent_run_id"] is not None:
            row = con.run(row["parent_run_id"])
        if thread is not None and row["thread_id"] != thread:
            raise RunNotFoundError(
                f"run {run_id!r} is on thread {row['thread_id']!r}, not {thread!r}"
            )
        return row["thread_id"], row["run_id"]
    assert thread is not None
    runs = con.thread_runs(thread)
    if not runs:
        raise RunNotFoundError(f"no thread {thread!r} in the store")
    return thread, runs[0]["run_id"]


def _has_table(con: Reader, name: str) -> bool:
    return any(r["name"] == name for r in con.query("SHOW TABLES"))


def _messages(con: Reader, thread: str, redactor: Redactor) -> list[dict[str, Any]]:
    """The thread's messages, redacted as they are read: cues and slots are then built from
    the redacted text, so no pattern can carry what the redaction took out."""
    rows = con.thread_messages(thread)
    for row in rows:
        row["text"] = redactor.text(row["text"])
        if row["tool_calls"]:
            row["tool_calls"] = json.dumps(redactor.value(json.loads(row["tool_calls"])))
    return rows


def _calls(row: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (c["id"], c["name"], c.get("arguments") or {})
        for c in json.loads(row["tool_calls"] or "[]")
    ]


# -- the agent's steps as intentions -------------------------------------------------------


class Planner:
    """Turns recorded assistant messages into plan steps, slotting what was read."""

    def __init__(self, literal: Sequence[str]) -> None:
        self.literal = literal  # replayed verbatim: the system prompt first, the user turns
        self.facts: dict[str, Fact] = {}
        # (value, turn, where, line) of what the user said and the agent wrote down later
        self.user_said: list[tuple[str, int, str, str]] = []

    def step(
        self, note: str, calls: list[tuple[str, dict[str, Any]]], sources: list[Source],
        turn: int, where: str,
    ) -> dict[str, Any]:  # fmt: skip
        slots: dict[str, Found] = {}
        self._user_uses(note, calls, sources, turn, where)
        note = self._slotted(note, sources, turn, where, slots)
        out_calls = []
        for name, args in calls:
            args = dict(args)
            for key in WRITTEN_ARGS.get(name, ()):
                if isinstance(args.get(key), str):
                    args[key] = self._slotted(args[key], sources, turn, f"{where} {name}", slots)
            out_calls.append({"tool": name, "arguments": args})
        step: dict[str, Any] = {"note": note, "calls": out_calls}
        if slots:
            step["slots"] = {
                name: {"patterns": list(f.cue.patterns), "lookalikes": list(f.cue.lookalikes)}
                for name, f in slots.items()
            }
        return step

    def _user_uses(
        self, note: str, calls: list[tuple[str, dict[str, Any]]], sources: list[Source],
        turn: int, where: str,
    ) -> None:  # fmt: skip
        """What the agent wrote down now that the user had said in an earlier turn."""
        said = [s.text for s in sources if s.kind == "user" and s.turn < turn]
        if not said:
            return
        texts = [note, *(str(a.get(k, "")) for n, a in calls for k in WRITTEN_ARGS.get(n, ()))]
        for text in texts:
            for value in candidates(text, said, self.literal[:1]):
                at = spans(value, text)
                self.user_said.append((value, turn, where, _line_around(text, at[0])))

    def _slotted(
        self, text: str, sources: list[Source], turn: int, where: str, slots: dict[str, Found]
    ) -> str:
        chosen: list[tuple[int, int, Fact]] = []
        for value in self._candidates(text, sources):
            at = spans(value, text)
            fact = self._fact(value, sources, turn, _line_around(text, at[0]) if at else "")
            if fact is None:
                continue
            for start in spans(value, text):
                end = start + len(value)
                if all(end <= s or start >= e for s, e, _ in chosen):
                    chosen.append((start, end, fact))
        if not chosen:
            return text
        out, last = [], 0
        for start, end, fact in sorted(chosen, key=lambda c: c[0]):
            out += [text[last:start], "{{" + fact.slot + "}}"]
            last = end
            slots[fact.slot] = fact.found
            fact.uses.append((turn, where))
            fact.decision = fact.decision or _decision_of(text, start)
        out.append(text[last:])
        return "".join(out)

    def _candidates(self, text: str, sources: list[Source]) -> list[str]:
        """Values in `text` that a tool result showed and the user or the prompt did not."""
        return candidates(text, [s.text for s in sources if s.kind == "tool"], self.literal)

    def _fact(self, value: str, sources: list[Source], turn: int, context: str) -> Fact | None:
        fact = self.facts.get(value)
        found = find_cue(value, sources, context)
        if found is None or "tool" not in found.kinds:
            return fact
        if not found.unique and not _FIGURE.fullmatch(value):
            # A name no label tells apart (a column of firm names): a slot would copy
            # whichever firm the reader met first. Figures are slotted whatever the label.
            return fact
        if fact is None:
            read = min(s.turn for s in sources if s.kind == "tool" and spans(value, s.text))
            fact = Fact(f"fact_{len(self.facts) + 1}", value, found, read, context=context)
            self.facts[value] = fact
        else:
            fact.found = found  # every form it has been written in so far
        return fact


def candidates(text: str, shown: Sequence[str], excluded: Sequence[str]) -> list[str]:
    """Values in `text` (names, clauses of four words or more, figures) that one of `shown`
    holds and none of `excluded` does: longest first, so a phrase wins over a figure in it."""

    def taken(value: str) -> bool:
        if any(value in t for t in excluded):
            return False
        return any(spans(value, t) for t in shown)

    found: dict[str, None] = {}
    for segment in _SEGMENT.split(text):
        words = segment.strip(" .,-*#_\t").split()
        for k in range(len(words), 0, -1):
            phrase = " ".join(words[-k:])
            if _phrase_like(words[-k:]) and taken(phrase):
                found[phrase] = None
                break
    for m in _FIGURE.finditer(text):
        value = m.group()
        if len(value.lstrip("-")) >= 2 and taken(value):
            found[value] = None
    return sorted(found, key=len, reverse=True)


def _line_around(text: str, start: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    return text[line_start : len(text) if line_end < 0 else line_end]


def _phrase_like(words: list[str]) -> bool:
    """A name (capitalised words) or a clause of four words or more: what an agent copies."""
    text = " ".join(words)
    if len(words) >= 4 and len(text) >= 20:
        return True
    named = all(w[:1].isupper() for w in words) and any(c.islower() for c in text)
    return named and len(words) <= 4 and len(text) >= 4


# A value after one of these, in a sentence of the agent's, is the reason of a decision.
_DECISION = re.compile(r"(?i)\b(reason|because|due to|since)\b")


def _decision_of(text: str, start: int) -> str | None:
    """The decision sentence a value at `start` gives the reason of (it follows a decision
    marker in the same sentence), else None."""
    line_start = max(text.rfind("\n", 0, start), text.rfind(". ", 0, start)) + 1
    head = text[line_start:start]
    markers = list(_DECISION.finditer(head))
    if not markers:
        return None
    return head[: markers[-1].start()].strip(" -;:,")


# -- the import --------------------------------------------------------------------------


def read_recording(con: Reader, thread: str, system_prompt: str, redactor: Redactor) -> Recording:
    messages = _messages(con, thread, redactor)
    runs = con.thread_runs(thread)
    order = {r["run_id"]: i for i, r in enumerate(runs)}
    user_texts = [m["text"] for m in messages if m["role"] == "user"]
    planner = Planner([system_prompt, *user_texts])
    sources: list[Source] = []
    turns: list[RecordedTurn] = []
    calls_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    files: dict[str, tuple[int, str]] = {}
    notes: dict[str, tuple[int, str]] = {}
    current: RecordedTurn | None = None
    for m in messages:
        if m["run_id"] not in order:
            continue
        if m["role"] == "user":
            current = RecordedTurn(f"u{len(turns):03d}", len(turns), m["text"], [], "", m["run_id"])
            turns.append(current)
            sources.append(Source(f"turn {current.index} user message", "user", m["text"],
                                  current.index))  # fmt: skip
            continue
        if current is None:
            continue
        if m["role"] == "tool":
            name, args = calls_by_id.get(m["tool_call_id"] or "", (m["name"] or "tool", {}))
            read = f" {args['file_path']}" if name == "read_file" and "file_path" in args else ""
            ref = f"turn {current.index} {name}{read} result ({m['message_id']})"
            sources.append(Source(ref, "tool", m["text"], current.index))
            continue
        calls = _calls(m)
        if not calls:
            current.final = m["text"]
            sources.append(Source(f"turn {current.index} reply", "agent", m["text"], current.index))
            continue
        plain = [(n, a) for _, n, a in calls]
        for call_id, name, args in calls:
            calls_by_id[call_id] = (name, args)
        current.calls += plain
        where = f"turn {current.index} step {len(current.steps) + 1}"
        current.steps.append(planner.step(m["text"], plain, sources, current.index, where))
        for name, args in plain:
            path = args.get("file_path")
            if name in WRITTEN_ARGS and isinstance(path, str):
                notes[path] = (current.index, m["text"])
                files[path] = (current.index, "")
        sources.append(Source(f"{where} note", "agent", _rendered(m["text"], plain),
                              current.index))  # fmt: skip
    for turn in turns:
        turn.question = _is_question(turn)
    return Recording(turns, list(planner.facts.values()), sources, files, notes, planner.user_said)


def _rendered(note: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """A step as a replay shows it to the reader: the note, then each call's arguments."""
    parts = [note] if note else []
    for name, args in calls:
        parts.append(f"[{name}]\n" + "\n".join(f"{k}: {v}" for k, v in args.items()))
    return "\n".join(parts)


def _is_question(turn: RecordedTurn) -> bool:
    """A user question the agent answered from what it had (at most searching its files):
    the recorded answer is what a replay is scored against."""
    first = turn.text.strip().split("\n", 1)[0].strip()
    return (
        first.endswith("?")
        and all(name in READ_ONLY_TOOLS for name, _ in turn.calls)
        and 0 < len(turn.final) <= 300
    )


def read_tasks(con: Reader, parent_runs: Sequence[str], redactor: Redactor) -> list[dict[str, Any]]:
    """The subagents' tasks as plan turns, recognised by their text; each slots what its
    own tool results showed."""
    tasks: list[dict[str, Any]] = []
    if not parent_runs:
        return tasks
    subs = con.child_runs(parent_runs)
    seen: set[str] = set()
    for sub in subs:
        messages = _messages(con, sub["thread_id"], redactor)
        users = [m for m in messages if m["role"] == "user"]
        if not users:
            continue
        prompt = users[0]["text"]
        key = prompt.strip().split("\n", 1)[0].strip()
        if key in seen:
            continue  # the same task twice: a replay follows the first recording
        seen.add(key)
        planner = Planner([prompt])
        sources = [Source("task prompt", "user", prompt, 0)]
        steps: list[dict[str, Any]] = []
        final = ""
        for m in messages[1:]:
            if m["role"] == "tool":
                sources.append(Source(f"task {len(tasks)} {m['name']} result ({m['message_id']})",
                                      "tool", m["text"], 0))  # fmt: skip
            elif m["role"] == "assistant":
                calls = [(n, a) for _, n, a in _calls(m)]
                if calls:
                    steps.append(planner.step(m["text"], calls, sources, 0, f"task {len(tasks)}"))
                    sources.append(Source("task note", "agent", _rendered(m["text"], calls), 0))
                else:
                    final = m["text"]
        config = json.loads(sub["config"] or "{}")
        tasks.append({"subagent": str(sub["agent"]).rsplit("/", 1)[-1], "prompt": prompt,
                      "steps": steps, "final": final or "Done.",
                      "system_prompt": config.get("system_prompt"),
                      "tools": [t["name"] for t in config.get("tools", [])
                                if t["name"] not in BUILTIN_TOOLS]})  # fmt: skip
    return tasks


def read_replies(con: Reader, threads: Sequence[str], redactor: Redactor) -> list[dict[str, Any]]:
    """Every recorded result of the agent's own tools, keyed by tool, arguments and
    occurrence, in the order they were made."""
    replies: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for thread in threads:
        messages = _messages(con, thread, redactor)
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            for call_id, name, args in _calls(m):
                pending[call_id] = (name, args)
            if m["role"] == "tool" and m["tool_call_id"] in pending:
                name, args = pending.pop(m["tool_call_id"])
                if name in BUILTIN_TOOLS:
                    continue
                key = reply_key(name, args)
                counts[key] = counts.get(key, 0) + 1
                replies.append({"tool": name, "arguments": args, "occurrence": counts[key],
                                "content": m["text"]})  # fmt: skip
    return replies


def reply_key(name: str, arguments: dict[str, Any]) -> str:
    return name + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def import_run(
    db: str,
    run_id: str | None = None,
    *,
    thread: str | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """The scenario document (a dict in the `ctxlab-scenario/1` format) of the thread that
    `run_id` (or `thread`) names in the store `db`. Raises `RunNotFoundError` when the store has
    no such run or thread."""
    from evals.scenarios.probes_from_run import derive_probes
    from harness.store import read_store

    if run_id is None and thread is None:
        raise ValueError("give a run id or a thread")
    redactor = redactor or Redactor()
    if not Path(db).is_file():
        raise RunNotFoundError(f"no store at {db}")
    con = read_store(db)
    try:
        thread_id, first = resolve(con, run_id, thread)
        runs = con.thread_runs(thread_id)
        config = redactor.value(json.loads(runs[0]["config"] or "{}"))
        system_prompt = str(config.get("system_prompt") or "")
        recording = read_recording(con, thread_id, system_prompt, redactor)
        run_ids = [r["run_id"] for r in runs]
        tasks = read_tasks(con, run_ids, redactor)
        task_threads = [r["thread_id"] for r in con.child_runs(run_ids)]
        replies = read_replies(con, [thread_id, *task_threads], redactor)
        skills = redactor.value(_files(con, "/skills/"))
        memory = redactor.value(_memory_at(con, runs[0]["started_at"]))
        for path in recording.files:
            turn, _ = recording.files[path]
            recording.files[path] = (turn, redactor.text(_file_text(con, thread_id, path)))
    finally:
        con.close()
    probes = derive_probes(recording)  # first: a question it cannot score stays a turn
    tools = [t for t in config.get("tools", []) if t["name"] not in BUILTIN_TOOLS]
    if not tools:
        tools = _tools_from_calls(replies)
    used = {t["subagent"] for t in tasks}
    subagents = [
        {"name": s["name"], "description": s["description"],
         "system_prompt": next((t["system_prompt"] for t in tasks if t["subagent"] == s["name"]
                                and t["system_prompt"]), ""),
         "tools": next((t["tools"] for t in tasks if t["subagent"] == s["name"]), [])}
        for s in config.get("subagents", []) if s["name"] in used
    ]  # fmt: skip
    counts = {k: sum(p["kind"] == k for p in probes) for k in PROBE_KINDS}
    doc: dict[str, Any] = {
        "format": FORMAT,
        "name": f"recorded:{first}",
        "title": f"Recorded run {first}",
        "description": f"Imported from thread {thread_id} of {Path(db).name}: "
        f"{len(recording.turns)} user turns, {len(replies)} recorded tool replies.",
        "source": {
            "run_id": first,
            "thread": thread_id,
            "runs": run_ids,
            "agent": runs[0]["agent"],
            "model": runs[0]["model"],
            "strategy": runs[0]["strategy"],
            "params": config.get("strategy_params", {}),
            "created_at": str(runs[0]["started_at"]),
            "db": Path(db).name,  # the name only: where it lives is the user's business
            "imported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },  # fmt: skip
        "model": {
            "window": config.get("context_window") or _profile_window(runs[0]["model"]),
            "max_steps": int(config.get("max_steps") or 100),
        },
        "params": dict(config.get("strategy_params", {})),
        "system_prompt": system_prompt,
        "tools": tools,
        "subagents": subagents,
        "skills": skills,
        "memory": memory,
        "turns": [_turn_doc(t) for t in recording.turns if not t.question],
        "tasks": [{k: t[k] for k in ("prompt", "steps", "final")} for t in tasks],
        "replies": replies,
        "probe_counts": counts,
        "probes": probes,
    }
    # Everything was redacted as it was read; this pass catches what joining texts made
    # (a description naming the store's path), and the count covers both.
    redacted = redactor.value(doc)
    redacted["source"]["redactions"] = redactor.count
    return redacted


PROBE_KINDS = ("recall", "artifact", "continuation", "decision")


def _turn_doc(turn: RecordedTurn) -> dict[str, Any]:
    return {"id": turn.id, "text": turn.text, "steps": turn.steps, "final": turn.final}


def _files(con: Reader, prefix: str) -> list[dict[str, str]]:
    rows = con.shared_text_files(prefix)
    return [{"path": r["path"], "content": _text(con, r["content"], r["blob_id"])} for r in rows]


def _memory_at(con: Reader, started: Any) -> list[dict[str, str]]:
    """Memory files as they stood when the thread's first run started."""
    return con.memory_at(started)


def _file_text(con: Reader, thread: str, path: str) -> str:
    row = con.thread_file(thread, path)
    if row is None or not row["is_text"]:
        return ""
    return _text(con, row["content"], row["blob_id"])


def _text(con: Reader, inline: bytes | None, blob_id: str | None) -> str:
    """A text file's content, whether inline or in chunks (files over 256 KiB)."""
    return whole_content(con.con, inline, blob_id).decode("utf-8", errors="replace")


def _profile_window(model: str) -> int:
    from harness.profiles import get_profile

    try:
        return int(get_profile(model).context_window or 128_000)
    except LookupError:
        return 128_000


def _tools_from_calls(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool definitions for a run recorded before runs kept them: names and argument names."""
    tools: dict[str, dict[str, Any]] = {}
    for r in replies:
        props = tools.setdefault(r["tool"], {})
        props.update({k: {} for k in r["arguments"]})
    return [
        {"name": n, "description": f"The recorded {n} tool.",
         "parameters": {"type": "object", "properties": p}}
        for n, p in tools.items()
    ]  # fmt: skip


# -- writing the file ----------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def check_scenario_path(path: str | Path, *, force: bool = False) -> Path:
    """`path` as a place to write a scenario file: it must end in .yaml or .yml (the names
    `ctxlab eval --scenario` loads), and not exist unless `force`. Raises `ValueError` or
    `FileExistsError` naming the problem."""
    out = Path(path)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(
            f"{out}: a scenario file must end in .yaml or .yml (`ctxlab eval --scenario` "
            f"loads only those), e.g. {out.with_suffix('.yaml')}"
        )
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists: pass --force to overwrite it")
    return out


def write_scenario(doc: dict[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Writes `doc` to `path` (which must end in .yaml or .yml, the names `ctxlab eval`
    loads) all at once: the text goes to a temporary file beside it, which then takes the
    name, so a full disk or a kill never leaves a truncated file nor harms the one there.
    Raises `FileExistsError` when `path` exists, unless `force`."""
    out = check_scenario_path(path, force=force)
    header = (
        f'# {FORMAT}: a recorded run as a replayable scenario (evals/README.md, "Recorded\n'
        '# scenarios"). Edit or add probes freely; `ctxlab eval --scenario THIS_FILE`.\n'
    )
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    data = (header + text).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for the temporary file; this one is shared
        _take_name(tmp, out, force)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def _take_name(tmp: str, out: Path, force: bool) -> None:
    """Renames `tmp` to `out`; without `force`, only if `out` still does not exist (a hard
    link fails atomically when it does; a filesystem without hard links is checked first)."""
    if force:
        os.replace(tmp, out)
        return
    try:
        os.link(tmp, out)
    except FileExistsError:
        raise FileExistsError(f"{out} exists: pass --force to overwrite it") from None
    except OSError:
        if out.exists():
            raise FileExistsError(f"{out} exists: pass --force to overwrite it") from None
        os.replace(tmp, out)
        return
    os.unlink(tmp)
