"""Bad input: the sound part of a trace is kept, each skipped record is named by file and
line, a file with nothing sound is one line, and a folder never stops at a bad file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.errors import TraceFormatError
from evals.sources.formats import (
    FORMATS,
    detect_format,
    iter_trace_files,
    read_folder,
    read_traces,
)
from evals.sources.trace import Skipped, Trace

FIXTURES = Path(__file__).parent / "fixtures"
TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _read_or_refused_in_one_line(path: Path) -> None:
    """Each trace read from `path` has messages, or the file is refused in one line."""
    try:
        for trace in read_traces(path):
            assert trace.messages
    except TraceFormatError as exc:
        assert "\n" not in str(exc)


def _jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def _reasons(trace: Trace) -> list[tuple[int | None, str]]:
    return [(s.where.line, s.reason) for s in trace.skipped]


def test_malformed_and_cut_off_lines_are_skipped_by_line(tmp_path: Path) -> None:
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    path = _jsonl(tmp_path / "runs.jsonl", [good, "not json at all", good, '{"messages": [{"ro'])
    traces = list(read_traces(path))
    assert len(traces) == 2 and all(len(t.messages) == 2 for t in traces)
    skipped = [s for t in traces for s in t.skipped]
    assert [(s.where.file, s.where.line) for s in skipped] == [(str(path), 2), (str(path), 4)]
    assert skipped[0].reason.startswith("damaged line, not JSON")
    assert skipped[1].reason.startswith("damaged line, cut off")


def test_a_truncated_json_document_keeps_the_messages_before_the_cut(tmp_path: Path) -> None:
    doc = json.dumps({"messages": [{"role": "user", "content": "first"},
                                   {"role": "assistant", "content": "second"},
                                   {"role": "user", "content": "third, cut off here"}]},
                     indent=1)  # fmt: skip
    path = tmp_path / "cut.json"
    path.write_text(doc[: doc.index("third") + 5])
    (trace,) = read_traces(path)
    assert [m.text for m in trace.messages] == ["first", "second"]
    (skip,) = trace.skipped
    assert skip.where.line is not None and "cut off" in skip.reason


def test_unknown_roles_orphan_results_missing_results_and_duplicate_ids(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "robot", "content": "beep"},
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c1", "content": "again"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},  # id reused: renamed
        {"role": "tool", "tool_call_id": "c1", "content": "two"},
        {"role": "assistant", "content": "and", "tool_calls": [{**TOOL_CALL, "id": "c9"}]},
    ]
    path = _jsonl(tmp_path / "bad.jsonl", messages)  # one message a line: one trace
    (trace,) = read_traces(path)
    assert _reasons(trace) == [
        (2, "unknown role 'robot'"),
        (3, "a tool result for no call ('nobody')"),
        (6, "a second result for call 'c1'"),
        (9, "call 'c9' (f) has no result"),
    ]
    calls = [c.id for m in trace.messages for c in m.tool_calls]
    results = [(m.tool_call_id, m.text) for m in trace.messages if m.role == "tool"]
    assert calls == ["c1", "c1#2"] and results == [("c1", "one"), ("c1#2", "two")]
    assert trace.messages[-1].text == "and" and not trace.messages[-1].tool_calls


def test_a_binary_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "image.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(TraceFormatError, match=r"image.json: a binary file"):
        detect_format(path)
    with pytest.raises(TraceFormatError, match="binary"):
        list(read_traces(path, "openai-chat"))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "an empty file"),
        ("hello world\n", "not JSON or JSONL"),
        ('{"a": 1}', "no known trace format"),
    ],
)
def test_what_is_no_trace_is_named(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as exc:
        detect_format(path)
    assert str(exc.value).startswith(f"{path}: ") and why in str(exc.value)
    assert "\n" not in str(exc.value)


def test_nothing_sound_says_why(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "junk.jsonl", ['{"role": "user", "content": "a"', "{{{"])
    with pytest.raises(TraceFormatError, match=r"junk.jsonl: not JSON .* and no line of it is"):
        list(read_traces(path, "openai-chat"))
    only_robots = _jsonl(tmp_path / "robots.jsonl", [{"role": "robot", "content": "x"}])
    with pytest.raises(TraceFormatError, match="unknown role 'robot'"):
        list(read_traces(only_robots))


def test_a_claude_code_session_with_a_missing_parent_and_a_duplicate_event(
    tmp_path: Path,
) -> None:
    def event(uuid: str, parent: str | None, role: str, text: str) -> dict[str, object]:
        return {"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": role,
                "message": {"role": role, "content": text}}  # fmt: skip

    path = _jsonl(tmp_path / "session.jsonl", [
        event("b", "gone", "user", "resumed"),
        event("c", "b", "assistant", "answer"),
        event("c", "b", "assistant", "answer again"),
        '{"uuid": "d", "parentUuid": "c", "type": "us',
    ])  # fmt: skip
    (trace,) = read_traces(path)
    assert [m.text for m in trace.messages] == ["resumed", "answer"]
    reasons = _reasons(trace)
    assert (3, "a second event with uuid 'c'") in reasons
    assert any(line == 4 and r.startswith("damaged line, cut off") for line, r in reasons)
    assert any(line == 1 and "'gone' is not in the file" in r for line, r in reasons)


def test_a_folder_import_skips_hidden_files_and_records_bad_ones(tmp_path: Path) -> None:
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text(json.dumps(good) + "\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / ".hidden.json").write_text(json.dumps(good))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.json").write_text(json.dumps(good))
    assert [p.name for p in iter_trace_files(tmp_path)] == ["a.json", "blob.bin", "b.jsonl"]
    found = list(read_folder(tmp_path))
    assert [type(x).__name__ for x in found] == ["Trace", "Skipped", "Trace"]
    bad = found[1]
    assert isinstance(bad, Skipped) and bad.where.file.endswith("blob.bin")
    assert bad.reason == "a binary file (NUL bytes), not a trace"


def test_a_skipped_record_inside_a_json_document_is_named_by_its_own_line(
    tmp_path: Path,
) -> None:
    records = [
        {"task_id": 1, "traj": [{"role": "user", "content": "a"},
                                {"role": "assistant", "content": "b"}]},
        {"task_id": 2, "traj": [{"role": "user", "content": "c"},
                                {"role": "wizard", "content": "d"}]},
    ]  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records, indent=2))
    first, second = read_traces(path)
    lines = path.read_text().splitlines()
    wizard = lines.index('        "role": "wizard",')  # 0-based: the line of its "{"
    assert _reasons(second) == [(wizard, "unknown role 'wizard'")]
    assistant = first.messages[1].where
    assert assistant is not None and assistant.line == lines.index('        "role": "assistant",')


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir()))
def test_any_cut_or_hole_in_a_fixture_under_any_format_is_kept_or_refused_never_a_crash(
    fixture: str, tmp_path: Path
) -> None:
    data = (FIXTURES / fixture).read_bytes()
    step = max(1, len(data) // 12)
    variants = [data[:n] for n in range(1, len(data), step)]
    variants += [data[:n] + data[n + 40 :] for n in range(0, len(data), step)]
    path = tmp_path / fixture
    for variant in variants:
        path.write_bytes(variant)
        for format in ("auto", *FORMATS):
            try:
                for trace in read_traces(path, format):
                    assert trace.messages
            except TraceFormatError as exc:
                assert "\n" not in str(exc)


_CALL = {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]}
_RESULT = {"role": "tool", "tool_call_id": "c1", "content": "r"}


@pytest.mark.parametrize(
    ("name", "doc"),
    [
        ("tools.json", {"tools": [{"name": "f", "input_schema": 7}],
                        "messages": [{"role": "user", "content": "a"}]}),
        ("fn.json", {"messages": [{"role": "user", "content": "a"},
                                  {"role": "assistant", "tool_calls": [{"function": "x"}]}]}),
        ("calls.json", {"messages": [{"role": "user", "content": "a"},
                                     {"role": "assistant", "tool_calls": "oops"}]}),
        ("otel.json", {"resourceSpans": "x"}),
        ("otel-attrs.json", {"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "t", "attributes": 7, "events": [7]}]}]}]}),
    ],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_skipped_or_refused_in_one_line(
    tmp_path: Path, name: str, doc: object
) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    _read_or_refused_in_one_line(path)


def test_claude_code_ids_of_the_wrong_type_are_no_links(tmp_path: Path) -> None:
    def event(uuid: str, parent: object, role: str, text: str, mid: object = None) -> dict:  # type: ignore[type-arg]
        message = {"role": role, "content": text, "id": mid}
        return {"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": role,
                "message": message}  # fmt: skip

    path = _jsonl(tmp_path / "s.jsonl", [
        event("a", None, "user", "hi"),
        event("b", ["a"], "assistant", "yo", mid=["m"]),
    ])  # fmt: skip
    (trace,) = read_traces(path)
    assert [m.text for m in trace.messages] == ["hi", "yo"]  # read in line order


_WRONG = ("x", 7, None, [], {}, [1], True)


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir()))
def test_any_value_of_a_fixture_replaced_by_one_of_another_type_never_crashes(
    fixture: str, tmp_path: Path
) -> None:
    import random

    text = (FIXTURES / fixture).read_text()
    jsonl = fixture.endswith(".jsonl")
    docs = [json.loads(line) for line in text.splitlines() if line.strip()] if jsonl else [
        json.loads(text)
    ]  # fmt: skip

    def places(value: object, at: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        found = [at]
        items: Any = ()
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        for key, child in items:
            found += places(child, (*at, key))
        return found

    rng = random.Random(fixture)
    path = tmp_path / fixture
    every = [(d, at) for d, doc in enumerate(docs) for at in places(doc) if at]
    for d, at in rng.sample(every, min(8, len(every))):
        for wrong in _WRONG:
            changed = json.loads(json.dumps(docs))
            holder = changed[d]
            for key in at[:-1]:
                holder = holder[key]
            holder[at[-1]] = wrong
            body = "\n".join(json.dumps(x) for x in changed) if jsonl else json.dumps(changed[0])
            path.write_text(body)
            _read_or_refused_in_one_line(path)


def test_tool_calls_that_are_no_list_are_one_skipped_record(tmp_path: Path) -> None:
    doc = {"messages": [{"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b", "tool_calls": "oops"}]}  # fmt: skip
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(doc))
    (trace,) = read_traces(path)
    assert [s.reason for s in trace.skipped] == ["tool_calls that are not a list: 'oops'"]


def test_links_out_of_a_folder_are_named_not_followed(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    secret = private / "elsewhere.json"
    secret.write_text((FIXTURES / "responses.json").read_text(encoding="utf-8"), encoding="utf-8")
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "inside.json").write_text(secret.read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "file-link.json").symlink_to(secret)
    (folder / "dir-link").symlink_to(private, target_is_directory=True)
    (folder / "shadow").symlink_to("/etc/shadow")
    (folder / "ok-link.json").symlink_to(folder / "inside.json")  # stays inside: followed
    assert [p.name for p in iter_trace_files(folder)] == ["inside.json", "ok-link.json"]
    skipped = [i for i in read_folder(folder) if isinstance(i, Skipped)]
    assert sorted(Path(s.where.file).name for s in skipped) == ["dir-link", "file-link.json",
                                                                "shadow"]  # fmt: skip
    assert all("not followed" in s.reason for s in skipped)


def test_a_line_over_the_cap_is_skipped_by_number_and_the_rest_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals.sources.formats import records

    monkeypatch.setattr(records, "MAX_LINE_CHARS", 1000)
    lines = (FIXTURES / "claude_code.jsonl").read_text(encoding="utf-8").splitlines()
    huge = json.dumps({"type": "user", "pad": "x" * 50_000})
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([huge, *lines[:1], huge, *lines[1:]]) + "\n", encoding="utf-8")
    skipped: list[Skipped] = []
    values = [r.value for r in records.read_records(path, skipped)]
    assert len(values) == len([ln for ln in lines if ln.strip()])
    assert [(s.where.line, "over 1,000 characters" in s.reason) for s in skipped] == [
        (1, True), (3, True)
    ]  # fmt: skip


def test_json_nested_too_deeply_loses_its_line_not_the_file(tmp_path: Path) -> None:
    from evals.sources.formats.records import read_records

    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n' + deep + '\n{"b": 2}\n', encoding="utf-8")
    skipped: list[Skipped] = []
    assert [r.value for r in read_records(path, skipped)] == [{"a": 1}, {"b": 2}]
    assert [(s.where.line, s.reason) for s in skipped] == [(2, "JSON nested too deeply to read")]
    alone = tmp_path / "deep.json"
    alone.write_text(deep, encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"deep\.json: line 1: JSON nested too deeply"):
        list(read_records(alone, []))
