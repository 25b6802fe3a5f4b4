"""`ctxlab audit SUITE` over imported LangSmith and LangChain traces whose harness compacted:
the report names each compaction, what it lost and its cache rewrite, and sets the harness
(the `original` arm) beside ctxlab's arms."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from flows.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def _imported_suite(tmp_path: Path) -> Path:
    """The LangSmith and LangChain fixtures imported as a suite by `ctxlab scenarios import`."""
    traces, suite = tmp_path / "traces", tmp_path / "suite"
    traces.mkdir()
    for name in ("langsmith_runs.jsonl", "langchain_deepagents.json"):
        shutil.copy(FIXTURES / name, traces / name)
    assert main(["scenarios", "import", str(traces), "--out", str(suite), "--min-probes", "1"]) == 0
    return suite


def test_the_audit_reports_each_compaction_and_the_harness_beside_ctxlab(
    tmp_path: Path, cli_env: None, capsys: object
) -> None:
    suite, out = _imported_suite(tmp_path), tmp_path / "out"
    before = {p for p in tmp_path.rglob("*")}
    assert main(["audit", str(suite), "--out", str(out)]) == 0
    written = {p for p in tmp_path.rglob("*")} - before
    assert written and all(p == out or out in p.parents for p in written)  # only under --out
    text = (out / "suite-audit.md").read_text()
    assert "2 of 2 traces compacted (2 compactions)" in text
    assert "| support-41 | langsmith | 1 | u000 | - | 489 | 160 |" in text
    assert text.count("Your harness kept ") == 1 and "ctxlab `full` kept" in text
    report = json.loads((out / "suite-audit.json").read_text())
    assert {a["strategy"] for a in report["arms"]} == {
        "original", "full", "truncate", "none-unbounded"
    }  # fmt: skip
    # what each compaction lost is what its scenario file records, values and all
    recorded = [c.get("lost", []) for f in sorted(suite.glob("*.yaml"))
                for c in yaml.safe_load(f.read_text())["source"]["compactions"]]  # fmt: skip
    lost = [[p["id"] for p in c["lost"]] for t in report["traces"] for c in t["compactions"]]
    assert sorted(lost) == sorted(recorded)
    assert report["probes_lost_total"] == sum(map(len, recorded))


def test_the_audit_without_a_run_says_what_the_traces_record(
    tmp_path: Path, cli_env: None, capsys: object
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(FIXTURES / "langsmith_runs.jsonl", traces / "a.jsonl")
    suite = tmp_path / "suite"
    assert main(["scenarios", "import", str(traces), "--out", str(suite), "--min-probes", "1"]) == 0
    assert main(["audit", str(suite), "--no-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])  # type: ignore[attr-defined]
    assert report["compactions_total"] == 1 and report["headline"] is None
    assert report["cache_rewrite_tokens_total"] == 160


def test_an_audit_of_no_folder_is_one_line(tmp_path: Path, cli_env: None) -> None:
    assert main(["audit", str(tmp_path / "nothing")]) == 2


def test_a_suite_eval_with_the_original_arm_sets_the_harness_beside_full(
    tmp_path: Path, cli_env: None, capsys: object
) -> None:
    suite = _imported_suite(tmp_path)
    argv = ["eval", "--scenario", str(suite), "--strategy", "original", "--strategy", "full",
            "--no-save", "--reader", "ideal"]  # fmt: skip
    capsys.readouterr()  # type: ignore[attr-defined]
    assert main(argv) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    flat = " ".join(out.split())  # the headline wraps at the terminal's width
    line = flat[flat.index("Your harness kept ") :]
    assert "of what the agent later needed at" in line and "ctxlab `full` kept" in line
    assert re.search(r"[│|] original\s+[│|]", out)  # its row in the fitted table
