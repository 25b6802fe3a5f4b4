"""A scenario file is read and validated once per process while it stays the same, and what
reading it builds (cue patterns, tool argument models) is built once for every file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import regex
import regex._main

from evals.scenarios import format as scenario_format
from evals.scenarios.from_file import load_scenario_file, read_spec
from evals.simulated import reader
from harness.tools import ToolArgumentError

HEAD = """format: ctxlab-scenario/1
name: cached
model:
  window: 16000
turns:
- id: u1
  text: Look it up.
"""


def test_an_unchanged_file_is_validated_once(tmp_path: Path) -> None:
    path = tmp_path / "cached.yaml"
    path.write_text(HEAD, encoding="utf-8")
    assert read_spec(path) is read_spec(str(path))


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "cached.yaml"
    path.write_text(HEAD, encoding="utf-8")
    first = read_spec(path)
    stat = path.stat()
    path.write_text(HEAD.replace("name: cached", "name: changed"), encoding="utf-8")
    # Same modification time: the size alone tells the files apart.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert first.name == "cached" and read_spec(path).name == "changed"


def test_a_cue_is_compiled_once_however_many_files_hold_it() -> None:
    scenario_format._check_cue.cache_clear()
    for _ in range(3):
        scenario_format.CueSpec(patterns=[r"order (#W\d{7})"])
    info = scenario_format._check_cue.cache_info()
    assert (info.misses, info.hits) == (1, 2)


TOOLS = """tools:
- name: lookup
  parameters:
    type: object
    properties:
      {params}
"""


def _with_tool(tmp_path: Path, name: str, params: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    text = HEAD.replace("name: cached", f"name: {name}") + TOOLS.format(params=params)
    path.write_text(text, encoding="utf-8")
    return path


def test_files_declaring_the_same_tool_share_its_arguments_model(tmp_path: Path) -> None:
    one = load_scenario_file(_with_tool(tmp_path, "one", "id: {type: string}"))
    two = load_scenario_file(_with_tool(tmp_path, "two", "id: {type: string}"))
    other = load_scenario_file(_with_tool(tmp_path, "other", "key: {type: string}"))
    (a,), (b,), (c,) = one.tools, two.tools, other.tools
    assert a.args_model is b.args_model and a.args_model is not c.args_model
    assert a.validate({"id": "x"}) == {"id": "x"} and c.validate({"key": "y"}) == {"key": "y"}
    with pytest.raises(ToolArgumentError, match="key: Extra inputs are not permitted"):
        a.validate({"key": "y"})


def test_the_reader_compiles_no_cue_again_that_a_file_s_check_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # More cues than `regex` keeps (500): its own cache would have forgotten the first ones.
    patterns = [rf"ticket (#T\d{{6}}) closed {i}" for i in range(600)]
    scenario_format._check_cue.cache_clear()
    reader.cue_regex.cache_clear()
    regex.purge()
    scenario_format.CueSpec(patterns=patterns)
    parsed: list[str] = []
    parse = regex._main._parse_pattern
    monkeypatch.setattr(regex._main, "_parse_pattern", lambda *a: parsed.append("!") or parse(*a))
    assert reader.cue_hits(patterns[7], "ticket #T123456 closed 7") == [(0, "#T123456")]
    for p in patterns:
        reader.cue_hits(p, "ticket #T654321 closed 1")
    assert parsed == []
