"""Availability at each probe's point of use (evals/scoring/availability.py): in view, one read
away, or lost, with no reader; stored with the probe results; carried probes scored apart."""

from pathlib import Path

import duckdb
import pytest
from role_scenario import PAYMENT, RESERVATION, role_scenario

from evals.run.cell import run_cell
from evals.scoring.availability import IN_VIEW, LOST, ONE_READ, availability, shares
from evals.scoring.storage import load_probes, load_runs, results_from_frame, save_results
from harness.messages import Message


def _verdicts(result):
    return {p.id: p.availability for p in result.probe_results}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(role_scenario(tmp_path_factory.mktemp("roles")))


def test_a_value_is_in_view_one_read_away_or_lost_by_what_the_arm_left(scenario: str) -> None:
    kept = run_cell(scenario, "none-unbounded", window=16000)
    offloaded = run_cell(scenario, "offload", window=16000)
    masked = run_cell(scenario, "mask", {"mask.keep": 1, "mask.batch": 1}, window=16000)
    assert _verdicts(kept)["pay"] == IN_VIEW
    assert _verdicts(offloaded)["pay"] == ONE_READ
    assert _verdicts(masked)["pay"] == LOST
    pay = next(p for p in offloaded.probe_results if p.id == "pay")
    # The evidence names the saved file and quotes the text around the value.
    assert pay.evidence.startswith("/large_tool_results/") and PAYMENT in pay.evidence
    # Shares are over the uncarried probes (two of them here).
    assert (kept.in_view, kept.one_read, kept.lost) == (1.0, 0.0, 0.0)
    assert (offloaded.in_view, offloaded.one_read, offloaded.lost) == (0.0, 1.0, 0.0)
    assert masked.lost == 0.5


def test_carried_probes_are_scored_apart_from_the_headline(scenario: str) -> None:
    run = run_cell(scenario, "none-unbounded", window=16000)
    assert run.probes == 2 and run.carried_probes == 1
    assert run.carried_accuracy == 1.0
    carried = [p for p in run.probe_results if p.carried]
    assert [p.id for p in carried] == ["res"]
    assert RESERVATION in carried[0].evidence


def test_the_question_itself_does_not_make_a_value_in_view() -> None:
    question = "Is the code ZX-991 still valid?"
    msgs = [Message(role="user", content=question)]
    found = availability("ZX-991", "system", msgs, lambda _: None, question)
    assert found.verdict == LOST


def test_a_path_in_view_that_holds_the_value_is_one_read_away() -> None:
    msgs = [Message(role="user", content="Saved to /large_tool_results/call_7 (preview: ...)")]
    files = {"/large_tool_results/call_7": "line 1\nkey: QZ-4471\n"}
    found = availability("QZ-4471", "system", msgs, files.get)
    assert found.verdict == ONE_READ and "QZ-4471" in found.evidence
    assert shares([IN_VIEW, ONE_READ, None, LOST]) == {
        "in_view": pytest.approx(1 / 3, abs=1e-6), "one_read": pytest.approx(1 / 3, abs=1e-6),
        "lost": pytest.approx(1 / 3, abs=1e-6),
    }  # fmt: skip


def test_availability_is_stored_and_an_older_store_still_reads(
    scenario: str, tmp_path: Path
) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    # A store written before availability: its tables lack the new columns.
    con.execute(
        "CREATE TABLE eval_probes (run_key VARCHAR NOT NULL, probe_id VARCHAR NOT NULL, "
        "kind VARCHAR, session INTEGER, question VARCHAR, expected VARCHAR, answer VARCHAR, "
        "correct BOOLEAN, status VARCHAR, retrieval_calls INTEGER, input_tokens BIGINT, "
        "outcome VARCHAR, judge_model VARCHAR, judge_verdict VARCHAR, judge_cost_usd DOUBLE, "
        "source VARCHAR, window_tokens BIGINT)"
    )
    con.execute(
        "INSERT INTO eval_probes (run_key, probe_id, correct) VALUES ('old-0000', 'p1', true)"
    )
    con.close()
    run = run_cell(scenario, "offload", window=16000)
    save_results(db, [run])
    probes = load_probes(db)
    assert probes.filter(probes["run_key"] == "old-0000")["availability"].to_list() == [None]
    stored = probes.filter(probes["probe_id"] == "pay")
    assert stored["availability"].to_list() == [ONE_READ]
    assert PAYMENT in stored["evidence"].to_list()[0]
    (back,) = results_from_frame(load_runs(db))
    assert back.one_read == 1.0 and back.carried_probes == 1 and back.thresholds


def test_probes_flag_lists_each_verdict_with_the_window_text(
    scenario: str, capsys, monkeypatch
) -> None:
    import argparse

    monkeypatch.setenv("COLUMNS", "600")  # every column of the table on one line

    from flows.cli import add_eval_commands

    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    argv = ["eval", "--scenario", scenario, "--strategy", "offload", "--window", "16000",
            "--seed", "0", "--no-save", "--probes"]  # fmt: skip
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "in view / one read / lost" in out and "0% / 100% / 0%" in out
    assert f"pay: right, one_read: expected '{PAYMENT}'" in out
    assert '/large_tool_results/c000_01: ...{ "source": "credit_card"' in out
    assert "res [carried]: right, in_view" in out


def test_the_markdown_report_shows_availability_beside_accuracy(scenario: str) -> None:
    from evals.analysis.metrics import aggregate
    from evals.report.markdown import render_table

    runs = [run_cell(scenario, "offload", window=16000), run_cell(scenario, "none", window=16000)]
    table = "\n".join(render_table(aggregate(runs), runs))
    assert "| in view / one read / lost |" in table
    assert "0% / 100% / 0%" in table and "100% / 0% / 0%" in table


def test_each_saved_file_is_read_once_per_replay(scenario: str, monkeypatch) -> None:
    # Every probe's audit looks in the files its request names; a blob's text never changes,
    # so a replay reads each one once, however many probes name it.
    from harness.files.stored_file import StoredFile

    reads: list[str] = []
    original = StoredFile.read_bytes

    def read_bytes(self: StoredFile) -> bytes:
        if self.blob_id is not None:
            reads.append(self.blob_id)
        return original(self)

    monkeypatch.setattr(StoredFile, "read_bytes", read_bytes)
    offloaded = run_cell(scenario, "offload", window=16000)
    assert _verdicts(offloaded)["pay"] == ONE_READ
    assert reads and len(reads) == len(set(reads))
