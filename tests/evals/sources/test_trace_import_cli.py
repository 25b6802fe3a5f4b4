"""`ctxlab scenarios import PATH` for trace files and folders, and `ctxlab eval` over what it
wrote: a suite of imported traces runs every arm, and the strategies separate on it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.traces import write_ledger

from evals.scenarios.suite import load_suite
from evals.sources.trace import Skipped, Where
from evals.sources.trace_import import ImportSummary, import_path
from flows.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("chat_tau.json", "claude_code_fix.jsonl"):
        shutil.copy(FIXTURES / name, folder / name)
    write_ledger(folder / "ledger.json", accounts=3)
    (folder / "broken.jsonl").write_text('{"role": "user", "content": "hi"\n', encoding="utf-8")
    (folder / "blob.bin").write_bytes(b"\x00\x01\x02 not text")
    return folder


def _eval_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_a_folder_imports_with_its_bad_files_named_then_runs_as_a_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    out = tmp_path / "suite"
    argv = ["scenarios", "import", str(_folder(tmp_path)), "--out", str(out), "--min-probes", "1"]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith("imported 3 traces from ")
    assert "skipped " in said and "blob.bin: a binary file" in said and "broken.jsonl" in said
    index = json.loads((out / "suite.json").read_text())
    assert index["format"] == "ctxlab-suite/1" and len(index["scenarios"]) == 3
    assert {"blob.bin", "broken.jsonl"} <= {s["file"] for s in index["skipped"]}
    assert all(not Path(r["source"]).is_absolute() for r in index["scenarios"])
    suite = load_suite(out)
    assert len(suite.traces) == 3
    argv = ["eval", "--scenario", str(out), "--strategy", "full", "--strategy", "summarize",
            "--seed", "0", "--no-save", "--json"]  # fmt: skip
    assert main(argv) == 0
    lines = _eval_lines(capsys)
    per_trace = [r for r in lines if "strategy" in r and "scenario" in r]
    assert {r["strategy"] for r in per_trace} == {"full", "summarize"}
    assert len({r["scenario"] for r in per_trace}) == 3


def test_one_trace_file_writes_one_scenario_and_nothing_is_overwritten_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    ledger = write_ledger(tmp_path / "ledger.json", accounts=3)
    assert main(["scenarios", "import", str(ledger), "--min-probes", "1"]) == 0
    written = tmp_path / "exports" / "trace-ledger.yaml"
    before = written.read_bytes()
    assert yaml.safe_load(before)["source"]["format"] == "openai-chat"
    capsys.readouterr()
    assert main(["scenarios", "import", str(ledger), "--min-probes", "1"]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert written.read_bytes() == before
    argv = ["scenarios", "import", str(ledger), "--force", "--window", "8000", "--min-probes",
            "1"]  # fmt: skip
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["files"] == [str(Path("exports") / "trace-ledger.yaml")]
    assert info["traces"] == 1 and info["probes"] == 4 and info["suite"] is None
    assert yaml.safe_load(written.read_bytes())["model"]["window"] == 8000


def test_a_file_of_many_traces_is_a_suite_and_a_folder_with_an_import_is_refused(
    tmp_path: Path,
) -> None:
    two = tmp_path / "two.jsonl"
    used = [{"role": "user", "content": "Refund order ORD-4410 please."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "p", "type": "function",
             "function": {"name": "policy", "arguments": "{\"topic\": \"refunds\"}"}}]},
            {"role": "tool", "tool_call_id": "p", "content": "Refunds within 30 days."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
             "function": {"name": "refund", "arguments": "{\"order\": \"ORD-4410\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "refunded"}]  # fmt: skip
    chat = [{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi."}]
    two.write_text("\n".join(json.dumps({"messages": m}) for m in (used, chat)) + "\n")
    out = tmp_path / "tau"
    summary = import_path(two, out, min_probes=1)
    assert summary.traces == 1 and summary.suite == out / "suite.json"
    assert [p.name for p in summary.files] == ["trace-two-1.yaml"]
    # the other trace used nothing it was shown: nothing to score, said so
    (skip,) = summary.skipped
    assert skip.reason.startswith("trace two-2: no probes")
    index = json.loads((out / "suite.json").read_text())
    assert index["skipped"][0]["file"] == "two.jsonl"
    with pytest.raises(FileExistsError, match="pass --force"):
        import_path(two, out, min_probes=1)
    assert import_path(two, out, force=True, min_probes=1).traces == 1


def test_nothing_sound_says_why_in_one_line_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.json").write_text('{"nope": 1}')
    (bad / "b.bin").write_bytes(b"\x00\x00")
    assert main(["scenarios", "import", str(bad), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"nothing imported from {bad}: ")
    assert "a.json: JSON, but no known trace format" in err[0] and "b.bin" in err[0]
    assert not (tmp_path / "o").exists()


def test_bad_options_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    for argv, said in [
        (["--redact", "("], "is not a valid regex"),
        (["--window", "10"], "over 1000 tokens"),
        (["--out", str(tmp_path / "x.txt")], "must end in .yaml"),
    ]:
        assert main(["scenarios", "import", str(FIXTURES / "anthropic.json"), *argv]) == 2
        assert said in capsys.readouterr().err
    # a missing path with a trace format is a missing file; anything else a run id, as before
    argv = ["scenarios", "import", str(tmp_path / "nope.json"), "--format", "openai-chat"]
    assert main(argv) == 2 and "no such file" in capsys.readouterr().err
    argv = ["scenarios", "import", "run-123", "--db", str(tmp_path / "none.duckdb")]
    assert main(argv) == 2 and "no store at" in capsys.readouterr().err


def test_redaction_applies_before_probes_with_extra_patterns(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Ticket for acct PRJ-SECRET-42, mail ann@corp.example"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
         "function": {"name": "open", "arguments": "{\"project\": \"PRJ-SECRET-42\"}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "opened ticket TCK-901"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b", "type": "function",
         "function": {"name": "notify", "arguments": "{\"team\": \"ops\"}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "notified"},
        {"role": "assistant", "content": "Opened TCK-901."},
    ]}))  # fmt: skip
    summary = import_path(trace, tmp_path / "t.yaml", redact=["PRJ-SECRET-\\d+"], min_probes=1)
    text = summary.files[0].read_text()
    assert "PRJ-SECRET" not in text and "ann@corp.example" not in text
    assert summary.redactions >= 3
    assert [p["answer"] for p in yaml.safe_load(text)["probes"]] == ["TCK-901"]


def test_strategies_separate_on_an_imported_trace_and_blank_replies_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    ledger = write_ledger(tmp_path / "ledger.json", accounts=5)
    out = tmp_path / "ledger.yaml"
    argv = ["scenarios", "import", str(ledger), "--out", str(out), "--window", "3000"]
    assert main(argv) == 0
    argv = ["eval", "--scenario", str(out), "--strategy", "full", "--strategy", "truncate",
            "--seed", "0", "--no-save", "--json", "--reader", "ideal"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    runs = {r["strategy"]: r for r in _eval_lines(capsys) if "strategy" in r}
    # five ids and the last balance, whose cue ("balance") every listing shares: asked by
    # its role alone, it waits for a reader that searches by role
    assert runs["full"]["accuracy"] > 0.8
    assert runs["truncate"]["accuracy"] <= 0.5  # the listings left the window before the ids
    doc = yaml.safe_load(out.read_text())
    for reply in doc["replies"]:
        reply["content"] = "(no output)"
    blank = tmp_path / "blank.yaml"
    blank.write_text(yaml.safe_dump(doc))
    argv = ["eval", "--scenario", str(blank), "--strategy", "full", "--seed", "0", "--no-save",
            "--json", "--reader", "ideal"]  # fmt: skip
    assert main(argv) == 0
    (only,) = [r for r in _eval_lines(capsys) if "strategy" in r]
    assert only["accuracy"] == 0.0  # nothing recorded to read: the eval can fail


def test_a_trace_that_fails_in_an_unforeseen_way_is_skipped_and_the_rest_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.sources import trace_import as importing

    real = importing.trace_to_scenario

    def flaky(trace: object, **kwargs: object) -> dict[str, object]:
        if getattr(trace, "id", "") == "ledger":
            raise RuntimeError("boom\nsecond line")
        return real(trace, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importing, "trace_to_scenario", flaky)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "claude_code_fix.jsonl", folder / "claude_code_fix.jsonl")
    write_ledger(folder / "ledger.json", accounts=3)
    summary = import_path(folder, tmp_path / "out", min_probes=1)
    assert summary.traces == 1
    assert any(s.reason == "trace ledger: could not be imported (RuntimeError: boom)"
               for s in summary.skipped)  # fmt: skip
    single = import_path(folder / "ledger.json", tmp_path / "one.yaml", min_probes=1)
    assert not single.ok and "RuntimeError: boom" in single.lines()[0]


def test_secrets_in_trace_ids_and_file_names_never_name_an_output(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    write_ledger(folder / f"run-{secret}.json", accounts=6)
    write_ledger(folder / "jane.doe@example.com.json", accounts=6)
    out = tmp_path / "suite"
    summary = import_path(folder, out, min_probes=1)
    assert summary.files, "the traces still import"
    names = [p.name for p in out.iterdir()]
    written = "\n".join([*names, *(p.read_text() for p in out.iterdir() if p.is_file())])
    assert secret not in written and "jane.doe@example.com" not in written


def test_the_import_summary_shows_terminal_escapes_instead_of_obeying_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(FIXTURES / "responses.json", folder / "a.json")
    (folder / "\x1b[2J\x1b]52;c;cHduZWQ=\x07.jsonl").write_text("{not json\n", encoding="utf-8")
    main(["scenarios", "import", str(folder), "--out", str(tmp_path / "out")])
    said = capsys.readouterr()
    shown = said.out + said.err
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b[2J" in shown  # named, visibly


def test_a_trace_with_too_few_probes_is_skipped_and_rejections_are_counted_by_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    write_ledger(folder / "small.json", accounts=3)  # three ids and a balance: 4 probes
    write_ledger(folder / "large.json", accounts=6)
    shutil.copy(FIXTURES / "responses.json", folder / "responses.json")
    assert main(["scenarios", "import", str(folder), "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("imported 1 trace from ")
    # one line of totals by reason, then the skipped traces, each with its own reasons
    assert re.fullmatch(r"probes: \d+ candidates, rejected .*\d+ short_number.*", said[1])
    assert any("small.json: trace small: only 4 probes (under 5) from" in line for line in said)
    assert any("trace responses: no probes from 3 candidates (rejected: 3 nothing_between)"
               in line for line in said)  # fmt: skip
    summary = import_path(folder, tmp_path / "again", min_probes=1)
    assert summary.traces == 2 and summary.rejected["nothing_between"] == 0
    assert summary.candidates == summary.probes + sum(summary.rejected.values())
    assert summary.as_json()["rejected"] == dict(summary.rejected)


def test_a_trace_where_most_candidates_are_rejected_is_flagged(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    filler = "\n".join(f"note {k}: reviewed" for k in range(60))
    trace.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Close ticket TCK-901."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
         "function": {"name": "open", "arguments": "{\"ticket\": \"TCK-901\"}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "owner: Reviewed\nsize: 42\nqueue: "
         "Q-7731\n" + filler},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
         "function": {"name": "policy", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "Route by queue."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b", "type": "function",
         "function": {"name": "route", "arguments": "{\"queue\": \"Q-7731\", \"size\": 42, "
                      "\"owner\": \"Reviewed\"}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "routed"},
    ]}))  # fmt: skip
    summary = import_path(trace, tmp_path / "t.yaml", min_probes=1)
    assert summary.traces == 1 and summary.flagged == ["t"]
    assert any(line.startswith("flagged 1 trace where fewer than half") for line in summary.lines())


def test_nothing_imported_names_the_traces_reason_before_the_records_it_dropped() -> None:
    records = [Skipped(Where("s.jsonl", n), "a branch off the conversation") for n in (5, 7, 9)]
    trace = Skipped(Where("s.jsonl"), "trace s1: only 2 probes (under 5) from 9 candidates")
    summary = ImportSummary(Path("traces"), Path("suite"), skipped=[*records, trace])
    (line,) = summary.lines()
    assert "only 2 probes (under 5)" in line  # not hidden in "(and 1 more)"


def test_a_home_dir_file_a_claude_code_session_read_names_its_listing(tmp_path: Path) -> None:
    # The session ran in /home/mkowalczyk/...: only the user segment of its paths is masked,
    # so the Read of `rates.py` still names the line its value stood on.
    summary = import_path(FIXTURES / "claude_code_home.jsonl", tmp_path / "h.yaml", min_probes=1)
    text = summary.files[0].read_text()
    assert "mkowalczyk" not in text
    listed = [p for p in yaml.safe_load(text)["probes"] if p["role"]["kind"] == "listing"]
    assert any(
        p["answer"] == "FIN-4471" and "`/home/<user>/src/app/src/billing/rates.py`" in p["question"]
        for p in listed
    ), [p["question"] for p in listed]


def test_a_resumed_session_holding_another_sessions_records_imports_once(tmp_path: Path) -> None:
    # Claude Code's `--resume` writes a new file that repeats the records (same uuids) of the
    # session it resumes, then goes on: the earlier file is skipped, naming the one holding it.
    folder = tmp_path / "in"
    folder.mkdir()
    lines = (FIXTURES / "claude_code_fix.jsonl").read_text().splitlines()
    main_lines = [line for line in lines if not json.loads(line)["isSidechain"]]
    (folder / "b-first.jsonl").write_text("\n".join(lines) + "\n")
    session = "7c1d0e22-9a4b-4c55-8d10-000000000003"
    more = [
        {"uuid": "r01", "parentUuid": json.loads(main_lines[-1])["uuid"], "type": "user",
         "message": {"role": "user", "content": "Thanks. Is the fix committed?"}},
        {"uuid": "r02", "parentUuid": "r01", "type": "assistant",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Not yet."}]}},
    ]  # fmt: skip
    resumed = [*main_lines, *(json.dumps({"sessionId": session, **r}) for r in more)]
    (folder / "a-resumed.jsonl").write_text("\n".join(resumed) + "\n")
    summary = import_path(folder, tmp_path / "out", min_probes=1)
    assert summary.traces == 1
    (held,) = [s for s in summary.skipped if "records" in s.reason]
    assert held.where.file.endswith("b-first.jsonl")
    assert "all 10 of its records are in trace" in held.reason
    assert "(a-resumed.jsonl)" in held.reason
