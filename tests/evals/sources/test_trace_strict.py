"""Strict formats (evals/sources/formats/resemble.py): an import whose guessed format reads no
tool step from a file is refused in one line naming what the file looks like; `--format`
forces a format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.sources.formats import FORMATS
from evals.sources.trace_import import import_path
from flows.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
# The harness-formats work may teach ctxlab to read SWE-agent; then auto reads it properly.
READS_SWE_AGENT = any(f.startswith("swe-agent") for f in FORMATS)


@pytest.mark.skipif(READS_SWE_AGENT, reason="SWE-agent trajectories have a reader of their own")
def test_a_swe_agent_trajectory_is_refused_naming_what_it_looks_like(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    traj = FIXTURES / "swe_agent.traj"
    assert main(["scenarios", "import", str(traj), "--out", str(tmp_path / "t.yaml")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"nothing imported from {traj}: read as openai-chat, its trace holds no tool step; it "
        "looks like a SWE-agent trajectory, which ctxlab does not read (--format openai-chat "
        "imports it anyway)"
    )
    # forced, it is read as asked: the refusal is about the guess, not the file
    forced = import_path(traj, tmp_path / "f.yaml", format="openai-chat", min_probes=1)
    assert "no tool step" not in " ".join(s.reason for s in forced.skipped)


def test_a_file_of_conversations_without_steps_is_refused_and_a_folder_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    chat = {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    }
    (folder / "chat.jsonl").write_text(json.dumps(chat) + "\n" + json.dumps(chat) + "\n")
    (folder / "tau.json").write_bytes((FIXTURES / "chat_tau.json").read_bytes())
    summary = import_path(folder, tmp_path / "out", min_probes=1)
    assert summary.traces == 1  # chat_tau's first trace; its chat-only second one has no probes
    (refused,) = [s for s in summary.skipped if s.where.file.endswith("chat.jsonl")]
    assert refused.reason == (
        "read as openai-chat, its 2 traces hold no tool step; it may be another harness's "
        "layout (--format openai-chat imports it anyway)"
    )
