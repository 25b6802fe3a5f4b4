"""The file tools on what a model meets in the wild: one-line JSON results far over the read
cap, matches deep inside long lines, catastrophic regexes, overlong patterns and wildcards."""

from __future__ import annotations

import json
import re

from helpers.file_tools import numbered_lines, read_all, run_tool

from harness.files.filesystem import FileSystem


def minified_json(size: int, needle: str = "", at: int = 0) -> str:
    """One line of JSON of about `size` characters; `needle` goes in the record at `at`."""
    rows = []
    total = 0
    i = 0
    while total < size:
        note = needle if needle and total >= at and needle not in rows[-1:] else ""
        row = json.dumps({"id": i, "sku": f"SKU-{i:07d}", "price": i * 0.37, "note": note},
                         separators=(",", ":"))  # fmt: skip
        rows.append(row)
        total += len(row) + 1
        i += 1
        if note:
            needle = ""
    return "[" + ",".join(rows) + "]"


def test_every_character_of_a_one_line_json_result_is_reachable(fs: FileSystem) -> None:
    data = minified_json(1_100_000, "needle-42", at=1_090_000)
    assert len(data) > 1_100_000 and "\n" not in data
    fs.write("/large_tool_results/c1", data)
    assert read_all(fs, "/large_tool_results/c1") == [data]

    out = run_tool(fs, "grep", pattern="needle-42", output_mode="content")
    row = out.split("\n")[0]
    found = re.match(r"/large_tool_results/c1:1:\[chars (\d+)-(\d+)\] (.*)$", row)
    assert found, out
    start, end, excerpt = int(found[1]), int(found[2]), found[3]
    at = data.index("needle-42")
    assert start == at - 200 and excerpt == data[start : end + 1]
    assert excerpt == data[at - 200 : at + len("needle-42") + 200]
    assert "read_file with offset=LINE-1 and char_offset=A" in out
    following = run_tool(fs, "read_file", file_path="/large_tool_results/c1", char_offset=start)
    first = numbered_lines(following)[0].split("\t", 1)[1]
    assert data[start:].startswith(first) and len(first) == 5_000 - start % 5_000


def test_grep_reports_every_match_in_a_long_line_with_its_position(fs: FileSystem) -> None:
    line = "".join(f"{'x' * 996}#{i:03d}" for i in range(300))  # 300,000 characters, one line
    fs.write("/one.txt", f"head\n{line}\ntail #999\n")
    out = run_tool(fs, "grep", 200_000, pattern=r"#\d{3}", regex=True, output_mode="content")
    rows = out.split("\n")
    long_rows = [r for r in rows if r.startswith("/one.txt:2:")]
    assert len(long_rows) == 300
    positions = [int(re.search(r"\[chars (\d+)-", r)[1]) + 200 for r in long_rows]
    assert positions == [1_000 * i + 996 for i in range(300)]
    assert "/one.txt:3:tail #999" in rows
    assert run_tool(fs, "grep", pattern="#", output_mode="count") == "/one.txt:2"


def test_grep_regex_anchors_hold_across_windows_of_a_long_line(fs: FileSystem) -> None:
    line = "ab" * 100_000 + "END"
    fs.write("/w.txt", line + "\n")
    out = run_tool(fs, "grep", pattern=r"b$|^a|END$", regex=True, output_mode="content")
    starts = [int(m) for m in re.findall(r"\[chars (\d+)-", out)]
    assert starts == [0, len(line) - 3 - 200]


def test_grep_stops_a_catastrophic_regex_and_says_so(fs: FileSystem) -> None:
    fs.write("/a.txt", "aab\n")
    fs.write("/b.txt", "a" * 5_000 + "b\n")
    fs.write("/c.txt", "never searched\n")
    out = run_tool(
        fs, "grep", search_seconds=0.5, pattern="(a|aa)+$|^aab", regex=True, output_mode="content"
    )
    assert out.startswith("/a.txt:1:aab\n[Incomplete: search stopped after 0.5 s")
    assert "Narrow the pattern (avoid nested repeats such as (a+)+)" in out
    only_b = run_tool(fs, "grep", search_seconds=0.5, pattern="(a|aa)+$", regex=True, path="/b.txt")
    assert only_b.startswith("Error: search stopped after 0.5 s: the pattern is too expensive")


def test_grep_refuses_overlong_patterns(fs: FileSystem) -> None:
    fs.write("/a.txt", "a\n")
    assert run_tool(fs, "grep", pattern="a" * 1_001) == (
        "Error: pattern is 1001 characters long; the limit is 1000"
    )


def test_glob_bounds_wildcards_and_results(fs: FileSystem) -> None:
    fs.write("/" + "a" * 200, "x")
    assert run_tool(fs, "glob", pattern="*a" * 33) == (
        "Error: glob pattern has 33 wildcards; the limit is 32. Use fewer wildcards, or grep "
        "with a glob filter"
    )
    heavy = "/**/**/**/**/**/**/**/**/**/**" + "*a" * 14 + "*b"
    assert run_tool(fs, "glob", pattern=heavy) == f"No files match {heavy!r} under /"
    for i in range(1_005):
        fs.write(f"/many/f{i:04d}.txt", "x")
    out = run_tool(fs, "glob", pattern="/many/*.txt")
    assert out.split("\n")[999] == "/many/f0999.txt"
    assert out.endswith("\n[Stopped at 1000 paths; narrow the pattern or path to see more.]")
