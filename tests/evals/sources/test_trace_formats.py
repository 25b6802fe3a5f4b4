"""Each format's parser on its hand-made fixture (tests/evals/sources/fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.traces import FIXTURES, claude_sidechain, claude_task_session, read_one, roles

from evals.sources.formats import FORMATS, detect_format, read_traces


@pytest.mark.parametrize(
    ("name", "format"),
    [
        ("chat_tau.json", "openai-chat"),
        ("responses.json", "openai-responses"),
        ("anthropic.json", "anthropic"),
        ("claude_code.jsonl", "claude-code"),
        ("mini_swe_agent.traj.json", "mini-swe-agent"),
        ("otel_genai.json", "otel-genai"),
    ],
)
def test_each_fixture_is_recognised_from_its_head(name: str, format: str) -> None:
    assert format in FORMATS
    assert detect_format(FIXTURES / name) == format


def test_anthropic_blocks_results_errors_and_thinking() -> None:
    (trace,) = read_traces(FIXTURES / "anthropic.json")
    assert trace.system == "You maintain the billing service."
    assert trace.tools[0].name == "read_file" and "path" in trace.tools[0].parameters["properties"]
    assert roles(trace) == ["user", "assistant", "tool", "assistant", "tool", "user", "assistant"]
    assert trace.messages[1].text == "Let me read the tax table."  # thinking left out
    assert trace.messages[1].usage is not None and trace.messages[1].usage.cache_read_tokens == 900
    assert trace.messages[2].text == "RATES = {'NO': 0.25, 'SE': 0.21}"  # blocks -> text
    assert trace.messages[4].is_error and trace.messages[4].tool_call_id == "toolu_02"
    assert trace.messages[5].text == "SE should be 0.25 too."  # after the result, in order
    assert not trace.skipped


def test_responses_items_calls_outputs_and_compaction() -> None:
    (trace,) = read_traces(FIXTURES / "responses.json")
    assert trace.system == "You are a travel assistant." and trace.model == "gpt-4.1"
    assert roles(trace)[:5] == ["user", "assistant", "tool", "assistant", "user"]
    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.arguments) == ("call_f1", {"to": "BGO", "date": "2026-03-14"})
    assert trace.messages[2].tool_call_id == "call_f1" and "DY612" in trace.messages[2].text
    (compaction,) = trace.compactions
    assert compaction.index == 3 and "DY612" in compaction.summary
    # the response's call was never answered: dropped, and said so
    assert [s.reason for s in trace.skipped] == ["call 'call_f2' (book_flight) has no result"]


def test_claude_code_follows_the_chain_merges_split_messages_and_keeps_subagents() -> None:
    (trace,) = read_traces(FIXTURES / "claude_code.jsonl")
    assert trace.id == "7f3c2a10-5b1e-4c3a-9d2e-000000000001"
    assert trace.metadata["cwd"] == "/home/dev/shop" and trace.metadata["branches"] == 2
    assert trace.metadata["summaries"] == ["Fixing the checkout rounding bug"]
    assert roles(trace) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    first = trace.messages[1]  # three events of msg_1: thinking, text, tool_use
    assert first.text == "I'll look at the rounding code." and first.tool_calls[0].id == "toolu_A"
    assert trace.messages[2].where is not None and trace.messages[2].where.line == 5
    assert "Abandoned attempt." not in [m.text for m in trace.messages]
    (branch,) = trace.skipped
    assert branch.where.line == 7 and "branch" in branch.reason
    (compaction,) = trace.compactions
    assert compaction.index == 5 and "rounds to 1 decimal" in compaction.summary
    assert trace.original_usage() == {
        "input_tokens": 70, "output_tokens": 35, "cache_read_tokens": 400,
        "cache_creation_tokens": 480, "compactions": 1, "model": "claude-sonnet-4-5",
    }  # fmt: skip
    (sub,) = trace.subagents
    assert sub.parent_call_id == "toolu_T"
    assert roles(sub) == ["user", "assistant", "tool", "assistant"]
    assert sub.messages[1].tool_calls[0].name == "Grep"


def test_mini_swe_agent_commands_are_bash_calls_and_outputs_their_results() -> None:
    (trace,) = read_traces(FIXTURES / "mini_swe_agent.traj.json")
    assert trace.system.startswith("You are a helpful assistant")
    calls = [c for m in trace.messages for c in m.tool_calls]
    assert [c.arguments["command"] for c in calls] == [
        'grep -n "def parse_hex" -r src',
        "sed -i 's/int(x)/int(x, 16)/' src/parser.py && python -c 'import src.parser'",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
    ]
    assert {c.name for c in calls} == {"bash"}
    results = [m for m in trace.messages if m.role == "tool"]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.is_error for r in results] == [False, True, False]
    assert results[2].text.startswith("diff --git")  # the submission answers the last call
    # two blocks: not run, and the harness's complaint stays a user message
    assert trace.messages[3].tool_calls == [] and trace.messages[4].role == "user"
    assert trace.ground_truth.patch_files == ["src/parser.py"]
    assert trace.ground_truth.outcome == {"exit_status": "Submitted"}
    assert trace.original_usage()["cost_usd"] == pytest.approx(0.0412)
    assert trace.model == "gpt-5-mini"


def test_otel_spans_in_both_conventions_one_trace_per_trace_id() -> None:
    new, old = read_traces(FIXTURES / "otel_genai.json")
    assert new.system == "You help customers." and new.model == "gpt-4.1"
    assert new.metadata["agent"] == "support"
    assert roles(new) == ["user", "assistant", "tool", "assistant"]  # history not repeated
    assert new.messages[1].tool_calls[0].arguments == {"user_id": "U-7731"}
    assert new.messages[2].text == '{"email": "kari@example.org"}'
    assert new.original_usage()["input_tokens"] == 280
    assert old.system == "Be brief."
    assert roles(old) == ["user", "assistant", "tool", "assistant"]
    assert old.messages[2].tool_call_id == "c9" and old.messages[3].text == "30 C is 86 F."
    assert old.original_usage()["output_tokens"] == 9


def test_mini_swe_agent_v2_with_a_tool_calling_model(tmp_path: Path) -> None:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "ls src"}'}}  # fmt: skip
    doc = {
        "info": {"exit_status": "Submitted", "submission": "", "mini_version": "2.0.0"},
        "messages": [
            {"role": "system", "content": "shell"},
            {"role": "user", "content": "fix the parser"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "parser.py"},
            {"role": "assistant", "content": "Done."},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path = tmp_path / "v2.traj.json"
    path.write_text(json.dumps(doc))
    trace = read_one(path, "mini-swe-agent")
    assert roles(trace) == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[1].tool_calls[0].arguments == {"command": "ls src"}
    assert trace.messages[2].tool_call_id == "call_1" and not trace.skipped


def test_claude_code_subagent_files_beside_the_session_are_its_subagents(tmp_path: Path) -> None:
    from evals.sources.formats import iter_trace_files

    result = [{"type": "text", "text": "12 TODOs\nagentId: a7f3"}]
    subagents = claude_task_session(
        tmp_path, "s1", "How many TODOs?", "toolu_9", "Count the TODOs.", result
    )
    claude_sidechain(
        subagents / "agent-a7f3.jsonl",
        "s1",
        ("x1", None, "user", "Count the TODOs, in Python files only."),
        ("x2", "x1", "assistant", "12"),
    )
    (subagents / "agent-a7f3.meta.json").write_text('{"agentType": "general-purpose"}')
    assert list(iter_trace_files(tmp_path)) == [tmp_path / "s1.jsonl"]
    (trace,) = read_traces(tmp_path / "s1.jsonl")
    (sub,) = trace.subagents
    assert sub.parent_call_id == "toolu_9"  # by the agent id its result names, not the prompt
    assert sub.id == "s1/agent-a7f3" and [m.text for m in sub.messages][-1] == "12"


def test_claude_code_a_local_command_branch_off_the_root_is_no_conversation(
    tmp_path: Path,
) -> None:
    # Claude Code hangs a local command run after the session (`/export`) off the first
    # event: the last leaf is then that two-event branch, not the conversation the model had.
    def event(uuid: str, parent: str | None, kind: str, content: object) -> str:
        role = "assistant" if kind == "assistant" else "user"
        message: dict[str, object] = {"role": role, "content": content}
        if kind == "assistant":
            message |= {"id": f"msg_{uuid}", "type": "message", "model": "claude-sonnet-4-5"}
        return json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": "s1",
                           "type": kind, "message": message, "uuid": uuid})  # fmt: skip

    call = [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]
    result = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "src\ntests"}]
    lines = [
        event("u0", None, "user", "Caveat: local command output below."),
        event("u1", "u0", "user", "List the repository."),
        event("a1", "u1", "assistant", call),
        event("u2", "a1", "user", result),
        event("a2", "u2", "assistant", [{"type": "text", "text": "It holds src and tests."}]),
        event("u3", "u0", "user", "<command-name>/export</command-name>"),
        event("u4", "u3", "user", "<local-command-stdout>Exported.</local-command-stdout>"),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (trace,) = read_traces(path, "claude-code")
    assert roles(trace) == ["user", "user", "assistant", "tool", "assistant"]
    assert trace.messages[-1].text == "It holds src and tests."
    assert any("branch" in s.reason for s in trace.skipped)  # the command's branch, said so
