"""Trace files of other harnesses, parsed into `Trace`s (evals/sources/trace.py), one module
per format. `read_traces` is the one entry point: it recognises the format from the head of
the file (`detect_format`) unless told, and yields every trace the file holds; a folder's
files come from `iter_trace_files`.

Every parser keeps the sound part of a file and records each record it could not use in
`Trace.skipped` (file and line); a file with nothing sound raises `TraceFormatError` whose
message says why in one line, naming the file.

What every trace read here guarantees, whatever the format: the system prompt is
`Trace.system` (leading system/developer messages are moved there; a later one stays a
`system` message); every tool call has exactly one `tool` message answering it, after it,
and every `tool` message answers an earlier call (`source.finish` drops the rest, recorded
in `skipped`); call ids are unique within a trace; compaction indexes point into
`messages` as they finally are; no trace has zero messages.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from evals.errors import TraceFormatError
from evals.sources.formats.records import check_text
from evals.sources.formats.resemble import strict_steps
from evals.sources.formats.source import finish
from evals.sources.trace import Skipped, Trace, Where

__all__ = ["FORMATS", "detect_format", "iter_trace_files", "read_folder", "read_traces"]

FORMATS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "claude-code",
    "mini-swe-agent",
    "otel-genai",
    "langchain",
    "langsmith",
    "swe-agent",
    "inspect-ai",
    "gemini-cli",
    "openhands",
)

HEAD_BYTES = 64 * 1024
ZIP_MAGIC = b"PK\x03\x04"
TAIL_BYTES = 4 * 1024  # mini-swe-agent writes `trajectory_format` last
# A file whose head and tail show no sign is read on, block by block, this far: one long
# first observation (a `find` listing) can fill a SWE-agent trajectory's first 64 KiB.
SCAN_BYTES = 32 * 1024 * 1024
_BLOCK = 1024 * 1024
_OVERLAP = 1024  # a sign cut by a block's end is whole in the next block


# No lookbehind for the backslash of an escaped quote: a pattern that starts with one loses
# re's literal-prefix scan and is ~20x slower on a 64 KB head; `_signed` checks it instead.
def _key(name: str) -> re.Pattern[str]:
    return re.compile(rf'"{name}"\s*:')


def _typed(*names: str) -> re.Pattern[str]:
    return re.compile(rf'"type"\s*:\s*"({"|".join(names)})"')


def _signed(sign: re.Pattern[str], text: str) -> bool:
    """True when `sign` occurs in `text` other than inside an escaped string (`\\"...`)."""
    return any(m.start() == 0 or text[m.start() - 1] != "\\" for m in sign.finditer(text))


# In order: a Claude Code event holds Anthropic blocks, a Responses item may hold a role.
_SIGNS: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = (
    ("otel-genai", (_key("resourceSpans"), _key("scopeSpans"))),
    (
        "inspect-ai",
        (
            re.compile(
                r'"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"(success|error|cancelled|started)"'
            ),
            re.compile(r'"event"\s*:\s*"(model|compaction|sample_init)"'),
        ),
    ),
    (
        "gemini-cli",
        (
            _key("projectHash"),
            re.compile(r'"\$rewindTo"\s*:'),
            re.compile(r'"type"\s*:\s*"gemini"'),
        ),
    ),  # fmt: skip
    (
        "openhands",
        (_key("tool_call_metadata"), re.compile(r'"source"\s*:\s*"(agent|environment)"')),
    ),  # fmt: skip
    # A LangSmith run's inputs hold LangChain messages, which may hold Anthropic blocks.
    ("langsmith", (re.compile(r'"run_type"\s*:\s*"(llm|chain|tool|retriever|prompt|parser)"'),)),
    (
        "langchain",
        (
            re.compile(r'"lc"\s*:\s*1\s*,\s*"type"\s*:\s*"constructor"'),
            re.compile(r'"type"\s*:\s*"(human|ai|tool)"\s*,\s*"data"\s*:'),
            re.compile(r'"type"\s*:\s*"(human|ai)"\s*,\s*"content"\s*:'),
        ),
    ),
    (
        "mini-swe-agent",
        (re.compile(r'"trajectory_format"\s*:\s*"mini-swe-agent'), _key("mini_version")),
    ),
    (
        "swe-agent",
        (
            re.compile(r'"message_type"\s*:\s*"(system_prompt|observation|action|thought)"'),
            re.compile(r'"environment"\s*:\s*"swe_main"|"agent"\s*:\s*"primary"'),
            _key("execution_time"),
            _key("replay_config"),
        ),
    ),
    # A session log links events by parentUuid; `claude -p --output-format stream-json`
    # marks a subagent's events by the Task call instead.
    ("claude-code", (_key("parentUuid"), _key("leafUuid"), _key("parent_tool_use_id"))),
    (
        "openai-responses",
        (
            _typed(
                "function_call",
                "function_call_output",
                "input_text",
                "output_text",
                "response_item",  # a Codex CLI rollout line
            ),
        ),
    ),
    # A bare list of mini-swe-agent messages has no `trajectory_format`: its v2 action fence
    # or an observation opening a user message says it (a Chat tool message may hold one too).
    (
        "mini-swe-agent",
        (
            re.compile(r"```mswea_bash_command|<mswea_bash_command>"),
            re.compile(r'"role"\s*:\s*"user"\s*,\s*"content"\s*:\s*"<returncode>'),
        ),
    ),
    # LiteLLM keeps a reply's reasoning beside a Chat message in `thinking_blocks`, typed
    # "thinking" as Anthropic's blocks are (a tau2-bench results file's `raw_data`); an
    # Anthropic message has no such field.
    ("openai-chat", (_key("thinking_blocks"),)),
    (
        "anthropic",
        (_typed("tool_use", "tool_result", "thinking", "redacted_thinking"), _key("tool_use_id")),
    ),
    ("openai-chat", (_key("role"),)),
)

_MODULES = {name: name.replace("-", "_") for name in FORMATS}


def detect_format(path: Path) -> str:
    """The format of the trace file `path`, from its head (and its last few kilobytes).
    Raises `TraceFormatError` naming the file when it is binary or recognisably none."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
        size = f.seek(0, 2)
        tail = b""
        if size > HEAD_BYTES:
            f.seek(max(HEAD_BYTES, size - TAIL_BYTES))
            tail = f.read()
    if head.startswith(ZIP_MAGIC):  # an Inspect `.eval` log is a zip archive
        return _archive_format(path)
    check_text(path, head)
    text = head.decode("utf-8", errors="replace") + tail.decode("utf-8", errors="replace")
    start = text.lstrip("\ufeff \t\r\n")[:1]
    if start not in ("{", "["):
        what = "an empty file" if not start else f"not JSON or JSONL (starts with {start!r})"
        raise TraceFormatError(f"{path}: {what}, not a trace")
    name = _sign_of(text) or _sign_further(path, size)
    if name:
        return name
    raise TraceFormatError(
        f"{path}: JSON, but no known trace format (no messages with roles, no spans); "
        f"give --format, one of {', '.join(FORMATS)}"
    )


