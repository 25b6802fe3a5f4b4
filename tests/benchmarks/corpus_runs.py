"""The agent runs of the synthetic trace corpus (trace_corpus.py), in no format yet: a task,
tool calls whose results show file contents and command output, and identifiers, line numbers
and paths that a later call or the answer uses again; sized like a user's folder of real runs."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

MEDIAN_CHARS = 75_000  # of a file, as #18 gives them
LARGE_CHARS = 2_000_000
OVERHEAD = 1.3  # a file's characters per character of content (JSON around it), measured
PACKAGES = ("billing", "ledger", "search", "auth", "ingest", "reports", "tides", "queue")
WORDS = ("total", "rate", "offset", "cursor", "batch", "region", "owner", "window", "limit")


@dataclass
class Step:
    """One tool call of a run and what came back, in no format yet."""

    thought: str
    tool: str  # read_file | grep | run_tests | edit_file
    arguments: dict[str, Any]
    command: str  # the same call as a shell command (mini-swe-agent)
    result: str
    failed: bool = False


@dataclass
class Run:
    """A run in no format: the task, its steps, the final answer."""

    task: str
    steps: list[Step] = field(default_factory=list)
    answer: str = ""

    def chars(self) -> int:
        return len(self.task) + sum(len(s.result) + len(s.thought) + 60 for s in self.steps)


def code_lines(rng: random.Random, path: str, lines: int) -> list[str]:
    """A source file's lines: functions with constants, ids and calls a later step reuses."""
    out = [f"# {path}", "from __future__ import annotations", ""]
    while len(out) < lines:
        name = f"{rng.choice(WORDS)}_{rng.randint(10, 999)}"
        out += [
            f"def {name}(value: int) -> int:",
            f'    """The {rng.choice(WORDS)} rule of ORD-{rng.randint(10000, 99999)}."""',
            f"    limit = {rng.randint(2, 90000)}",
            f"    return min(value * {rng.randint(2, 17)}, limit)  # {rng.choice(WORDS)}",
            "",
        ]
    return out


def make_run(rng: random.Random, chars: int) -> Run:
    """A coding run of about `chars` characters: read, grep, test, edit, reusing what it saw."""
    package = rng.choice(PACKAGES)
    files = [f"src/{package}/{rng.choice(WORDS)}_{i}.py" for i in range(rng.randint(4, 12))]
    bug = f"ORD-{rng.randint(10000, 99999)}"
    run = Run(f"Ticket {bug}: the {package} totals are off by one for large batches. Fix it.")
    seen: list[tuple[str, int, str]] = []  # (path, line number, line) from earlier results
    while not run.steps or run.chars() < chars:
        kind = rng.random()
        if kind < 0.45 or not seen:
            path = rng.choice(files)
            lines = code_lines(rng, path, rng.randint(60, 260))
            numbered = "\n".join(f"{n:>5}\t{line}" for n, line in enumerate(lines, 1))
            seen += [(path, n, line) for n, line in enumerate(lines, 1) if "limit =" in line]
            run.steps.append(
                Step(f"Reading {path}.", "read_file", {"path": path}, f"cat -n {path}", numbered)
            )
        elif kind < 0.65:
            word = rng.choice(WORDS)
            hits = [f"{p}:{n}:{line.strip()}" for p, n, line in rng.sample(seen, min(8, len(seen)))]
            run.steps.append(
                Step(
                    f"Where is {word} used?",
                    "grep",
                    {"pattern": word, "path": "src"},
                    f"grep -rn {word} src",
                    "\n".join(hits),
                )
            )
        elif kind < 0.85:
            path, number, _ = rng.choice(seen)
            test = f"tests/test_{path.rsplit('/', 1)[1]}"
            failures = rng.randint(0, 3)
            log = [f"{test}::test_case_{i} PASSED" for i in range(rng.randint(20, 120))]
            log += [
                f"{test}::test_limit_{i} FAILED\nE   assert {rng.randint(1, 9999)} == "
                f"{rng.randint(1, 9999)}\n{path}:{number}: AssertionError"
                for i in range(failures)
            ]
            log.append(f"==== {failures} failed, {len(log) - failures} passed in 3.{number}s ====")
            run.steps.append(
                Step(
                    f"Running the tests for {path} (line {number} looked wrong).",
                    "run_tests",
                    {"path": test},
                    f"python -m pytest {test} -q",
                    "\n".join(log),
                    failed=failures > 0,
                )
            )
        else:
            path, number, line = rng.choice(seen)
            new = line.replace("limit =", "limit = 1 +")
            run.steps.append(
                Step(
                    f"Line {number} of {path} is the off-by-one.",
                    "edit_file",
                    {"path": path, "line": number, "old": line.strip(), "new": new.strip()},
                    # As agents write it: the line it replaces, copied from the file it read.
                    f"sed -i '{number}s/{line.strip()}/{new.strip()}/' {path}",
                    f"Edited {path} at line {number}.",
                )
            )
    path, number, _ = seen[-1]
    run.answer = f"Fixed {bug}: {path} line {number} now adds the missing unit."
    return run


def run_size(rng: random.Random, large: bool) -> int:
    """A run's content size, so that its file has the corpus's size distribution."""
    if large:
        return int(LARGE_CHARS * rng.uniform(0.8, 1.0) / OVERHEAD)
    return int(rng.lognormvariate(math.log(MEDIAN_CHARS / OVERHEAD), 0.6))
