"""A suite's files: a folder of scenario files (one per imported trace) and its index.

`suite.json` (`ctxlab-suite/1`, written by a folder import) lists the files, the trace each came
from and what the import skipped; without it, every *.yaml/*.yml in the folder is a trace. A
scenario file's `source.original` (the original harness's tokens, cost and compactions) is read
here; analysis/suite.py summarises a suite's results.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

SUITE_FORMAT = "ctxlab-suite/1"
SUITE_INDEX = "suite.json"
ORIGINAL_INTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                 "compactions")  # fmt: skip


@dataclass(frozen=True)
class SuiteFile:
    """One scenario file of a suite: the file, the trace it was imported from (the file's name
    without an index), its trace format, what its import skipped, and `source.original`."""

    file: Path
    trace: str
    format: str | None = None
    skipped: tuple[Any, ...] = ()
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    directory: Path
    traces: tuple[SuiteFile, ...]
    skipped: tuple[Any, ...] = ()


def is_suite(path: str) -> bool:
    return Path(path).is_dir()


def load_suite(directory: str | Path) -> Suite:
    """The suite in `directory`, sorted by file name. Raises ValueError on a bad index, a file
    it names that is missing, no scenario file at all, or two files with the same `name:`
    (their results would be pooled)."""
    from evals.scenarios.from_file import read_spec

    entries, skipped = _entries(Path(directory))
    traces = []
    names: dict[str, Path] = {}
    for path, trace, fmt, skips in entries:
        spec = read_spec(path)
        if spec.name in names:
            raise ValueError(
                f"{names[spec.name].name} and {path.name} have the same name {spec.name!r}: "
                "give each scenario file its own `name:`"
            )
        names[spec.name] = path
        traces.append(SuiteFile(path, trace, fmt, skips, original_usage(spec.source)))
    # A trace id is the key results are pooled and counted by: files sharing one (two session
    # files of one conversation, a resumed Claude Code session) are told apart by file.
    ids = Counter(t.trace for t in traces)
    traces = [replace(t, trace=f"{t.trace} ({t.file.name})") if ids[t.trace] > 1 else t
              for t in traces]  # fmt: skip
    return Suite(Path(directory), tuple(traces), skipped)


def suite_files(directory: str | Path) -> list[Path]:
    """The scenario files of the suite in `directory`, in the order of `load_suite`'s traces,
    without reading any: what runs can be planned (and workers started) from while the files
    are read. Raises ValueError as `load_suite` does on a bad index, a missing file or none."""
    return [path for path, *_ in _entries(Path(directory))[0]]


def _entries(root: Path) -> tuple[list[tuple[Path, str, Any, tuple[Any, ...]]], tuple[Any, ...]]:
    """(file, trace id, trace format, what its import skipped) for each file, sorted by file
    name, and what the whole import skipped."""
    from evals.scenarios.from_file import SUFFIXES

    index = root / SUITE_INDEX
    skipped: tuple[Any, ...] = ()
    if index.is_file():
        try:
            doc = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{index}: not a readable suite index: {exc}") from None
        if not isinstance(doc, dict) or doc.get("format") != SUITE_FORMAT:
            raise ValueError(f"{index}: format must be {SUITE_FORMAT!r}")
        rows = doc.get("scenarios")
        if not isinstance(rows, list) or not all(
            isinstance(r, dict) and isinstance(r.get("file"), str) for r in rows
        ):
            raise ValueError(f"{index}: scenarios must be a list of objects with a `file`")
        missing = [r["file"] for r in rows if not (root / r["file"]).is_file()]
        if missing:
            raise ValueError(f"{index} names missing scenario files: {', '.join(missing)}")
        entries = [
            (root / r["file"], str(r.get("trace") or r["file"]), r.get("format"),
             tuple(r.get("skipped") or ()))
            for r in rows
        ]  # fmt: skip
        skipped = tuple(doc.get("skipped") or ())
    else:
        files = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES]
        entries = [(p, p.name, None, ()) for p in files]
    if not entries:
        raise ValueError(f"suite {root} holds no scenario file (.yaml, .yml) and no {SUITE_INDEX}")
    return sorted(entries, key=lambda e: e[0].name), skipped


def original_usage(source: Mapping[str, Any]) -> dict[str, Any]:
    """`source.original` with only the keys of the contract, each of its type (anything else
    is dropped rather than shown as if the harness had reported it)."""
    given = source.get("original")
    if not isinstance(given, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key in ORIGINAL_INTS:
        value = given.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[key] = value
    cost = given.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
        out["cost_usd"] = float(cost)
    if isinstance(given.get("model"), str):
        out["model"] = given["model"]
    return out