def _sign_of(text: str) -> str | None:
    """The first format in `_SIGNS` whose sign `text` shows, or None."""
    for name, signs in _SIGNS:
        if any(_signed(sign, text) for sign in signs):
            return name
    return None


def _sign_further(path: Path, size: int) -> str | None:
    """The format the part of `path` between its head and tail shows first, read a block at a
    time up to `SCAN_BYTES`, or None."""
    stop = min(size - TAIL_BYTES, HEAD_BYTES + SCAN_BYTES)
    with open(path, "rb") as f:
        at = HEAD_BYTES - _OVERLAP
        while at < stop:
            f.seek(at)
            name = _sign_of(f.read(min(_BLOCK, stop - at)).decode("utf-8", errors="replace"))
            if name:
                return name
            at += _BLOCK - _OVERLAP
    return None


def _lone_key(name: str, head: str) -> str:
    """The key (`"execution_time"`) format `name` was recognised by in `head`, when one bare
    key of its signs was all `head` held of them (so a refusal can name it), else ""."""
    found = [sign for n, signs in _SIGNS if n == name for sign in signs if _signed(sign, head)]
    if len(found) != 1:
        return ""
    m = re.fullmatch(r'"(\w+)"\\s\*:', found[0].pattern)
    return f'"{m[1]}"' if m else ""


