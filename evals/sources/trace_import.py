"""`ctxlab scenarios import PATH` for trace files and folders: each trace a scenario file
(to_scenario.py), and for a file of many traces or a folder, a suite index (`suite.json`,
`ctxlab-suite/1`, read by evals/scenarios/suite.py) beside them naming each file, the trace it
came from and every record the import skipped, by file and line.

A folder import never stops at a bad file or a bad trace: each is recorded as skipped and the
rest imports. Nothing existing is overwritten without `force`, and that is checked before any
trace is read. Traces are read, converted and written one at a time, so a large folder is
never held in memory at once.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.errors import TraceFormatError
from evals.scenarios.suite import SUITE_FORMAT, SUITE_INDEX
from evals.sources.copies import held_elsewhere
from evals.sources.formats import FORMATS, read_folder, read_traces
from evals.sources.formats.records import damage_by_file, is_damaged
from evals.sources.hygiene import (
    FLAG_BELOW,
    MIN_PROBES,
    rejected_counts,
    rejections_line,
    require_probes,
)
from evals.sources.redact import Redactor
from evals.sources.thread_import import check_scenario_path, write_scenario
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Skipped, Trace, Where

EXPORTS = Path("exports")
MAX_SUMMARY_LINES = 20


@dataclass
class ImportSummary:
    """What an import wrote and skipped. `suite` is the index written (None for one file);
    `skipped` names every record, trace or file left out, by file and line."""

    source: Path
    out: Path
    files: list[Path] = field(default_factory=list)
    suite: Path | None = None
    traces: int = 0
    probes: int = 0
    redactions: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    candidates: int = 0  # values a probe was considered for, over the imported traces
    rejected: Counter[str] = field(default_factory=Counter)  # by reason (hygiene.REASONS)
    flagged: list[str] = field(default_factory=list)  # traces where under half survived

    @property
    def ok(self) -> bool:
        return bool(self.files)

    def lines(self) -> list[str]:
        """The summary for a terminal: one line of totals (or of why nothing imported), then
        one per skipped record, at most `MAX_SUMMARY_LINES`."""
        if not self.files:
            # A whole file's or trace's reason first: the records it dropped say less.
            first = sorted(self.skipped, key=lambda s: s.where.line is not None)
            why = "; ".join(_said(s, self.source) for s in first[:3]) or "no traces"
            more = f" (and {len(self.skipped) - 3} more)" if len(self.skipped) > 3 else ""
            return [f"nothing imported from {self.source}: {why}{more}"]
        where = self.suite or self.files[0]
        damaged = sum(map(is_damaged, self.skipped))
        shown = damage_by_file(self.skipped)  # a file's damaged lines: one line, counted
        out = [
            f"imported {self.traces} trace{'s' * (self.traces != 1)} from {self.source} into "
            f"{where}: {self.probes} probes, {self.redactions} redactions, "
            f"{len(self.skipped)} skipped{f' ({damaged} damaged lines)' if damaged else ''}, "
            f"in {self.seconds:.1f} s",
            rejections_line(self.candidates, self.rejected),
        ]
        if self.flagged:
            names = ", ".join(self.flagged[:5]) + (" ..." if len(self.flagged) > 5 else "")
            out.append(f"flagged {len(self.flagged)} trace{'s' * (len(self.flagged) != 1)} where "
                       f"fewer than half the candidates survived: {names}")  # fmt: skip
        for s in shown[:MAX_SUMMARY_LINES]:
            out.append(f"skipped {s.where}: {s.reason}")
        if len(shown) > MAX_SUMMARY_LINES:
            rest = len(shown) - MAX_SUMMARY_LINES
            out.append(f"... and {rest} more skipped (listed in {where})")
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source), "out": str(self.out),
            "files": [str(f) for f in self.files],
            "suite": str(self.suite) if self.suite else None, "traces": self.traces,
            "probes": self.probes, "redactions": self.redactions,
            "candidates": self.candidates, "rejected": dict(self.rejected),
            "flagged": self.flagged,
            "skipped": [_skip_row(s) for s in self.skipped], "seconds": round(self.seconds, 2),
        }  # fmt: skip


def import_path(
    path: Path,
    out: Path | None,
    *,
    format: str = "auto",
    window: int | None = None,
    redact: Sequence[str] = (),
    force: bool = False,
    min_probes: int = MIN_PROBES,
) -> ImportSummary:
    """Import the trace file or folder `path` as scenario files. A file holding one trace
    writes one file (`out`, default exports/trace-<name>.yaml, or into `out` when it is a
    folder); a file of many traces or a folder writes one file per trace into the folder
    `out` (default exports/traces-<name>/) and `suite.json`. Raises `ValueError` for a bad
    option, `FileExistsError` when something would be overwritten without `force`,
    `FileNotFoundError` when `path` does not exist; a file with nothing sound gives a summary
    with no files and the reason in `skipped`, and so is a trace with fewer than
    `min_probes` probes, with the reasons its candidates were rejected."""
    start = time.perf_counter()
    path = Path(path)
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; choose auto or one of "
                         f"{', '.join(FORMATS)}")  # fmt: skip
    if window is not None and window <= 1000:
        raise ValueError(f"--window {window}: a window must be over 1000 tokens")
    Redactor(redact)  # a bad --redact regex is refused before any work
    redactor = tuple(redact)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder (nor a run id in the store)")
    single = path.is_file() and (out is None or not _is_folder_name(out))
    if single:
        target = Path(out) if out is not None else None
        if target is not None:
            check_scenario_path(target, force=force)
        return _import_file(path, target, format, window, redactor, force, start, min_probes)
    folder = Path(out) if out is not None else EXPORTS / f"traces-{_slug(_stem(path))}"
    _check_folder(folder, force)
    summary = ImportSummary(path, folder)

    def items() -> Iterator[Trace | Skipped]:
        if path.is_file():
            return _file_items(path, format)
        return read_folder(path, format, strict=True)

    # Read twice: first only the records' ids, to leave out a trace another one holds.
    held = held_elsewhere(items())
    return _write_suite(items(), summary, folder, window, redactor, force, start, min_probes,
                        held)  # fmt: skip


def _import_file(
    path: Path, out: Path | None, format: str, window: int | None, redactor: Sequence[str],
    force: bool, start: float, min_probes: int,
) -> ImportSummary:  # fmt: skip
    """A file: one trace is one scenario file; more make a suite in a folder."""
    summary = ImportSummary(path, out or EXPORTS)
    traces = _file_items(path, format)
    first = next(traces, None)
    second = next(traces, None)
    if isinstance(first, Trace) and second is None:
        target = out or EXPORTS / f"trace-{_slug(Redactor(redactor).text(first.id))}.yaml"
        summary.out = target
        check_scenario_path(target, force=force)
        try:
            doc = trace_to_scenario(first, window=window, redactor=Redactor(redactor))
            require_probes(doc, f"trace {first.id}", min_probes)
        except ValueError as exc:
            summary.skipped += [*first.skipped, Skipped(Where(str(path)), str(exc))]
            return summary
        except Exception as exc:  # a shape no step foresaw: said in one line, not a traceback
            summary.skipped += [*first.skipped, _unforeseen(first, exc)]
            return summary
        summary.files.append(write_scenario(doc, target, force=force))
        _count(summary, first, doc)
        summary.seconds = time.perf_counter() - start
        return summary
    if isinstance(first, Skipped):
        summary.skipped.append(first)
        return summary
    # Many traces in one file: a suite folder, named after the file unless --out names one.
    folder = EXPORTS / f"traces-{_slug(_stem(path))}" if out is None else out
    _check_folder(folder, force)
    summary.out = folder
    items = (item for item in (first, second, *traces) if item is not None)
    held = held_elsewhere(_file_items(path, format))
    return _write_suite(items, summary, folder, window, redactor, force, start, min_probes,
                        held)  # fmt: skip


def _write_suite(
    items: Iterable[Trace | Skipped], summary: ImportSummary, folder: Path, window: int | None,
    redactor: Sequence[str], force: bool, start: float, min_probes: int, held: dict[int, str],
) -> ImportSummary:  # fmt: skip
    """One scenario file per sound trace into `folder`, then its `suite.json`; a trace
    `held` names (by its position among the traces) is skipped with the reason given."""
    rows: list[dict[str, Any]] = []
    names: set[str] = set()
    position = -1
    for item in items:
        if isinstance(item, Skipped):
            summary.skipped.append(item)
            continue
        position += 1
        if position in held:
            summary.skipped.append(Skipped(Where(item.source), held[position]))
            continue
        row = _write_one(item, folder, names, window, redactor, force, summary, min_probes)
        if row is not None:
            rows.append(row)
    if rows:
        summary.suite = _write_index(folder, rows, summary.skipped, force, summary.source,
                                     redactor)  # fmt: skip
    summary.seconds = time.perf_counter() - start
    return summary


def _file_items(path: Path, format: str) -> Iterator[Trace | Skipped]:
    """The traces of one file, or one `Skipped` saying why it has none."""
    try:
        yield from read_traces(path, format, strict=True)
    except (TraceFormatError, UnicodeDecodeError, OSError) as exc:
        yield Skipped(Where(str(path)), str(exc).removeprefix(f"{path}: "))


def _write_one(
    trace: Trace, folder: Path, names: set[str], window: int | None, redactor: Sequence[str],
    force: bool, summary: ImportSummary, min_probes: int,
) -> dict[str, Any] | None:  # fmt: skip
    """Writes one trace's scenario into `folder`; its suite row, or None when it was skipped
    (recorded in `summary`)."""
    shown = Redactor(redactor)
    trace_id = shown.text(trace.id)  # it names files, the scenario and its suite row
    slug = _slug(trace_id)
    name, n = slug, 2
    while name in names:
        name, n = f"{slug}-{n}", n + 1
    names.add(name)
    try:
        doc = trace_to_scenario(trace, window=window, redactor=Redactor(redactor))
        require_probes(doc, f"trace {trace.id}", min_probes)
        doc["name"] = f"trace:{name}"  # a suite refuses two files of one name
        path = write_scenario(doc, folder / f"trace-{name}.yaml", force=force)
    except (ValueError, FileExistsError) as exc:
        summary.skipped += [*trace.skipped, Skipped(Where(trace.source), str(exc))]
        return None
    except Exception as exc:  # a shape no step foresaw: this trace only, said so
        summary.skipped += [*trace.skipped, _unforeseen(trace, exc)]
        return None
    summary.files.append(path)
    _count(summary, trace, doc)
    return {
        "file": path.name,
        "trace": trace_id,
        "format": trace.format,
        "source": str(Path(trace.source).with_name(shown.text(Path(trace.source).name))),
        "skipped": [_skip_row(s) for s in trace.skipped],
    }


def _unforeseen(trace: Trace, exc: Exception) -> Skipped:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return Skipped(Where(trace.source), f"trace {trace.id}: could not be imported "
                   f"({type(exc).__name__}: {first})")  # fmt: skip


def _count(summary: ImportSummary, trace: Trace, doc: dict[str, Any]) -> None:
    summary.traces += 1
    summary.probes += len(doc["probes"])
    summary.redactions += doc["source"]["redactions"]
    summary.skipped += trace.skipped
    counts = doc["probe_counts"]
    summary.candidates += counts.get("candidates", 0)
    summary.rejected.update(rejected_counts(counts))
    if len(doc["probes"]) < counts.get("candidates", 0) * FLAG_BELOW:
        summary.flagged.append(trace.id)


def _said(s: Skipped, source: Path) -> str:
    """A skipped record in a line that names `source` already: its file only when another."""
    reason = s.reason.removeprefix(f"{s.where.file}: ")
    return (
        reason if s.where.file == str(source) and s.where.line is None else f"{s.where}: {reason}"
    )


def _skip_row(s: Skipped) -> dict[str, Any]:
    return {"file": s.where.file, "line": s.where.line, "reason": s.reason}


def _write_index(
    folder: Path, rows: list[dict[str, Any]], skipped: list[Skipped], force: bool, root: Path,
    redactor: Sequence[str],
) -> Path:  # fmt: skip
    """`suite.json` in `folder`, written whole (a temporary file takes its name). Files are
    named relative to the imported `root` (where it lives is the user's business), redacted
    as the traces are (a file name can hold a secret or an address)."""
    index = folder / SUITE_INDEX
    shown = Redactor(redactor)

    def name(file: str) -> str:
        return shown.text(_relative(file, root))

    for row in rows:
        row["source"] = name(row["source"])
        for skip in row["skipped"]:
            skip["file"] = name(skip["file"])
    doc = {
        "format": SUITE_FORMAT,
        "scenarios": rows,
        "skipped": [
            {**_skip_row(s), "file": name(s.where.file), "reason": shown.text(s.reason)}
            for s in skipped
        ],
    }
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{SUITE_INDEX}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
        os.chmod(tmp, 0o644)
        if index.exists() and not force:
            raise FileExistsError(f"{index} exists: pass --force to overwrite it")
        os.replace(tmp, index)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return index


def _relative(file: str, root: Path) -> str:
    base = root if root.is_dir() else root.parent
    try:
        return str(Path(file).resolve().relative_to(base.resolve()))
    except ValueError:
        return Path(file).name


def _check_folder(folder: Path, force: bool) -> None:
    """Refuses a folder that already holds an import (its index or scenario files), unless
    `force`; a file where the folder should be is refused whatever `force` says."""
    if folder.exists() and not folder.is_dir() or folder.suffix.lower() in (".yaml", ".yml"):
        raise ValueError(f"{folder}: a folder or a file of many traces imports into a folder "
                         "(one scenario file per trace), not a file")  # fmt: skip
    if force or not folder.is_dir():
        return
    taken = [p.name for p in folder.iterdir() if p.name == SUITE_INDEX or
             (p.name.startswith("trace-") and p.suffix in (".yaml", ".yml"))]  # fmt: skip
    if taken:
        raise FileExistsError(
            f"{folder} already holds an import ({', '.join(sorted(taken)[:3])}): pass --force "
            "to overwrite it, or give another --out"
        )


def _is_folder_name(out: Path) -> bool:
    """`--out` names a folder: one that exists, or a name without a suffix (a name with one
    is a scenario file, which must then end in .yaml or .yml)."""
    return Path(out).is_dir() or not Path(out).suffix


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".jsonl", ".json", ".traj"):
        name = name.removesuffix(suffix)
    return name or "traces"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-.")[:80] or "trace"
