"""A recorded step whose slots the reader filled wrong still gets the reply the recorded agent
got (evals/scenarios/replies.py): what a replay shows afterwards, and so every later probe's
availability, never depends on a reader's mistake. Hand-written fixtures in the shape of a
mini-swe-agent run (a listing names a function, a later heredoc uses it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from evals.run.replay import replay
from evals.scenarios.format import ReplySpec
from evals.scenarios.from_file import load_scenario_file
from evals.scenarios.replies import RecordedReplies

LISTING = "   40\tclass Response:\n   41\t    def make_bytes(self, value):\n   42\t        pass"
SCRIPT = "cat <<'PY' > /tmp/fix.py && python3 /tmp/fix.py\nprint(Response.{{arg_1}})\nPY"
REPLY = "django.core.exceptions.ImproperlyConfigured: Requested setting DEFAULT_CHARSET"


def _scenario(directory: Path, cue: str) -> Path:
    """A run that lists a file, then runs a script naming the listed function (slot `arg_1`,
    found by `cue`), whose reply holds the value a later probe asks for."""
    bash = {"type": "object", "properties": {"command": {"type": "string"}}}
    recorded = SCRIPT.replace("{{arg_1}}", "make_bytes")
    spec = {
        "format": "ctxlab-scenario/1", "name": "slots", "model": {"window": 16000},
        "system_prompt": "You fix code with a shell.",
        "tools": [{"name": "bash", "description": "Run a command.", "parameters": bash}],
        "turns": [{"id": "u1", "text": "Fix the response class.", "steps": [
            {"note": "", "calls": [{"tool": "bash", "arguments": {"command": "nl -ba r.py"}}]},
            {"note": "", "calls": [{"tool": "bash", "arguments": {"command": SCRIPT}}],
             "slots": {"arg_1": {"patterns": [cue]}}},
            {"note": "", "calls": [{"tool": "bash", "arguments": {"command": "ls"}}]},
        ]}],
        "replies": [
            {"tool": "bash", "arguments": {"command": "nl -ba r.py"}, "content": LISTING},
            {"tool": "bash", "arguments": {"command": recorded}, "content": REPLY},
            {"tool": "bash", "arguments": {"command": "ls"}, "content": "r.py"},
        ],
        "probes": [{"id": "setting", "kind": "recall", "after": "u1",
                    "question": "What is the `setting` the fix script printed?",
                    "answer": "DEFAULT_CHARSET",
                    "cue": {"patterns": [r"Requested setting (\w+)"]}}],
    }  # fmt: skip
    path = directory / "slots.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_a_misfilled_slot_still_gets_the_recorded_reply(tmp_path: Path) -> None:
    # The cue finds nothing, so the reader writes "unknown" into the script: on the old rule
    # the call matched no recording, its reply was an error, and the value was never shown.
    scenario = load_scenario_file(_scenario(tmp_path, r"def (nowhere_\w+)"))
    out = asyncio.run(replay(scenario, "none", window=16_000, reader="ideal"))
    assert out.store is not None
    calls = [c["arguments"]["command"] for c in out.store.messages.all_tool_calls()]
    out.store.close()
    assert "print(Response.unknown)" in calls[1]  # the model's own words stay in its call
    (probe,) = out.probes
    assert probe.availability == "in_view" and probe.correct, (probe.availability, probe.answer)


def test_a_rightly_filled_slot_reads_the_same(tmp_path: Path) -> None:
    scenario = load_scenario_file(_scenario(tmp_path, r"def (\w+)\(self, value\)"))
    out = asyncio.run(replay(scenario, "none", window=16_000, reader="ideal"))
    if out.store is not None:
        out.store.close()
    assert [p.availability for p in out.probes] == ["in_view"]


def test_a_slotted_step_many_recorded_calls_fit_gets_the_next_in_the_recordings_order() -> None:
    replies = [
        ReplySpec(tool="bash", arguments={"command": f"nl -ba {name}"}, content=name.upper())
        for name in ("a.py", "b.py", "a.py")
    ]
    replies[2] = replies[2].model_copy(update={"occurrence": 2, "content": "A.PY again"})
    tool = RecordedReplies("bash", replies, [{"command": "nl -ba {{arg_1}}"}])

    class Store:  # stands in for the replay's store (counts are kept per store)
        pass

    store = Store()
    got = [tool.reply(store, {"command": c}) for c in ("nl -ba oops", "nl -ba b.py", "nl -ba x")]
    assert got == ["A.PY", "B.PY", "A.PY again"]
    # A call no slotted step stands for is still refused.
    assert tool.reply(store, {"command": "rm -rf /"}).startswith("Error: the recording has no")