def _archive_format(path: Path) -> str:
    """`inspect-ai` for a zip archive holding an Inspect log's `header.json` or samples."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()[:10_000]
    except (zipfile.BadZipFile, OSError) as exc:
        raise TraceFormatError(f"{path}: a damaged zip archive, not a trace ({exc})") from None
    if "header.json" in names or any(n.startswith("samples/") for n in names):
        return "inspect-ai"
    raise TraceFormatError(f"{path}: a zip archive, but not an Inspect .eval log")


def read_traces(path: Path, format: str = "auto", strict: bool = False) -> Iterator[Trace]:
    """Every trace in the file `path`, in the file's order, read as `format` (or the format
    `detect_format` recognises). Raises `TraceFormatError` when the file holds no sound trace
    (`strict`, with `format` "auto": no trace with a tool step, resemble.py), or `ValueError`
    for an unknown format name."""
    path = Path(path)
    name = detect_format(path) if format == "auto" else format
    if name not in _MODULES:
        raise ValueError(f"unknown trace format {name!r}; choose one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"evals.sources.formats.{_MODULES[name]}")
    found = 0
    why = "no messages"
    traces = _finished(module.read(path))
    if strict and format == "auto":  # a guessed format must read steps from the file
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES).decode("utf-8", errors="replace")
        traces = strict_steps(traces, path, name, head, _lone_key(name, head))
    for trace in traces:
        if not trace.messages:
            why = trace.skipped[0].reason if trace.skipped else "no messages"
            continue
        found += 1
        yield trace
    if not found:
        raise TraceFormatError(f"{path}: nothing sound to import as {name}: {why}")


def _finished(traces: Iterator[Trace]) -> Iterator[Trace]:
    for trace in traces:
        finish(trace)
        yield trace


def iter_trace_files(folder: Path) -> Iterator[Path]:
    """The files under `folder` to read as traces, sorted, at any depth; hidden files and
    folders (a name starting with '.') are left out, and so are the files of a Claude Code
    session's `subagents/` folder (its session reads them). Binary files are not: `read_traces`
    refuses each in one line, which a folder import records as skipped (`read_folder`)."""
    folder = Path(folder)
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if _subagent_of_a_session(path) or _links_out(path, folder):
            continue  # a subagent is read with its session; a link out is named by read_folder
        yield path


def _links_out(path: Path, folder: Path) -> bool:
    """A symbolic link (the file or a folder on its way) whose target lies outside `folder`:
    following it would import, and copy into `--out`, a file the user did not point at."""
    try:
        return not path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return True


def links_out_of(folder: Path) -> Iterator[Path]:
    """The links under `folder` that lead out of it, which a folder import does not follow."""
    folder = Path(folder)
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_symlink():
            continue
        if _links_out(path, folder):
            yield path


def _subagent_of_a_session(path: Path) -> bool:
    """True for a file under `<session>/subagents/` beside a Claude Code `<session>.jsonl`."""
    session_dir = path.parent.parent
    return (
        path.parent.name == "subagents"
        and (session_dir.parent / f"{session_dir.name}.jsonl").is_file()
    )


def read_folder(
    folder: Path, format: str = "auto", strict: bool = False
) -> Iterator[Trace | Skipped]:
    """Every trace of every file under `folder` (`strict` as for `read_traces`); a file with
    nothing sound comes as a `Skipped` naming it and why, so one bad file never stops the
    rest."""
    for link in links_out_of(folder):
        yield Skipped(Where(str(link)), "a link out of the folder: not followed")
    for path in iter_trace_files(folder):
        try:
            yield from read_traces(path, format, strict)
        except (TraceFormatError, UnicodeDecodeError, OSError) as exc:
            reason = str(exc).removeprefix(f"{path}: ")
            yield Skipped(Where(str(path)), reason)
        except Exception as exc:  # a shape no parser foresaw: this file only, said so
            first = str(exc).splitlines()[0] if str(exc) else ""
            yield Skipped(Where(str(path)), f"could not be read ({type(exc).__name__}: {first})")
