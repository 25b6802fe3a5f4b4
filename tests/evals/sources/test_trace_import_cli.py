"""`ctxlab scenarios import PATH` for trace files and folders, and `ctxlab eval` over what it
wrote: a suite of imported traces runs every arm, and the strategies separate on it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.traces import write_ledger

from evals.scenarios.suite import load_suite
from evals.sources.trace_import import import_path
from flows.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("responses.json", "otel_genai.json"):
        shutil.copy(FIXTURES / name, folder / name)
    (folder / "broken.jsonl").write_text('{"role": "user", "content": "hi"\n', encoding="utf-8")
    (folder / "blob.bin").write_bytes(b"\x00\x01\x02 not text")
    return folder


def _eval_lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_a_folder_imports_with_its_bad_files_named_then_runs_as_a_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    out = tmp_path / "suite"
    assert main(["scenarios", "import", str(_folder(tmp_path)), "--out", str(out)]) == 0
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
    assert main(["scenarios", "import", str(FIXTURES / "anthropic.json")]) == 0
    written = tmp_path / "exports" / "trace-anthropic.yaml"
    before = written.read_bytes()
    assert yaml.safe_load(before)["source"]["format"] == "anthropic"
    capsys.readouterr()
    assert main(["scenarios", "import", str(FIXTURES / "anthropic.json")]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert written.read_bytes() == before
    argv = ["scenarios", "import", str(FIXTURES / "anthropic.json"), "--force", "--window",
            "8000"]  # fmt: skip
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["files"] == [str(Path("exports") / "trace-anthropic.yaml")]
    assert info["traces"] == 1 and info["probes"] == 1 and info["suite"] is None
    assert yaml.safe_load(written.read_bytes())["model"]["window"] == 8000


def test_a_file_of_many_traces_is_a_suite_and_a_folder_with_an_import_is_refused(
    tmp_path: Path,
) -> None:
    two = tmp_path / "two.jsonl"
    used = [{"role": "user", "content": "Refund order ORD-4410 please."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
             "function": {"name": "refund", "arguments": "{\"order\": \"ORD-4410\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "refunded"}]  # fmt: skip
    chat = [{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi."}]
    two.write_text("\n".join(json.dumps({"messages": m}) for m in (used, chat)) + "\n")
    out = tmp_path / "tau"
    summary = import_path(two, out)
    assert summary.traces == 1 and summary.suite == out / "suite.json"
    assert [p.name for p in summary.files] == ["trace-two-1.yaml"]
    # the other trace used nothing it was shown: nothing to score, said so
    (skip,) = summary.skipped
    assert skip.reason.startswith("trace two-2: no probes")
    index = json.loads((out / "suite.json").read_text())
    assert index["skipped"][0]["file"] == "two.jsonl"
    with pytest.raises(FileExistsError, match="pass --force"):
        import_path(two, out)
    assert import_path(two, out, force=True).traces == 1


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
        {"role": "assistant", "content": "Opened TCK-901."},
    ]}))  # fmt: skip
    summary = import_path(trace, tmp_path / "t.yaml", redact=["PRJ-SECRET-\\d+"])
    text = summary.files[0].read_text()
    assert "PRJ-SECRET" not in text and "ann@corp.example" not in text
    assert summary.redactions >= 3
    assert [p["answer"] for p in yaml.safe_load(text)["probes"]] == ["TCK-901"]


def test_strategies_separate_on_an_imported_trace_and_blank_replies_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    ledger = write_ledger(tmp_path / "ledger.json", accounts=5)
    out = tmp_path / "ledger.yaml"
    assert main(["scenarios", "import", str(ledger), "--out", str(out), "--window", "3000"]) == 0
    argv = ["eval", "--scenario", str(out), "--strategy", "full", "--strategy", "truncate",
            "--seed", "0", "--no-save", "--json", "--reader", "ideal"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    runs = {r["strategy"]: r for r in _eval_lines(capsys) if "strategy" in r}
    assert runs["full"]["accuracy"] == 1.0
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
        if getattr(trace, "id", "") == "anthropic":
            raise RuntimeError("boom\nsecond line")
        return real(trace, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importing, "trace_to_scenario", flaky)
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("anthropic.json", "responses.json"):
        shutil.copy(FIXTURES / name, folder / name)
    summary = import_path(folder, tmp_path / "out")
    assert summary.traces == 1
    assert any(s.reason == "trace anthropic: could not be imported (RuntimeError: boom)"
               for s in summary.skipped)  # fmt: skip
    single = import_path(folder / "anthropic.json", tmp_path / "one.yaml")
    assert not single.ok and "RuntimeError: boom" in single.lines()[0]


def test_secrets_in_trace_ids_and_file_names_never_name_an_output(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    shutil.copy(FIXTURES / "responses.json", folder / f"run-{secret}.json")
    shutil.copy(FIXTURES / "otel_genai.json", folder / "jane.doe@example.com.json")
    out = tmp_path / "suite"
    summary = import_path(folder, out)
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
