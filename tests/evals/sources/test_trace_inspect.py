"""Inspect AI logs, `.json` and `.eval` archives, on a hand-made log."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from helpers.traces import read_one

from evals.errors import TraceFormatError
from evals.sources.formats import read_folder, read_traces
from evals.sources.formats.inspect_ai import MAX_RATIO
from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Skipped

FIXTURES = Path(__file__).parent / "fixtures"
LOG = json.loads((FIXTURES / "inspect_log.json").read_text())


def _archive(path: Path, samples: dict[str, bytes]) -> Path:
    header = {k: v for k, v in LOG.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for name, data in samples.items():
            z.writestr(name, data)
    return path


def test_model_events_are_the_calls_and_a_rewritten_input_is_the_compaction() -> None:
    trace = read_one("inspect_log.json", "inspect-ai")
    assert trace.system.startswith("You are a careful research assistant")
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant", "tool",
                                                "assistant"]  # fmt: skip
    assert trace.messages[1].text == "Reading the env file."  # the reasoning part left out
    assert trace.messages[4].is_error  # the tool's error
    usage = trace.messages[3].usage
    assert usage is not None and usage.cache_read_tokens == 768
    (compaction,) = trace.compactions
    assert "pgbouncer" in compaction.summary and compaction.kept == 1
    assert (compaction.tokens_before, compaction.tokens_after, compaction.trigger) == (
        1012, 210, "summary"
    )  # fmt: skip
    doc = trace_to_scenario(trace)
    assert doc["source"]["compactions"][0]["anchor"] == "Command timed out after 30 seconds"


def test_an_eval_archive_reads_each_sample_and_refuses_a_bomb(tmp_path: Path) -> None:
    sample = json.dumps(LOG["samples"][0]).encode()
    bomb = b"{" + b" " * (len(sample) * MAX_RATIO * 2) + b"}"
    path = _archive(tmp_path / "run.eval", {"samples/port-q_epoch_1.json": sample,
                                            "samples/z_epoch_1.json": bomb})  # fmt: skip
    trace = read_one(path, "inspect-ai")
    assert trace.id == "run-port-q-epoch-1" and len(trace.compactions) == 1
    (refused,) = trace.skipped
    assert refused.where.file.endswith("!samples/z_epoch_1.json") and "ratio" in refused.reason


def test_a_bad_archive_is_one_line_and_never_stops_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "broken.eval").write_bytes(b"PK\x03\x04 not really a zip")
    _archive(folder / "empty.eval", {})
    _archive(folder / "good.eval", {"samples/a_epoch_1.json": json.dumps(LOG["samples"][0])})
    found = list(read_folder(folder))
    traces = [t for t in found if not isinstance(t, Skipped)]
    assert [t.id for t in traces] == ["good-port-q-epoch-1"]
    reasons = {Path(s.where.file).name: s.reason for s in found if isinstance(s, Skipped)}
    assert set(reasons) == {"broken.eval", "empty.eval"}
    assert all("\n" not in r for r in reasons.values())
    with pytest.raises(TraceFormatError):
        list(read_traces(folder / "empty.eval"))


def test_a_sample_without_model_events_reads_its_messages(tmp_path: Path) -> None:
    log = json.loads(json.dumps(LOG))
    log["samples"][0]["events"] = []
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    (trace,) = read_traces(path)
    assert [m.role for m in trace.messages] == ["user", "assistant"]
