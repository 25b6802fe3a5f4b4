"""Calling the model-facing file tools as the loop does, and reading what they show, for the
file-tool tests."""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace
from typing import Any

from harness.files.filesystem import FileSystem
from harness.files.tools import file_tools
from harness.messages import ToolCall
from harness.tools import ToolContext


def run_tool(
    fs: FileSystem, name: str, char_limit: int = 80_000, search_seconds: float = 10.0, **args: Any
) -> str:
    """Call a file tool the way the loop does: validated arguments plus an injected context."""
    tools = {t.name: t for t in file_tools(char_limit, search_seconds)}
    ctx = ToolContext(state=SimpleNamespace(files=fs), call=ToolCall("c1", name, args))
    return asyncio.run(tools[name].run(args, ctx))


def numbered_lines(out: str) -> list[str]:
    return [line for line in out.split("\n") if re.match(r"^ *\d+(\.\d+)?\t", line)]


CONTINUE = re.compile(r"Use offset=(\d+)(?: and char_offset=(\d+))? to continue\.\]$")


def read_all(fs: FileSystem, path: str, char_limit: int = 80_000) -> list[str]:
    """Every line of `path` as `read_file` shows it, following the continuation footers from
    offset 0 the way a model would; pieces N, N.1, ... of one line are joined."""
    lines: dict[int, str] = {}
    args: dict[str, int] = {}
    for _ in range(10_000):
        out = run_tool(fs, "read_file", char_limit, file_path=path, limit=1_000, **args)
        assert len(out) <= char_limit
        for row in numbered_lines(out):
            label, text = row.split("\t", 1)
            number = int(label.strip().split(".")[0])
            lines[number] = lines.get(number, "") + text
        found = CONTINUE.search(out)
        if found is None:
            return [lines[n] for n in sorted(lines)]
        args = {"offset": int(found[1]), "char_offset": int(found[2] or 0)}
    raise AssertionError("read_file never reached the end")


def grep_hits(fs: FileSystem, pattern: str) -> list[tuple[str, int, str, int]]:
    """What a regex grep finds, as comparable tuples (path, line number, line, column)."""
    return [(m.path, m.line_no, m.line, m.column) for m in fs.grep(pattern, regex=True)]


def count_regex_calls(monkeypatch: Any) -> list[int]:
    """Count grep's regex calls (`search._search`) from now on: the one-item list's value."""
    from harness.files import search

    calls = [0]
    real = search._search

    def counted(*args: object) -> object:
        calls[0] += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "_search", counted)
    return calls
