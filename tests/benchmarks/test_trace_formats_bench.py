"""What reading trace files costs: a generated 10 MB Claude Code session (peak RSS of a fresh
process that parses it; #18 asks for under 300 MB) and a folder of 500 generated traces of
median ~75k characters, a few up to 2 MB, in three formats (time and peak RSS).

Run with `uv run pytest tests/benchmarks/test_trace_formats_bench.py --benchmark-only -s`.
Numbers go in the notes and `extra_info`, never in asserts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

PARSE = """
import json, resource, sys, time
from pathlib import Path
from evals.traces.formats import read_folder, read_traces
path = Path(sys.argv[1])
start = time.perf_counter()
items = list(read_folder(path)) if path.is_dir() else list(read_traces(path))
messages = sum(len(t.messages) for t in items if hasattr(t, "messages"))
print(json.dumps({"seconds": time.perf_counter() - start, "items": len(items),
                  "messages": messages,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _session(path: Path, target_bytes: int, rng: random.Random) -> None:
    """A Claude Code session: user turns, assistant messages split over events (text, then
    tool_use, same message id), tool results of a few kilobytes, usage on every call."""
    parent = None
    n = 0
    with path.open("w") as f:

        def write(event: dict[str, object]) -> None:
            nonlocal parent, n
            n += 1
            uuid = f"u{n:07d}"
            f.write(json.dumps({"uuid": uuid, "parentUuid": parent, "sessionId": "bench",
                                "isSidechain": False, "type": event["role"],
                                "message": event}) + "\n")  # fmt: skip
            parent = uuid

        write({"role": "user", "content": "Refactor the billing module."})
        while f.tell() < target_bytes:
            mid = f"msg_{n}"
            usage = {"input_tokens": 900, "output_tokens": 60, "cache_read_input_tokens": 8000,
                     "cache_creation_input_tokens": 300}  # fmt: skip
            write({"id": mid, "role": "assistant", "model": "claude-x", "usage": usage,
                   "content": [{"type": "text", "text": "Reading the next file."}]})  # fmt: skip
            write({"id": mid, "role": "assistant", "model": "claude-x", "usage": usage,
                   "content": [{"type": "tool_use", "id": f"t{n}", "name": "Read",
                                "input": {"file_path": f"/src/m{n}.py"}}]})  # fmt: skip
            body = "\n".join(f"line {i}: value {rng.randint(0, 10**9)}" for i in range(150))
            write({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n - 1}",
                                                 "content": body}]})  # fmt: skip


def _chat(path: Path, chars: int, rng: random.Random) -> None:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coder."}]
    size = 0
    n = 0
    while size < chars:
        n += 1
        body = " ".join(str(rng.randint(0, 10**6)) for _ in range(rng.randint(50, 400)))
        messages.append(
            {
                "role": "assistant",
                "content": "Next.",
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"cat f{n}"}),
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": body})
        size += len(body) + 120
    path.write_text(json.dumps({"messages": messages}))


def _mini(path: Path, chars: int, rng: random.Random) -> None:
    messages = [{"role": "system", "content": "shell"}, {"role": "user", "content": "fix it"}]
    size = 0
    while size < chars:
        out = "\n".join(str(rng.randint(0, 10**6)) for _ in range(rng.randint(30, 300)))
        messages.append({"role": "assistant", "content": "THOUGHT\n\n```bash\nls -la\n```"})
        answer = f"<returncode>0</returncode>\n<output>\n{out}\n</output>"
        messages.append({"role": "user", "content": answer})
        size += len(out) + 80
    info = {"exit_status": "Submitted", "submission": ""}
    doc = {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1"}
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("traces")
    rng = random.Random(18)
    session = root / "session.jsonl"
    _session(session, 10 * 1024 * 1024, rng)
    folder = root / "folder"
    folder.mkdir()
    for i in range(500):
        chars = 2_000_000 if i % 100 == 7 else int(rng.lognormvariate(11.2, 0.6))  # median ~75k
        kind = i % 3
        if kind == 0:
            _chat(folder / f"run{i:03d}.json", chars, rng)
        elif kind == 1:
            _mini(folder / f"run{i:03d}.traj.json", chars, rng)
        else:
            _session(folder / f"run{i:03d}.jsonl", chars, rng)
    return session, folder


def _measure(path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", PARSE, str(path)], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return json.loads(done.stdout)


def test_a_10_mb_claude_code_session_streams(benchmark, corpus: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    session, _ = corpus
    numbers = benchmark.pedantic(_measure, args=(session,), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers, file_mb=session.stat().st_size / 2**20)
    print(f"\n10 MB session: {numbers}")


def test_a_folder_of_500_traces(benchmark, corpus: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    _, folder = corpus
    sizes = sorted(p.stat().st_size for p in folder.iterdir())
    numbers = benchmark.pedantic(_measure, args=(folder,), rounds=1, iterations=1)
    benchmark.extra_info.update(numbers, median_bytes=sizes[250], max_bytes=sizes[-1])
    print(f"\n500 traces (median {sizes[250]} bytes, max {sizes[-1]}): {numbers}")
