"""A scenario file is read and validated once per process while it stays the same."""

from __future__ import annotations

import os
from pathlib import Path

from evals.scenarios import format as scenario_format
from evals.scenarios.from_file import read_spec

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
