"""Shapes real public trace files have that the first fixtures did not: each test's fixture is
hand-written in the shape of a published file (named in the test) and fails without its fix."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.traces import claude_sidechain, claude_task_session, read_one

from evals.sources.formats import detect_format, read_traces

FIXTURES = Path(__file__).parent / "fixtures"


def test_mini_swe_agent_v2_messages_without_a_header_are_bash_calls() -> None:
    # mini-swe-agent's own tests/test_data/*.traj.json: a bare list of messages, v2 action
    # fences (```mswea_bash_command, <mswea_bash_command>), `extra.actions`, JSON observations.
    trace = read_one("mini_swe_agent_v2_messages.json", "mini-swe-agent")
    calls = [c for m in trace.messages for c in m.tool_calls]
    assert [c.arguments["command"] for c in calls] == [
        "grep -n round ledger/totals.py",
        "sed -i '41s/int(total \\* 100) \\/ 100/round(total, 2)/' ledger/totals.py"
        " && python -m ledger.check",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
    ]
    results = [m for m in trace.messages if m.role == "tool"]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.is_error for r in results] == [False, True, False]  # returncode 3 in JSON
    assert results[2].text.startswith("diff --git") and not trace.skipped
    assert trace.ground_truth.patch_files == ["ledger/totals.py"]  # from what it submitted


def test_a_claude_code_log_whose_events_carry_no_parents_reads_in_line_order() -> None:
    # daaain/claude-code-log test/test_data/*.jsonl: every event has `parentUuid: null`;
    # read by the chain, each event was its own branch and only the last one was kept.
    (trace,) = read_traces(FIXTURES / "claude_code_unlinked.jsonl")
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert trace.messages[2].tool_call_id == "toolu_p1" and "8443" in trace.messages[2].text
    assert trace.metadata["roots_linked_by_line_order"] == 4 and not trace.skipped


def test_a_tau2_results_file_is_one_trace_per_simulation_with_its_task() -> None:
    # sierra-research/tau2-bench results (`{"info", "tasks", "simulations"}`): tool calls
    # flat (`{id, name, arguments}`), tool messages answering by `id`, the reward in
    # `reward_info`, the expected actions in the task the simulation names.
    trace = read_one("tau2_results.json", "openai-chat")
    calls = [c for m in trace.messages for c in m.tool_calls]
    assert [c.name for c in calls][:2] == ["find_user_id_by_email", "get_order_details"]
    assert calls[0].arguments == {"email": "noor.haddad@example.com"}
    results = [m for m in trace.messages if m.role == "tool"]
    assert [r.tool_call_id for r in results] == ["call_u1", "call_o1", "call_r1", "call_r2"]
    assert [r.is_error for r in results] == [False, False, True, False]
    truth = trace.ground_truth
    assert [a.name for a in truth.actions] == [
        "find_user_id_by_email",
        "return_delivered_order_items",
    ]
    assert truth.actions[1].arguments["payment_method_id"] == "credit_card_118"
    assert truth.outcome["reward"] == 1.0 and trace.metadata["task_id"] == "7"
    assert trace.original_usage()["input_tokens"] == 2210 and not trace.skipped


def test_a_codex_cli_rollout_is_responses_items_one_a_line() -> None:
    # A Codex CLI session (~/.codex/sessions/.../rollout-*.jsonl, as Codex log readers'
    # tests write them): each line wraps an item in `payload`; read as Responses before,
    # nothing in it was an item and the file was refused.
    trace = read_one("codex_rollout.jsonl", "openai-responses")
    assert trace.id == "0197c1aa-5d2e-7a10-b3c4-2f9d8e7a6b01" and trace.model == "gpt-5-codex"
    assert (
        trace.system == "Keep diffs small." and trace.metadata["cwd"] == "/home/ines/src/tidewater"
    )
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant", "tool",
                                                "assistant"]  # fmt: skip
    shell, patch = (m.tool_calls[0] for m in trace.messages if m.tool_calls)
    assert shell.arguments == {"command": ["bash", "-lc", "grep -n station tide_table.py"]}
    assert patch.name == "apply_patch" and patch.raw_arguments is not None
    assert "*** Update File: tide_table.py" in patch.raw_arguments
    assert trace.messages[4].text == "Success. Updated tide_table.py"
    (compaction,) = trace.compactions
    assert compaction.index == 5 and "9414290" in compaction.summary
    usage = trace.original_usage()
    assert usage["input_tokens"] == 11130 and usage["cache_read_tokens"] == 9216
    assert not trace.skipped


def test_claude_code_parallel_calls_progress_events_and_a_compaction_cut_from_its_parent() -> None:
    # Real sessions (marot/spotter test/fixtures/transcripts/*.jsonl, Claude Code 2.1):
    # an answer's parallel calls are events one below the other, each result the child of
    # its call, so all results but the last hung off the chain and were dropped with
    # their calls; progress events (children of each call) counted as branches; and a
    # compact boundary whose `logicalParentUuid` is not in the file cut everything before.
    (trace,) = read_traces(FIXTURES / "claude_code_parallel.jsonl")
    roles = [m.role for m in trace.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    answer = trace.messages[1]
    assert answer.text == "Searching both folders."
    assert [c.id for c in answer.tool_calls] == ["toolu_g1", "toolu_g2"]
    assert [m.tool_call_id for m in trace.messages[2:4]] == ["toolu_g1", "toolu_g2"]
    assert "20240611_add_due_on.rb" in trace.messages[2].text
    (compaction,) = trace.compactions
    assert compaction.index == 5 and "invoices.due_on" in compaction.summary
    assert not trace.skipped and "branches" not in trace.metadata


def test_otel_messages_in_chat_shape_plain_text_and_dotted_instructions() -> None:
    # Public OTLP exports and their consumers' tests (Latitude's span snapshots, dataset
    # importers): `gen_ai.system.instructions` spelled with a dot, input messages as Chat
    # messages (`content`, `tool_calls`, `tool_call_id`) or an array of JSON strings, and an
    # output that is plain text. Before, those messages had no `parts` and were dropped.
    (trace,) = read_traces(FIXTURES / "otel_chat_style.json")
    assert trace.system == "You answer order questions."
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.arguments) == ("call_77", {"order_id": "A-5521"})
    assert trace.messages[2].tool_call_id == "call_77" and "PN88213" in trace.messages[2].text
    assert trace.messages[3].text == "It shipped with Posten, tracking PN88213."
    assert trace.original_usage()["input_tokens"] == 310 and not trace.skipped


def test_anthropic_server_and_mcp_tool_results_inside_the_assistant_message() -> None:
    # Messages API transcripts with server tools (web search, web fetch) and the MCP
    # connector: the call and its result both sit in the assistant's content. Before, each
    # result block was skipped and the calls then dropped as calls with no result.
    (trace,) = read_traces(FIXTURES / "anthropic_server_tools.json")
    roles = [m.role for m in trace.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                     "assistant"]  # fmt: skip
    search, rate = trace.messages[2], trace.messages[4]
    assert search.tool_call_id == "srvtoolu_01" and "up to 5 kg" in search.text
    assert "https://example.org/posten/pakke" in search.text
    assert rate.tool_call_id == "mcptoolu_02" and rate.text == "NOK 129"
    fetch = trace.messages[6]
    assert fetch.is_error and fetch.text == "url_not_accessible"
    assert [c.name for c in trace.messages[5].tool_calls] == ["web_fetch"]
    assert trace.messages[-1].text == "Up to 5 kg, NOK 129."
    assert trace.original_usage()["input_tokens"] == 2100 and not trace.skipped


def test_a_compaction_run_beside_a_session_is_no_task_subagent(tmp_path: Path) -> None:
    # marot/spotter transcripts: `<session>/subagents/agent-acompact-*.jsonl` is the run
    # that wrote a compaction's summary. It took the first free Task call before.
    subagents = claude_task_session(
        tmp_path, "s2", "Which migrations are open?", "toolu_t1", "List open migrations.", "3 open"
    )
    claude_sidechain(
        subagents / "agent-acompact-0a1b2c.jsonl",
        "s2",
        ("k1", "3", "user", "Summarise the conversation so far."),
        ("k2", "k1", "assistant", "The user asked which migrations are open."),
    )
    claude_sidechain(
        subagents / "agent-af19.jsonl",
        "s2",
        ("x1", None, "user", "Open migrations, please."),
        ("x2", "x1", "assistant", "3 open"),
    )
    (trace,) = read_traces(tmp_path / "s2.jsonl")
    compaction_run, explorer = trace.subagents
    assert compaction_run.metadata["compaction_run"] is True
    assert compaction_run.parent_call_id is None and explorer.parent_call_id == "toolu_t1"


def test_otel_flat_prompt_and_completion_attributes_keep_their_tool_calls() -> None:
    # OpenLLMetry (traceloop/openllmetry) before the GenAI 0.5 conventions, as a collector's
    # file exporter writes it (one export a line): calls as
    # `gen_ai.completion.N.tool_calls.M.*`, results as role `tool` with `tool_call_id`.
    # Before, only role and content were read: the call and its result were lost.
    (trace,) = read_traces(FIXTURES / "otel_openllmetry.jsonl")
    assert trace.system == "You help with refunds." and trace.model == "gpt-4o-mini"
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == (
        "call_r1",
        "get_invoice",
        {"invoice_id": "INV-20931"},
    )
    assert trace.messages[2].tool_call_id == "call_r1" and "1450.0" in trace.messages[2].text
    assert trace.original_usage()["input_tokens"] == 470 and not trace.skipped


def test_claude_code_stream_json_output_with_a_subagent() -> None:
    # `claude -p --output-format stream-json` (as Claude CLI wrappers' tests record it): no
    # parentUuid, a subagent's events marked by `parent_tool_use_id`. Before, it was read
    # as Anthropic Messages and refused ("a record with no messages").
    trace = read_one("claude_stream_json.jsonl", "claude-code")
    assert trace.id == "3f0c9e1a-77b2-4c1e-9d0a-5b6c7d8e9f01" and trace.model == "claude-sonnet-4-5"
    assert [t.name for t in trace.tools] == ["Task", "Bash", "Read"]
    assert [m.role for m in trace.messages] == ["assistant", "tool", "assistant"]
    assert trace.messages[0].tool_calls[0].id == "toolu_task1"
    assert trace.metadata["result"]["total_cost_usd"] == 0.0831
    (sub,) = trace.subagents
    assert sub.parent_call_id == "toolu_task1"
    assert [m.role for m in sub.messages] == ["user", "assistant", "tool", "assistant"]
    assert "7 failures" in sub.messages[2].text and not trace.skipped


def test_otel_vercel_ai_sdk_spans() -> None:
    # The Vercel AI SDK's telemetry (shape as span importers' tests write it, e.g. Latitude's
    # vercel.test.ts): no gen_ai messages, `ai.prompt.messages` on each doGenerate span,
    # `ai.response.text`/`ai.response.toolCalls`. Before: no messages, the file refused.
    (trace,) = read_traces(FIXTURES / "otel_vercel_ai.json")
    assert trace.system == "You plan train trips." and trace.model == "gpt-4.1"
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.arguments["to"]) == ("call_tt1", "Voss")
    assert trace.messages[2].tool_call_id == "call_tt1" and "R45 1822" in trace.messages[2].text
    assert trace.messages[3].text == "The 14:37 (R45 1822) from track 3."
    assert trace.original_usage()["input_tokens"] == 690 and not trace.skipped


def test_otel_openinference_spans_of_an_agents_sdk_run() -> None:
    # OpenInference attributes (Arize Phoenix; how OpenAI Agents SDK runs usually reach
    # OTLP): `llm.input_messages.N.message.*`, calls under `tool_calls.M.tool_call.*`,
    # content in parts. Before: no messages, the file refused. The last call has no result
    # in the export: dropped and said so.
    (trace,) = read_traces(FIXTURES / "otel_openinference.json")
    assert trace.system == "You are the billing agent." and trace.model == "gpt-4.1-2025-04-14"
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    assert not trace.messages[3].tool_calls  # its call dropped; its usage kept
    assert trace.messages[0].text == "Cancel subscription SUB-7781\nand refund the last charge."
    call = trace.messages[1].tool_calls[0]
    assert (call.id, call.arguments) == ("call_c1", {"subscription_id": "SUB-7781"})
    assert trace.messages[2].tool_call_id == "call_c1" and "CH-55102" in trace.messages[2].text
    assert [s.reason for s in trace.skipped] == ["call 'call_r1' (refund_charge) has no result"]
    assert trace.original_usage()["input_tokens"] == 870


def test_a_chat_tool_result_that_looks_like_an_observation_stays_chat(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    doc = {"tools": [{"type": "function", "function": {"name": "sh"}}], "messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>"},
    ]}  # fmt: skip
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(doc))
    trace = read_one(path, "openai-chat")
    assert [t.name for t in trace.tools] == ["sh"]


def test_a_tau2_results_file_whose_raw_replies_hold_thinking_blocks_is_chat(
    tmp_path: Path,
) -> None:
    # jitrc/tau2-enhanced samples/logs/*.json (gemini-2.5-flash through LiteLLM): each
    # message keeps the provider's reply in `raw_data`, whose `thinking_blocks` are typed
    # "thinking" like Anthropic's; auto-detected as Anthropic, no block was a tool_use and
    # every file was refused as "conversations with no tool call".
    document = json.loads((FIXTURES / "tau2_results.json").read_text(encoding="utf-8"))
    for message in document["simulations"][0]["messages"]:
        if message["role"] == "assistant":
            thinking = {"type": "thinking", "thinking": "{}", "signature": "c2ln"}
            message["raw_data"] = {"message": {"role": "assistant", "thinking_blocks": [thinking]}}
    path = tmp_path / "airline_flash_2t.json"
    path.write_text(json.dumps(document, indent=4), encoding="utf-8")
    assert detect_format(path) == "openai-chat"
    (trace,) = read_traces(path, strict=True)
    calls = [c for m in trace.messages for c in m.tool_calls]
    assert [c.name for c in calls][:2] == ["find_user_id_by_email", "get_order_details"]
    assert trace.ground_truth.actions[1].arguments["order_id"] == "#W4410"


def test_a_swe_agent_trajectory_whose_first_observation_fills_the_head_is_recognised(
    tmp_path: Path,
) -> None:
    # Published SWE-agent 1.x .traj files of student runs: the first step's `find` listing
    # fills the first 64 KiB, so no SWE-agent key stands before byte ~75k, and the tail holds
    # only `"environment": "<instance id>"` after the submitted patch.
    listing = "\n".join(f"./pkg/module_{i:05d}/file_{i:05d}.py" for i in range(2600))
    step = {"action": "find . -name '*.py'", "observation": listing, "response": "Look.",
            "thought": "Look.", "execution_time": 0.2, "state": {}}  # fmt: skip
    patch = "".join(f"+    value_{i} = compute({i})\n" for i in range(400))  # ~12 KB at the end
    doc = {"trajectory": [step], "info": {"exit_status": "submitted", "submission": patch},
           "environment": "pkg__pkg-1"}  # fmt: skip
    path = tmp_path / "pkg__pkg-1.traj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert path.stat().st_size > 64 * 1024 + 4 * 1024
    assert detect_format(path) == "swe-agent"
