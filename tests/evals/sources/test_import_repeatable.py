"""An import is the same file whatever the interpreter's hash seed: a written file's content
whose values became slots was numbered in a set's order, so `arg_N` moved from run to run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_SERVICES = [("alpha", "AXQ7781Z"), ("beta", "BRT5512Q"), ("gamma", "CZP9043W"),
             ("delta", "DKM2219R"), ("eps", "EWN6630T")]  # fmt: skip


def _call(call_id: str, name: str, arguments: dict[str, str]) -> dict[str, object]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}]}  # fmt: skip


def _trace(path: Path) -> None:
    listing = {"services": [{"name": n, "service_id": i} for n, i in _SERVICES]}
    written = " ".join(i for _, i in reversed(_SERVICES))  # equal lengths: only order tells
    messages = [
        {"role": "system", "content": "You are an operations agent."},
        {"role": "user", "content": "Write the service ids to ids.md."},
        _call("c1", "list_services", {}),
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(listing)},
        _call("c2", "read_file", {"path": "notes.txt"}),
        {"role": "tool", "tool_call_id": "c2", "content": "filler " * 300},
        _call("c3", "write_file", {"path": "ids.md", "content": written}),
        {"role": "tool", "tool_call_id": "c3", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")


def _imported(trace: Path, out: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    argv = [sys.executable, "-m", "flows.cli", "scenarios", "import", str(trace),
            "--min-probes", "1", "--out", str(out)]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return out.read_text(encoding="utf-8")


def test_slot_numbers_do_not_follow_the_hash_seed(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    _trace(trace)
    first = _imported(trace, tmp_path / "a.yaml", "1")
    assert "{{arg_2}}" in first  # the content's values are slots, so their order is at stake
    for seed in ("2", "3", "4"):
        assert _imported(trace, tmp_path / f"s{seed}.yaml", seed) == first, seed
