"""A scenario file is shared, so it is read as hostile input: bounded parsing, one-line errors
naming the file and line, private skill folders, and cues under a time budget."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest
import yaml

from evals.errors import CueTooSlowError, ScenarioFileError
from evals.scenarios import safe_yaml
from evals.scenarios.from_file import load_scenario_file
from evals.simulated.plan import Cue
from evals.simulated.reader import find, occurrences

HEAD = """format: ctxlab-scenario/1
name: shared
model:
  window: 16000
turns:
- id: u1
  text: Look it up.
"""


def write(tmp_path: Path, text: str, name: str = "shared.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(path: Path) -> str:
    with pytest.raises(ScenarioFileError) as info:
        load_scenario_file(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_a_plain_file_loads(tmp_path: Path) -> None:
    scenario = load_scenario_file(write(tmp_path, HEAD))
    assert scenario.name == "shared" and scenario.window == 16_000


def test_an_alias_bomb_in_call_arguments_is_refused_before_it_expands(tmp_path: Path) -> None:
    # Ten levels of ten aliases: 10**10 strings once the arguments are serialised.
    anchors = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    anchors += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    text = HEAD + (
        "  steps:\n  - note: Looking.\n    calls:\n    - tool: lookup\n      arguments:\n"
        + "".join(f"        {a}\n" for a in anchors)
    )
    message = refused(write(tmp_path, text))
    assert "shared.yaml:14: YAML alias *a0 refused" in message  # a1, the first alias


def test_an_oversized_file_is_refused_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_FILE_BYTES", 2 * 1024 * 1024)
    path = write(tmp_path, HEAD + "description: " + "x" * (3 * 1024 * 1024) + "\n")
    assert refused(path).endswith("shared.yaml: larger than 2 MiB, the limit for a scenario file")


def test_parsing_stops_at_its_time_limit(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD)
    with pytest.raises(safe_yaml.UnsafeYamlError, match=r"not parsed within 0 s, the limit"):
        safe_yaml.read_yaml(path, seconds=0)


def test_deep_nesting_names_the_file_and_line(tmp_path: Path) -> None:
    depth = safe_yaml.MAX_DEPTH + 5
    text = HEAD + "  steps:\n  - note: Deep.\n    calls:\n    - tool: lookup\n"
    text += "      arguments: {x: " + "[" * depth + "]" * depth + "}\n"
    message = refused(write(tmp_path, text))
    assert f"shared.yaml:12: nested deeper than {safe_yaml.MAX_DEPTH} levels" in message


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes((HEAD + "description: caf\xe9\n").encode("latin-1"))
    assert "latin1.yaml:8: not UTF-8 text (byte 0xe9)" in refused(path)


def test_a_key_given_twice_is_refused_not_overwritten(tmp_path: Path) -> None:
    message = refused(write(tmp_path, HEAD + "  text: Another text.\n"))
    assert "shared.yaml:8: duplicate key 'text' (first given at line 7)" in message


def test_invalid_yaml_is_one_line_with_the_line(tmp_path: Path) -> None:
    message = refused(write(tmp_path, HEAD + "title: 'unclosed\n"))
    assert message.startswith(f"{tmp_path / 'shared.yaml'}:9: not valid YAML:")


# -- skills ----------------------------------------------------------------------------------

SKILL = {"path": "/skills/notes/SKILL.md", "content": "---\nname: notes\ndescription: N.\n---\n"}


def test_skills_go_to_a_fresh_private_folder_not_a_guessable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Where the skills used to go: anyone could compute it from the file and plant a link.
    skills = [SKILL]
    digest = hashlib.sha256(json.dumps(skills, sort_keys=True).encode()).hexdigest()[:16]
    victim = tmp_path / "victim"
    victim.mkdir()
    planted = tmp_path / "ctxlab" / "recorded-skills" / digest
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim, target_is_directory=True)
    path = write(tmp_path, HEAD + yaml.safe_dump({"skills": skills}))

    scenario = load_scenario_file(path)
    assert list(victim.iterdir()) == []
    assert scenario.skills_dir is not None and scenario.skills_dir.parent == tmp_path.resolve()
    assert stat.S_IMODE(os.stat(scenario.skills_dir).st_mode) == 0o700
    assert (scenario.skills_dir / "notes" / "SKILL.md").read_text() == SKILL["content"]


# -- cues --------------------------------------------------------------------------------------


def test_a_nested_repeat_in_a_cue_finishes_or_stops_at_the_budget() -> None:
    tail = "x" + "a" * 30
    # (a+)+b took minutes on the re engine; the regex engine sees that no b can follow.
    assert find(Cue(patterns=("(a+)+b",)), [f"reply: {tail}"]) is None
    with pytest.raises(CueTooSlowError, match=r"cue '\(a\|aa\)\+c' took over 2 s"):
        occurrences(["(a|aa)+c"], ["a" * 40 + "\nc"])


def test_a_cue_the_regex_engine_cannot_compile_is_refused_at_load(tmp_path: Path) -> None:
    probe = {"id": "p", "kind": "recall", "question": "Which?", "answer": "x",
             "cue": {"patterns": ["(?<name>x)"]}}  # fmt: skip
    message = refused(write(tmp_path, HEAD + yaml.safe_dump({"probes": [probe]})))
    assert "not a valid regex" in message


def test_an_eval_of_a_file_with_a_runaway_cue_stops_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    from flows.cli import main

    probe = {"id": "p", "kind": "recall", "question": "What did I say?", "answer": "aaaa",
             "cue": {"patterns": ["((?:a|aa)+c)"]}, "source": "user"}  # fmt: skip
    text = HEAD.replace("Look it up.", "Remember " + "a" * 40) + yaml.safe_dump({"probes": [probe]})
    path = write(tmp_path, text)
    argv = ["eval", "--scenario", str(path), "--strategy", "full", "--seed", "0", "--no-save"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "cue '((?:a|aa)+c)' took over 2 s on one text" in err and len(err.splitlines()) == 1
