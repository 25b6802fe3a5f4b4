"""The file tools the model works with: deepagents' names, arguments and output shapes.

Each tool works on `ctx.state.files`, the run's `FileSystem`. Problems the model can fix (a bad
path, a missing file, an ambiguous edit, an invalid regex) come back as text starting with
"Error:", never as exceptions. Every output is capped at `output_char_limit` characters, which
is why the offload middleware leaves these tools alone (`FILE_TOOL_NAMES`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import islice
from typing import Literal

from harness.filesystem import FileError, decode, normalize, split_lines
from harness.tools import Tool, ToolContext, tool

DEFAULT_OUTPUT_CHAR_LIMIT = 80_000
MIN_OUTPUT_CHAR_LIMIT = 2_000
MAX_LINE_CHARS = 5_000
GREP_MAX_COUNT = 1_000
GREP_LINE_CHARS = 2_000
FILE_TOOL_NAMES = frozenset(
    {"ls", "read_file", "write_file", "edit_file", "glob", "grep", "delete"}
)

_NUMBER_WIDTH = 6
# Room kept below the cap for the notes and footer appended after the numbered lines.
_NOTE_ROOM = 400

OutputMode = Literal["files_with_matches", "content", "count"]


def file_tools(output_char_limit: int = DEFAULT_OUTPUT_CHAR_LIMIT) -> list[Tool]:
    """`ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep` and `delete`, each output
    capped at `output_char_limit` characters. Calls with the same limit return the same `Tool`
    objects, so adding the file tools twice to one agent is harmless."""
    if output_char_limit < MIN_OUTPUT_CHAR_LIMIT:
        raise ValueError(f"output_char_limit must be at least {MIN_OUTPUT_CHAR_LIMIT}")
    return list(_build(output_char_limit))


def _errors_as_text(fn: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> str:
        try:
            return fn(*args, **kwargs)
        except FileNotFoundError as exc:
            return f"Error: {exc}. Use ls or glob to see which files exist."
        except FileError as exc:
            return f"Error: {exc}"

    return wrapper


@functools.cache
def _build(char_limit: int) -> tuple[Tool, ...]:
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
    def read_file(ctx: ToolContext, file_path: str, offset: int = 0, limit: int = 100) -> str:
        """Read a text file as numbered lines. Lines over 5,000 characters are split into
        pieces numbered N.1, N.2, ... When more lines remain, a footer gives the offset to
        continue from.

        Args:
            file_path: Absolute path of the file, e.g. "/notes.md".
            offset: Line to start from, counting from 0.
            limit: Maximum number of lines to return.
        """
        if offset < 0:
            return "Error: offset must be 0 or more"
        if limit < 1:
            return "Error: limit must be 1 or more"
        path = normalize(file_path)
        return render_file(path, ctx.state.files.read_bytes(path), offset, limit, char_limit)

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
        found = ctx.state.files.glob(pattern, path)
        if not found:
            return f"No files match {pattern!r} under {normalize(path)}"
        return _join_capped([f.path for f in found], char_limit, "paths")

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
        matches = ctx.state.files.grep(pattern, path, glob, regex)
        if output_mode == "content":
            hits = list(islice(matches, cap + 1))
            more = len(hits) > cap
            rows = [f"{m.path}:{m.line_no}:{_clip(m.line)}" for m in hits[:cap]]
        else:
            counts: dict[str, int] = {}
            more = False
            for m in matches:
                if m.path not in counts and len(counts) == cap:
                    more = True
                    break
                counts[m.path] = counts.get(m.path, 0) + 1
            rows = (
                list(counts)
                if output_mode == "files_with_matches"
                else [f"{p}:{n}" for p, n in counts.items()]
            )
        if not rows:
            return f"No matches for {pattern!r} under {normalize(path)}"
        note = (
            f"[Stopped at max_count={cap} results; narrow the pattern, path or glob to see more.]"
            if more
            else ""
        )
        return _join_capped(rows, char_limit, "results", note)

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


def render_file(path: str, data: bytes, offset: int, limit: int, char_limit: int) -> str:
    """What `read_file` shows for `data`: numbered lines `offset`..`offset+limit`, at most
    `char_limit` characters, with a footer when lines remain after them."""
    text = decode(data)
    if text is None:
        return f"[binary file {path}: {len(data)} bytes; not shown as text]"
    lines = split_lines(text)
    if not lines:
        return f"File exists but has empty contents: {path}"
    total = len(lines)
    if offset >= total:
        return (
            f"Error: offset {offset} is past the end of {path}, which has {total} lines "
            f"(offsets 0-{total - 1})"
        )
    budget = char_limit - _NOTE_ROOM
    blocks: list[str] = []
    used = 0
    note = ""
    end = min(total, offset + limit)
    i = offset
    while i < end:
        block = _numbered(i + 1, lines[i])
        if used + len(block) + 1 > budget:
            if i == offset:  # one line bigger than the whole budget: show its head
                block, shown = _head(i + 1, lines[i], budget)
                blocks.append(block)
                note = (
                    f"[Line {i + 1} has {len(lines[i])} characters; only the first {shown} "
                    "are shown. Use grep to find text in it.]"
                )
                i += 1
            break
        blocks.append(block)
        used += len(block) + 1
        i += 1
    out = "\n".join(blocks)
    if note:
        out += "\n" + note
    if i < total:
        out += (
            f"\n\n[Read {i - offset} lines (lines {offset + 1}-{i} of {total} total). "
            f"{total - i} lines remaining from offset {i}. Use offset={i} to continue.]"
        )
    return out


def _numbered(number: int, line: str) -> str:
    """`line` as cat -n shows it; a long line becomes pieces numbered N, N.1, N.2, ..."""
    if len(line) <= MAX_LINE_CHARS:
        return f"{number:>{_NUMBER_WIDTH}}\t{line}"
    pieces = []
    for k, start in enumerate(range(0, len(line), MAX_LINE_CHARS)):
        label = str(number) if k == 0 else f"{number}.{k}"
        pieces.append(f"{label:>{_NUMBER_WIDTH}}\t{line[start : start + MAX_LINE_CHARS]}")
    return "\n".join(pieces)


def _head(number: int, line: str, budget: int) -> tuple[str, int]:
    """The numbered start of `line` that fits in `budget` characters, and its length."""
    shown = budget
    block = _numbered(number, line[:shown])
    # Dropping the overshoot also drops at least as much labelling, so one retry fits.
    if len(block) > budget:
        shown -= len(block) - budget
        block = _numbered(number, line[:shown])
    return block, shown


def _clip(line: str) -> str:
    if len(line) <= GREP_LINE_CHARS:
        return line
    return f"{line[:GREP_LINE_CHARS]}... [{len(line) - GREP_LINE_CHARS} more characters]"


def _join_capped(rows: list[str], char_limit: int, what: str, note: str = "") -> str:
    """Rows one per line, stopping before `char_limit` with a note saying how many were left."""
    budget = char_limit - _NOTE_ROOM
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
    "GREP_MAX_COUNT",
    "MAX_LINE_CHARS",
    "file_tools",
    "render_file",
]
