"""The file tools the model works with: deepagents' names, arguments and output shapes.

Each tool works on `ctx.state.files`, the run's `FileSystem`. Problems the model can fix (a bad
path, a missing file, an ambiguous edit, an invalid regex) come back as text starting with
"Error:", never as exceptions. Every output is capped at `output_char_limit` characters, which
is why the offload middleware leaves these tools alone (`FILE_TOOL_NAMES`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal

from harness.files.paths import FileError, normalize, split_lines
from harness.files.search import LONG_LINE, SEARCH_SECONDS, GrepMatch, SearchStopped, Unit
from harness.files.stored_file import StoredFile
from harness.tools import Tool, ToolContext, tool

DEFAULT_OUTPUT_CHAR_LIMIT = 80_000
MIN_OUTPUT_CHAR_LIMIT = 2_000
MAX_LINE_CHARS = 5_000
GREP_MAX_COUNT = 1_000
GLOB_MAX_RESULTS = 1_000
FILE_TOOL_NAMES = frozenset(
    {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"}
)

_NUMBER_WIDTH = 6
# Room kept below the cap for the notes and footer appended after the numbered lines.
_NOTE_ROOM = 400

OutputMode = Literal["files_with_matches", "content", "count"]
_GREP_UNITS: dict[str, Unit] = {"content": "match", "count": "line", "files_with_matches": "file"}


def file_tools(
    output_char_limit: int = DEFAULT_OUTPUT_CHAR_LIMIT, search_seconds: float = SEARCH_SECONDS
) -> list[Tool]:
    """`ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep` and `delete`, each output
    capped at `output_char_limit` characters; one `grep` or `glob` call stops after
    `search_seconds` of matching. Calls with the same arguments return the same `Tool`
    objects, so adding the file tools twice to one agent is harmless."""
    if output_char_limit < MIN_OUTPUT_CHAR_LIMIT:
        raise ValueError(f"output_char_limit must be at least {MIN_OUTPUT_CHAR_LIMIT}")
    if search_seconds <= 0:
        raise ValueError("search_seconds must be positive")
    return list(_build(output_char_limit, search_seconds))


def _errors_as_text(fn: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> str:
        try:
            return fn(*args, **kwargs)
        except FileNotFoundError as exc:
            return f"Error: {exc}. Use ls or glob to see which files exist."
        except (FileError, SearchStopped) as exc:
            return f"Error: {exc}"

    return wrapper


@functools.cache
def _build(char_limit: int, search_seconds: float) -> tuple[Tool, ...]:
    @tool
    @_errors_as_text
    def ls(ctx: ToolContext, path: str = "/") -> str:
        """List the files and directories directly inside a directory (directories end in /).

        Args:
            path: Absolute directory path, e.g. "/" or "/memories".
        """
        entries = ctx.state.files.ls(path)
        if not entries:
            return f"No files in {normalize(path)}"
        rows = [f"{e.path}/" if e.is_dir else f"{e.path} ({e.size} bytes)" for e in entries]
        return _join_capped(rows, char_limit, "entries")

    @tool
    @_errors_as_text
    def read_file(
        ctx: ToolContext, file_path: str, offset: int = 0, limit: int = 100, char_offset: int = 0
    ) -> str:
        """Read a text file as numbered lines. Lines over 5,000 characters are split into
        pieces numbered N.1, N.2, ... When more remains, a footer says how to continue.

        Args:
            file_path: Absolute path of the file, e.g. "/notes.md".
            offset: Line to start from, counting from 0.
            limit: Maximum number of lines to return.
            char_offset: Character to start from in the line at offset.
        """
        if offset < 0:
            return "Error: offset must be 0 or more"
        if limit < 1:
            return "Error: limit must be 1 or more"
        if char_offset < 0:
            return "Error: char_offset must be 0 or more"
        path = normalize(file_path)
        source = ctx.state.files.open(path)
        return render_file(path, source, offset, limit, char_limit, char_offset)

    @tool
    @_errors_as_text
    def write_file(ctx: ToolContext, file_path: str, content: str) -> str:
        """Create a file, or replace the whole content of an existing one. Directories are
        created implicitly.

        Args:
            file_path: Absolute path of the file, e.g. "/notes.md".
            content: The complete content of the file.
        """
        files = ctx.state.files
        existed = files.exists(file_path)
        path = files.write(file_path, content)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {path} ({len(split_lines(content))} lines, {len(content)} characters)"

    @tool
    @_errors_as_text
    def edit_file(
        ctx: ToolContext,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> str:
        """Replace exact text in a file. old_string must occur exactly once unless replace_all
        is true: include enough surrounding text to make it unique.

        Args:
            file_path: Absolute path of the file.
            old_string: The exact text to replace, whitespace included, without the line
                numbers read_file shows.
            new_string: The text to put in its place.
            replace_all: Replace every occurrence instead of exactly one.
        """
        if old_string == new_string:
            return "Error: old_string and new_string are identical; nothing to change"
        count = ctx.state.files.edit(file_path, old_string, new_string, replace_all)
        plural = "occurrence" if count == 1 else "occurrences"
        return f"Replaced {count} {plural} in {normalize(file_path)}"

    @tool
    @_errors_as_text
    def glob(ctx: ToolContext, pattern: str, path: str = "/") -> str:
        """Find files by path pattern: * matches within a directory, ** across directories,
        e.g. "**/*.md" or "/memories/*".

        Args:
            pattern: Glob pattern, absolute or relative to path.
            path: Directory to search under.
        """
        found = ctx.state.files.glob(
            pattern, path, limit=GLOB_MAX_RESULTS + 1, seconds=search_seconds
        )
        if not found:
            return f"No files match {pattern!r} under {normalize(path)}"
        note = (
            f"[Stopped at {GLOB_MAX_RESULTS} paths; narrow the pattern or path to see more.]"
            if len(found) > GLOB_MAX_RESULTS
            else ""
        )
        paths = [f.path for f in found[:GLOB_MAX_RESULTS]]
        return _join_capped(paths, char_limit, "paths", note)

    @tool
    @_errors_as_text
    def grep(
        ctx: ToolContext,
        pattern: str,
        path: str = "/",
        glob: str | None = None,
        regex: bool = False,
        output_mode: OutputMode = "files_with_matches",
        max_count: int = GREP_MAX_COUNT,
    ) -> str:
        """Search text files for a pattern, literal text unless regex is true.

        Args:
            pattern: Text to find, or a Python regular expression when regex is true.
            path: File or directory to search.
            glob: Only search files matching this glob, e.g. "*.md" (any depth) or "notes/**".
            regex: Treat pattern as a regular expression.
            output_mode: "files_with_matches" lists files, "content" shows path:line:text for
                each matching line, "count" shows path:matches.
            max_count: Maximum results: lines for "content", files otherwise (at most 1000).
        """
        if max_count < 1:
            return "Error: max_count must be 1 or more"
        cap = min(max_count, GREP_MAX_COUNT)
        unit = _GREP_UNITS[output_mode]
        matches = ctx.state.files.grep(
            pattern, path, glob, regex, unit=unit, seconds=search_seconds
        )
        rows: list[str] = []
        counts: dict[str, int] = {}
        more = excerpts = False
        stopped = ""
        try:
            for m in matches:
                if output_mode == "content":
                    if len(rows) == cap:
                        more = True
                        break
                    rows.append(_grep_row(m))
                    excerpts = excerpts or m.excerpt_start is not None
                else:
                    if m.path not in counts and len(counts) == cap:
                        more = True
                        break
                    counts[m.path] = counts.get(m.path, 0) + 1
        except SearchStopped as exc:
            stopped = str(exc)
        if output_mode == "files_with_matches":
            rows = list(counts)
        elif output_mode == "count":
            rows = [f"{p}:{n}" for p, n in counts.items()]
        if not rows:
            if stopped:
                return f"Error: {stopped}"
            return f"No matches for {pattern!r} under {normalize(path)}"
        notes = []
        if excerpts:
            notes.append(
                f"[In lines over {LONG_LINE} characters each match shows the text around it; "
                "[chars A-B] is where that text is in the line. To read on from there, call "
                "read_file with offset=LINE-1 and char_offset=A.]"
            )
        if more:
            notes.append(
                f"[Stopped at max_count={cap} results; narrow the pattern, path or glob to see "
                "more.]"
            )
        if stopped:
            notes.append(f"[Incomplete: {stopped}.]")
        return _join_capped(rows, char_limit, "results", "\n".join(notes))

    @tool
    @_errors_as_text
    def delete(ctx: ToolContext, file_path: str) -> str:
        """Delete a file.

        Args:
            file_path: Absolute path of the file.
        """
        path = normalize(file_path)
        ctx.state.files.delete(path)
        return f"Deleted {path}"

    return (ls, read_file, write_file, edit_file, glob, grep, delete)


def render_file(
    path: str, source: StoredFile, offset: int, limit: int, char_limit: int, char_offset: int = 0
) -> str:
    """What `read_file` shows: numbered lines `offset`..`offset+limit` from character
    `char_offset` of the first, at most `char_limit` characters, with a footer saying how to
    continue when text remains. Only the text shown is fetched from the store."""
    if not source.is_text:
        return f"[binary file {path}: {source.size} bytes; not shown as text]"
    total = source.lines
    if total == 0:
        return f"File exists but has empty contents: {path}"
    if offset >= total:
        return (
            f"Error: offset {offset} is past the end of {path}, which has {total} lines "
            f"(offsets 0-{total - 1})"
        )
    if char_offset and char_offset >= (length := source.line_length(offset)):
        return (
            f"Error: char_offset {char_offset} is past the end of line {offset + 1} of {path}, "
            f"which has {length} characters"
        )
    budget = char_limit - _NOTE_ROOM
    blocks: list[str] = []
    used = 0
    pending: list[str] = []  # pieces of the current line, shown once the whole line fits
    pending_used = 0
    next_line = offset
    cut: int | None = None  # where the first line was cut, when it does not fit
    for line, col, text, ends in source.fragments(offset, char_offset, MAX_LINE_CHARS):
        if line >= offset + limit:
            break
        label = _label(line, col)
        if used + pending_used + len(label) + len(text) + 1 > budget:
            if line == offset:
                room = max(0, budget - used - pending_used - len(label) - 1)
                if room:
                    pending.append(label + text[:room])
                blocks += pending
                cut = col + room
            break
        pending.append(label + text)
        pending_used += len(label) + len(text) + 1
        if ends:
            blocks += pending
            used += pending_used
            pending, pending_used, next_line = [], 0, line + 1
    out = "\n".join(blocks)
    if cut is not None:
        length = source.line_length(offset)
        out += (
            f"\n\n[Read characters {char_offset}-{cut - 1} of line {offset + 1}, which has "
            f"{length} characters; {length - cut} remain. Use offset={offset} and "
            f"char_offset={cut} to continue.]"
        )
    elif next_line < total:
        i = next_line
        out += (
            f"\n\n[Read {i - offset} lines (lines {offset + 1}-{i} of {total} total). "
            f"{total - i} lines remaining from offset {i}. Use offset={i} to continue.]"
        )
    return out


def _label(line: int, col: int) -> str:
    """The number `read_file` shows before a piece of 0-based `line` starting at `col`: N for
    the first piece, N.k for the one starting at character MAX_LINE_CHARS * k."""
    k = col // MAX_LINE_CHARS
    label = str(line + 1) if k == 0 else f"{line + 1}.{k}"
    return f"{label:>{_NUMBER_WIDTH}}\t"


def _grep_row(m: GrepMatch) -> str:
    if m.excerpt_start is None:
        return f"{m.path}:{m.line_no}:{m.line}"
    end = m.excerpt_start + len(m.line) - 1
    return f"{m.path}:{m.line_no}:[chars {m.excerpt_start}-{end}] {m.line}"


def _join_capped(rows: list[str], char_limit: int, what: str, note: str = "") -> str:
    """Rows one per line, stopping before `char_limit` with a note saying how many were left."""
    budget = char_limit - _NOTE_ROOM - len(note)
    used = 0
    kept = 0
    for row in rows:
        if used + len(row) + 1 > budget:
            break
        used += len(row) + 1
        kept += 1
    out = "\n".join(rows[:kept])
    if kept < len(rows):
        out += (
            f"\n[Output capped at {char_limit} characters: {kept} of {len(rows)} {what} "
            "shown; narrow the path or pattern.]"
        )
    if note:
        out += "\n" + note
    return out


__all__ = [
    "DEFAULT_OUTPUT_CHAR_LIMIT",
    "FILE_TOOL_NAMES",
    "GLOB_MAX_RESULTS",
    "GREP_MAX_COUNT",
    "MAX_LINE_CHARS",
    "file_tools",
    "render_file",
]
