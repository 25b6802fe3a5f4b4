"""The model-facing file tools: exact outputs, errors as text, caps, and a whole agent run."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from helpers.file_tools import numbered_lines, read_all, run_tool

from harness import Store, create_agent
from harness.files.filesystem import FileSystem
from harness.files.tools import FILE_TOOL_NAMES, file_tools
from harness.models import ScriptedModel, call, reply
from harness.tools import ToolArgumentError

FOOTER = re.compile(
    r"\[Read (\d+) lines \(lines (\d+)-(\d+) of (\d+) total\)\. (\d+) lines remaining from "
    r"offset (\d+)\. Use offset=(\d+) to continue\.\]$"
)


# -- the tool set -----------------------------------------------------------------------------


def test_tool_set_names_and_identity() -> None:
    assert {t.name for t in file_tools()} == FILE_TOOL_NAMES
    assert file_tools() == file_tools()  # same Tool objects: adding them twice is harmless
    assert file_tools(5_000)[0] is not file_tools()[0]
    with pytest.raises(ValueError, match="at least 2000"):
        file_tools(100)
    schema = {t.name: t.schema() for t in file_tools()}["read_file"]
    assert schema["parameters"]["required"] == ["file_path"]
    assert set(schema["parameters"]["properties"]) == {
        "file_path",
        "offset",
        "limit",
        "char_offset",
    }


# -- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("read_file", {"file_path": "../etc/passwd"},
         "Error: path '../etc/passwd' contains '..': paths may not leave the root"),
        ("write_file", {"file_path": "/a\x00b", "content": "x"},
         "Error: path '/a\\x00b' contains a NUL byte"),
        ("ls", {"path": "/" + "a" * 5000},
         "Error: path is 5001 characters long; the limit is 1024"),
        ("write_file", {"file_path": "/", "content": "x"},
         "Error: / is the root directory, not a file"),
        ("delete", {"file_path": "/a/../../b"},
         "Error: path '/a/../../b' contains '..': paths may not leave the root"),
        ("grep", {"pattern": "x", "path": "~/x"},
         "Error: path '~/x': '~' is not supported; use an absolute path like /notes.md"),
    ],
)  # fmt: skip
def test_bad_paths_come_back_as_readable_errors(
    fs: FileSystem, name: str, args: dict[str, Any], expected: str
) -> None:
    assert run_tool(fs, name, **args) == expected


def test_paths_are_normalised(fs: FileSystem) -> None:
    assert run_tool(fs, "write_file", file_path="notes//./todo.md", content="a\n") == (
        "Created /notes/todo.md (1 lines, 2 characters)"
    )
    assert run_tool(fs, "read_file", file_path="\\notes\\todo.md") == "     1\ta"


# -- read_file ------------------------------------------------------------------------------


def test_read_file_pages_with_an_exact_footer(fs: FileSystem) -> None:
    fs.write("/big.txt", "".join(f"line {i}\n" for i in range(1, 251)))
    first = run_tool(fs, "read_file", file_path="/big.txt")
    assert first.startswith("     1\tline 1\n     2\tline 2\n")
    assert first.endswith(
        "   100\tline 100\n\n[Read 100 lines (lines 1-100 of 250 total). 150 lines remaining "
        "from offset 100. Use offset=100 to continue.]"
    )
    last = run_tool(fs, "read_file", file_path="/big.txt", offset=200, limit=100)
    assert numbered_lines(last)[0] == "   201\tline 201"
    assert last.endswith("   250\tline 250")  # nothing remains: no footer


def test_read_file_small_window_exact(fs: FileSystem) -> None:
    fs.write("/a.txt", "alpha\r\nbeta\r\ngamma\r\n")
    assert run_tool(fs, "read_file", file_path="/a.txt", offset=1, limit=1) == (
        "     2\tbeta\n\n[Read 1 lines (lines 2-2 of 3 total). 1 lines remaining from offset 2. "
        "Use offset=2 to continue.]"
    )


def test_read_file_splits_long_lines_into_numbered_pieces(fs: FileSystem) -> None:
    fs.write("/wide.txt", "a" * 5000 + "b" * 5000 + "c" * 2000 + "\nnext\n")
    assert run_tool(fs, "read_file", file_path="/wide.txt").split("\n") == [
        "     1\t" + "a" * 5000,
        "   1.1\t" + "b" * 5000,
        "   1.2\t" + "c" * 2000,
        "     2\tnext",
    ]


@pytest.mark.parametrize(("limit", "width"), [(80_000, 4_000), (2_000, 50)])
def test_read_file_output_is_capped_and_the_footer_continues_exactly(
    fs: FileSystem, limit: int, width: int
) -> None:
    fs.write("/wide.txt", "".join(f"{i:04d}" + "x" * (width - 4) + "\n" for i in range(100)))
    out = run_tool(fs, "read_file", limit, file_path="/wide.txt", offset=0, limit=100)
    assert len(out) <= limit
    shown = numbered_lines(out)
    k = len(shown)
    assert 0 < k < 100
    assert FOOTER.search(out).groups() == tuple(str(n) for n in (k, 1, k, 100, 100 - k, k, k))
    following = run_tool(fs, "read_file", limit, file_path="/wide.txt", offset=k, limit=1)
    assert following.startswith(f"{k + 1:>6}\t{k:04d}")


def test_read_file_pages_within_a_line_larger_than_the_cap(fs: FileSystem) -> None:
    fs.write("/one.txt", "z" * 200_000 + "\ntail\n")
    out = run_tool(fs, "read_file", file_path="/one.txt")
    assert len(out) <= 80_000
    shown = sum(len(line.split("\t", 1)[1]) for line in numbered_lines(out))
    assert out.endswith(
        f"[Read characters 0-{shown - 1} of line 1, which has 200000 characters; "
        f"{200_000 - shown} remain. Use offset=0 and char_offset={shown} to continue.]"
    )
    last = run_tool(fs, "read_file", file_path="/one.txt", char_offset=195_000)
    assert numbered_lines(last)[0] == "  1.39\t" + "z" * 5_000
    assert last.endswith("     2\ttail")
    assert read_all(fs, "/one.txt") == ["z" * 200_000, "tail"]


def test_read_file_char_offset_errors(fs: FileSystem) -> None:
    fs.write("/f", "abc\n")
    assert run_tool(fs, "read_file", file_path="/f", char_offset=3) == (
        "Error: char_offset 3 is past the end of line 1 of /f, which has 3 characters"
    )
    assert run_tool(fs, "read_file", file_path="/f", char_offset=-1) == (
        "Error: char_offset must be 0 or more"
    )
    assert run_tool(fs, "read_file", file_path="/f", char_offset=1) == "     1\tbc"


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        ("", {}, "File exists but has empty contents: /f"),
        (b"\x89PNG\x00\xff", {}, "[binary file /f: 6 bytes; not shown as text]"),
        ("a\nb\nc\n", {"offset": 3},
         "Error: offset 3 is past the end of /f, which has 3 lines (offsets 0-2)"),
        ("a\n", {"offset": -1}, "Error: offset must be 0 or more"),
        ("a\n", {"limit": 0}, "Error: limit must be 1 or more"),
    ],
)  # fmt: skip
def test_read_file_special_cases(
    fs: FileSystem, content: str | bytes, args: dict[str, Any], expected: str
) -> None:
    fs.write("/f", content)
    assert run_tool(fs, "read_file", file_path="/f", **args) == expected


def test_read_file_missing_file_and_directory(fs: FileSystem) -> None:
    fs.write("/d/x.txt", "x")
    assert run_tool(fs, "read_file", file_path="/nope.txt") == (
        "Error: file not found: /nope.txt. Use ls or glob to see which files exist."
    )
    assert run_tool(fs, "read_file", file_path="/d") == (
        "Error: /d is a directory, not a file; use ls to see its files"
    )


# -- write_file, edit_file, delete ------------------------------------------------------------


def test_write_then_overwrite(fs: FileSystem) -> None:
    assert run_tool(fs, "write_file", file_path="/n.md", content="a\nb") == (
        "Created /n.md (2 lines, 3 characters)"
    )
    assert run_tool(fs, "write_file", file_path="/n.md", content="c\n") == (
        "Overwrote /n.md (1 lines, 2 characters)"
    )
    assert fs.read_text("/n.md") == "c\n"
    assert run_tool(fs, "write_file", file_path="/n.md/x", content="") == (
        "Error: cannot create /n.md/x: /n.md is a file, not a directory"
    )


@pytest.mark.parametrize(
    ("args", "expected", "after"),
    [
        ({"old_string": "y = 2", "new_string": "y = 4"},
         "Replaced 1 occurrence in /a.py", "x = 1\nx = 1\ny = 4\n"),
        ({"old_string": "x = 1", "new_string": "x = 3", "replace_all": True},
         "Replaced 2 occurrences in /a.py", "x = 3\nx = 3\ny = 2\n"),
        ({"old_string": "x = 1", "new_string": "x = 3"},
         "Error: old_string occurs 2 times in /a.py; give more surrounding context to make it "
         "unique, or set replace_all=true", None),
        ({"old_string": "z = 9", "new_string": "z = 0"},
         "Error: old_string not found in /a.py; read the file and copy the text exactly, "
         "including whitespace", None),
        ({"old_string": "x", "new_string": "x"},
         "Error: old_string and new_string are identical; nothing to change", None),
        ({"old_string": "", "new_string": "x"}, "Error: old_string must not be empty", None),
    ],
)  # fmt: skip
def test_edit_file(fs: FileSystem, args: dict[str, Any], expected: str, after: str | None) -> None:
    original = "x = 1\nx = 1\ny = 2\n"
    fs.write("/a.py", original)
    assert run_tool(fs, "edit_file", file_path="/a.py", **args) == expected
    assert fs.read_text("/a.py") == (after or original)


def test_edit_file_missing_and_binary(fs: FileSystem) -> None:
    fs.write("/b.bin", b"\xff\x00")
    assert run_tool(fs, "edit_file", file_path="/b.bin", old_string="a", new_string="b") == (
        "Error: /b.bin is binary (2 bytes), not UTF-8 text"
    )
    assert run_tool(fs, "edit_file", file_path="/c", old_string="a", new_string="b") == (
        "Error: file not found: /c. Use ls or glob to see which files exist."
    )


def test_delete(fs: FileSystem) -> None:
    fs.write("/d/a.txt", "a")
    assert run_tool(fs, "delete", file_path="/d") == (
        "Error: /d is a directory; delete the files in it one by one"
    )
    assert run_tool(fs, "delete", file_path="d/a.txt") == "Deleted /d/a.txt"
    assert not fs.exists("/d/a.txt")
    assert run_tool(fs, "delete", file_path="/d/a.txt").startswith("Error: file not found")


# -- ls, glob, grep ---------------------------------------------------------------------------


@pytest.fixture
def tree(fs: FileSystem) -> FileSystem:
    fs.write("/notes.md", "hello")
    fs.write("/docs/a.md", "alpha a.b\nabc\n")
    fs.write("/docs/deep/b.md", "beta abc\n")
    fs.write("/src/main.py", "x = 'a.b'\n")
    FileSystem(fs.store, fs.thread_id, grants=["/memories/"]).write(
        "/memories/AGENTS.md", "be brief\n"
    )
    return fs


def test_ls(tree: FileSystem) -> None:
    assert run_tool(tree, "ls") == "/docs/\n/memories/\n/notes.md (5 bytes)\n/src/"
    assert run_tool(tree, "ls", path="/docs") == "/docs/a.md (14 bytes)\n/docs/deep/"
    assert run_tool(tree, "ls", path="/nothing") == "No files in /nothing"
    assert run_tool(tree, "ls", path="/notes.md") == "Error: /notes.md is a file, not a directory"


def test_glob(tree: FileSystem) -> None:
    assert run_tool(tree, "glob", pattern="**/*.md") == (
        "/docs/a.md\n/docs/deep/b.md\n/memories/AGENTS.md\n/notes.md"
    )
    assert run_tool(tree, "glob", pattern="*.md", path="/docs") == "/docs/a.md"
    assert run_tool(tree, "glob", pattern="*.rs") == "No files match '*.rs' under /"


def test_grep_modes(tree: FileSystem) -> None:
    assert run_tool(tree, "grep", pattern="a.b") == "/docs/a.md\n/src/main.py"
    assert run_tool(tree, "grep", pattern="a.?b", regex=True, output_mode="content") == (
        "/docs/a.md:1:alpha a.b\n/docs/a.md:2:abc\n/docs/deep/b.md:1:beta abc\n"
        "/src/main.py:1:x = 'a.b'"
    )
    assert run_tool(tree, "grep", pattern="b", glob="*.md", output_mode="count") == (
        "/docs/a.md:2\n/docs/deep/b.md:1\n/memories/AGENTS.md:1"
    )
    assert run_tool(tree, "grep", pattern="abc", path="/docs/deep") == "/docs/deep/b.md"
    assert run_tool(tree, "grep", pattern="zzz", path="/docs") == "No matches for 'zzz' under /docs"


def test_grep_errors(tree: FileSystem) -> None:
    assert run_tool(tree, "grep", pattern="(", regex=True) == (
        "Error: invalid regex '(': missing ), unterminated subpattern at position 0. "
        "Set regex=false to search for the literal text"
    )
    assert run_tool(tree, "grep", pattern="(") == "No matches for '(' under /"
    assert run_tool(tree, "grep", pattern="x", max_count=0) == "Error: max_count must be 1 or more"
    # Schema violations are the loop's to report (as text), before the tool runs.
    with pytest.raises(ToolArgumentError, match="output_mode"):
        run_tool(tree, "grep", pattern="x", output_mode="lines")


def test_grep_caps(fs: FileSystem) -> None:
    fs.write("/many.txt", "hit\n" * 1500)
    out = run_tool(fs, "grep", pattern="hit", output_mode="content", max_count=5000)
    lines = out.split("\n")
    assert len(lines) == 1001
    assert lines[999] == "/many.txt:1000:hit"
    assert lines[-1] == (
        "[Stopped at max_count=1000 results; narrow the pattern, path or glob to see more.]"
    )
    out = run_tool(fs, "grep", pattern="hit", output_mode="content", max_count=2)
    assert out == (
        "/many.txt:1:hit\n/many.txt:2:hit\n"
        "[Stopped at max_count=2 results; narrow the pattern, path or glob to see more.]"
    )
    for i in range(3):
        fs.write(f"/f{i}.txt", "hit\n")
    assert run_tool(fs, "grep", pattern="hit", max_count=2) == (
        "/f0.txt\n/f1.txt\n"
        "[Stopped at max_count=2 results; narrow the pattern, path or glob to see more.]"
    )


def test_grep_shows_long_lines_around_each_match_and_caps_output(fs: FileSystem) -> None:
    fs.write("/wide.txt", ("hit" + "x" * 9997 + "\n") * 100)
    out = run_tool(fs, "grep", 20_000, pattern="hit", output_mode="content")
    assert len(out) <= 20_000
    assert out.startswith("/wide.txt:1:[chars 0-202] hit" + "x" * 200 + "\n")
    assert re.search(
        r"\n\[Output capped at 20000 characters: \d+ of 100 results shown; narrow the path or "
        r"pattern\.\]\n\[In lines over 2000 characters each match shows the text around it; ",
        out,
    )


# -- through the agent loop -------------------------------------------------------------------


def make_agent(model: ScriptedModel, store: Store) -> Any:
    # Compaction middleware would not change these results, but keep the run minimal where the
    # strategy switch exists.
    extra = {"strategy": "none"} if "strategy" in inspect.signature(create_agent).parameters else {}
    return create_agent(model, tools=file_tools(), store=store, **extra)


def test_agent_writes_and_pages_through_a_file() -> None:
    store = Store(":memory:")
    model = ScriptedModel(
        [
            reply("", call("write_file", "c1", file_path="drafts/plan.md",
                           content="step one\nstep two\nstep three\nstep four\n")),
            reply("", call("read_file", "c2", file_path="/drafts/plan.md", offset=1, limit=2)),
            reply("", call("read_file", "c3", file_path="/drafts/../etc/passwd")),
            "done",
        ]
    )  # fmt: skip
    result = make_agent(model, store).run_sync("plan it", thread_id="t-e2e")
    model.assert_complete()
    expected = [
        ("c1", "Created /drafts/plan.md (4 lines, 39 characters)"),
        ("c2", "     2\tstep two\n     3\tstep three\n\n[Read 2 lines (lines 2-3 of 4 total). "
               "1 lines remaining from offset 3. Use offset=3 to continue.]"),
        ("c3", "Error: path '/drafts/../etc/passwd' contains '..': paths may not leave the root"),
    ]  # fmt: skip
    tool_messages = [(m.tool_call_id, m.content) for m in result.messages if m.role == "tool"]
    assert tool_messages == expected
    stored = [
        (m.tool_call_id, m.content) for m in store.messages.transcript("t-e2e") if m.role == "tool"
    ]
    assert stored == expected
    assert result.output == "done"
    assert FileSystem(store, "t-e2e").read_text("/drafts/plan.md").count("\n") == 4


def test_agent_memories_are_shared_across_threads_but_drafts_are_not() -> None:
    store = Store(":memory:")
    writer = ScriptedModel(
        [
            reply("", call("write_file", "w1", file_path="/memories/prefs.md", content="tables"),
                  call("write_file", "w2", file_path="/draft.md", content="mine")),
            "saved",
        ]
    )  # fmt: skip
    make_agent(writer, store).run_sync("remember", thread_id="thread-a")
    reader = ScriptedModel(
        [
            reply("", call("read_file", "r1", file_path="/memories/prefs.md"),
                  call("read_file", "r2", file_path="/draft.md")),
            "ok",
        ]
    )  # fmt: skip
    result = make_agent(reader, store).run_sync("recall", thread_id="thread-b")
    assert [m.content for m in result.messages if m.role == "tool"] == [
        "     1\ttables",
        "Error: file not found: /draft.md. Use ls or glob to see which files exist.",
    ]
