"""Summarization as a specification: when it fires, what the model sees next, what is kept
where, how cycles merge, and that nothing (the summarizer's own input included) overflows."""

from __future__ import annotations

import asyncio

import pytest
from helpers.summarization import Researcher, agent_for, fetch, filler
from helpers.windows import make_state, model_call, small_model, tool_group

from harness import ContextOverflowError, Middleware, Store, create_agent
from harness.errors import ModelError
from harness.files.filesystem import FileSystem
from harness.files.paths import safe_segment
from harness.files.tools import file_tools
from harness.messages import ModelResponse, ToolCall, assistant, user
from harness.middleware.base import ModelRequest
from harness.middleware.summarization import (
    DEFAULT_PROMPT,
    SUMMARIZER_SUFFIX,
    SUMMARY_REQUEST,
    Summarization,
    summary_text,
)
from harness.middleware.topic import LexicalTopicShift
from harness.models import FunctionModel, ScriptedModel, call, reply
from harness.models.base import ModelSettings
from harness.profiles import ModelProfile
from harness.tokens import TokenCounter
from harness.tools import ToolContext

COUNTER = TokenCounter()


# -- firing and what the model sees ------------------------------------------------------------


def test_fires_at_a_fraction_of_the_window_then_the_model_sees_summary_and_kept_messages() -> None:
    r = Researcher(steps=8)
    agent = agent_for(r.model, trigger=0.6)
    result = agent.run_sync("Study Acme's revenue.", thread_id="weekly/acme")
    assert result.status == "completed"
    store = agent.store
    (row,) = store.summaries.all()
    assert row["cycle"] == 1 and row["thread_id"] == "weekly/acme"
    assert row["tokens_before"] >= 0.6 * 8_000 > row["tokens_after"]
    path = f"/conversation_history/{safe_segment('weekly/acme')}.md"
    assert row["history_path"] == path and row["summary"].startswith("SUMMARY 1")
    # the last request before the summary was under the trigger
    agent_calls = [c for c in r.model.calls if SUMMARY_REQUEST not in c.messages[-1].content]
    sizes = [
        COUNTER.count_request(c.params.system_prompt, c.messages, c.params.tools)
        for c in agent_calls
    ]
    first_after = next(i for i, c in enumerate(agent_calls) if c.messages[0].kind == "summary")
    assert sizes[first_after - 1] < 0.6 * 8_000
    seen = agent_calls[first_after].messages
    assert seen[0].kind == "summary" and path in seen[0].content and "read_file" in seen[0].content
    assert summary_text(seen[0]) == row["summary"]
    transcript = store.messages.transcript("weekly/acme")
    before = transcript[: next(i for i, m in enumerate(transcript) if m.kind == "summary")]
    kept = seen[1:]
    assert [m.id for m in kept] == [m.id for m in before[len(before) - len(kept) :]]
    assert kept[0].role == "assistant" and kept[0].tool_calls  # the latest exchange, whole
    # the summarizer's call is counted and told apart
    calls = store.usage.rows()
    summarizer = [c for c in calls if c["model"] == "researcher" + SUMMARIZER_SUFFIX]
    assert len(summarizer) == 1 and summarizer[0]["step"] == row["step"]
    run = store.runs.get(result.run_id)
    assert run["input_tokens"] == sum(c["input_tokens"] for c in calls)
    (event,) = store.events.rows(middleware="summarize")
    assert event["action"] == "summarized" and path in event["detail"]


class AddsToPrompt(Middleware):
    name = "adds"

    def __init__(self, text: str) -> None:
        self.text = text

    async def wrap_model_call(self, request, handler):
        return await handler(request.override(system_prompt=request.system_prompt + self.text))


def test_the_trigger_counts_what_outer_middleware_add_to_the_system_prompt() -> None:
    window = [user(filler(600)), *tool_group([filler(600)]), user("go on")]
    mw = Summarization(trigger=2_000, keep=("messages", 1))
    state = make_state(mw, window)
    assert COUNTER.count_messages(window) < 2_000
    seen = model_call(mw, state, system_prompt=filler(1_000))  # as a skills menu would
    assert seen.messages[0].kind == "summary"
    assert [m.content for m in seen.messages[1:]] == ["go on"]


def test_the_trigger_learns_what_inner_middleware_add_after_it() -> None:
    # Memory sits inside summarization; the guard measures what reached the model, so from
    # the second call on the trigger counts the memory section too.
    r = Researcher(steps=6, window=100_000)
    agent = create_agent(
        r.model, [fetch], store=Store(":memory:"), strategy="summarize", memory=(),
        middleware=[AddsToPrompt(filler(3_000))],
        strategy_params={"summarize.trigger": 5_500, "summarize.keep": ("messages", 2)},
    )  # fmt: skip
    agent.run_sync("go", thread_id="t")
    row = agent.store.summaries.all()[0]
    contexts = [c for c in agent.store.usage.rows() if c["model"] == "researcher"]
    by_step = {c["step"]: c["context_tokens"] for c in contexts}
    # it fired at the first call whose full request reached the trigger
    assert by_step[row["step"] - 1] < 5_500 <= row["tokens_before"]
    assert by_step[row["step"] - 1] + 600 > row["tokens_before"]  # one fetch later


@pytest.mark.parametrize(
    ("trigger", "mode", "fires"),
    [
        (("messages", 6), "any", True),
        (("messages", 7), "any", False),
        (1_000, "any", True),
        ("fraction:0.9", "any", False),
        ([("messages", 6), 100_000], "any", True),
        ([("messages", 6), 100_000], "all", False),
        ([("messages", 6), 1_000], "all", True),
    ],
)
def test_trigger_kinds_and_combinations(trigger, mode, fires) -> None:
    window = [user(filler(400)), *tool_group([filler(400)]), *tool_group([filler(400)]), user("?")]
    assert len(window) == 6 and 1_000 < COUNTER.count_messages(window) < 3_600
    mw = Summarization(trigger=trigger, trigger_mode=mode, keep=("messages", 1))
    seen = model_call(mw, make_state(mw, window))
    assert (seen.messages[0].kind == "summary") is fires


def test_an_unknown_window_falls_back_to_a_token_trigger_and_six_messages() -> None:
    assert Summarization().fallback_trigger_tokens == 170_000
    window = [user(filler(200))]
    for i in range(6):
        window += [*tool_group([filler(100)]), assistant(f"note {i}")]
    mw = Summarization(fallback_trigger_tokens=800)
    state = make_state(mw, window, model=small_model(window=None))
    seen = model_call(mw, state)
    assert seen.messages[0].kind == "summary"
    assert list(seen.messages[1:]) == window[-6:]


def test_the_cut_moves_so_a_call_keeps_its_results() -> None:
    window = [user(filler(300)), *tool_group([filler(300)] * 3)]
    mw = Summarization(trigger=("messages", 2), keep=("messages", 2))
    seen = model_call(mw, make_state(mw, window))
    assert [m.role for m in seen.messages] == ["user", "assistant", "tool", "tool", "tool"]
    assert seen.messages[0].kind == "summary" and seen.messages[1] is window[1]


# -- recoverability and cycles -----------------------------------------------------------------


def test_after_two_cycles_every_message_is_readable_with_read_file_and_in_the_transcript() -> None:
    r = Researcher(steps=14)
    agent = agent_for(r.model, trigger=0.6)
    result = agent.run_sync("Study Acme's revenue.", thread_id="t2")
    store = agent.store
    rows = store.summaries.all()
    assert [row["cycle"] for row in rows] >= [1, 2]
    # cycle 2 merged cycle 1's summary
    assert rows[0]["summary"] in r.summary_requests[1] and "### Summary" in r.summary_requests[1]
    read_file = next(t for t in file_tools() if t.name == "read_file")
    state = make_state(Middleware(), [], store=store, thread_id="t2")
    ctx = ToolContext(state=state, call=ToolCall("c", "read_file"))
    text = asyncio.run(read_file.run({"file_path": rows[0]["history_path"], "limit": 10_000}, ctx))
    assert text.count("## Cycle ") == len(rows)
    window_ids = {m.id for m in result.window}
    originals = [m for m in store.messages.transcript("t2") if m.kind == "message"]
    assert {m.id for m in result.messages} <= {m.id for m in store.messages.transcript("t2")}
    for m in originals:
        if m.id in window_ids:
            continue
        for line in m.content.splitlines():
            assert line in text, f"{line!r} of {m.role} message {m.id} is lost"
        for c in m.tool_calls:
            assert c.id in text


def flaky_summarizer(failures: int) -> FunctionModel:
    """A summarizer whose first `failures` calls fail (an empty summary is a `ModelError`)."""
    calls: list[int] = []

    def answer(messages, params) -> str:
        calls.append(1)
        return "" if len(calls) <= failures else f"summary, attempt {len(calls)}"

    profile = ModelProfile(name="flaky", context_window=8_000)
    return FunctionModel(answer, name="flaky", profile=profile)


def history(store: Store, thread: str) -> str:
    path = f"/conversation_history/{safe_segment(thread)}.md"
    return FileSystem(store, thread).read_text(path)


def test_a_summarizer_failure_after_the_append_does_not_repeat_the_section_on_retry() -> None:
    window = [user("Opening brief. " + filler(500)), *tool_group([filler(500)]), user("next")]
    mw = Summarization(model=flaky_summarizer(1), trigger=500, keep=("messages", 1))
    state = make_state(mw, window, thread_id="t")
    with pytest.raises(ModelError):
        model_call(mw, state)
    assert history(state.store, "t").count("## Cycle 1: ") == 1  # written before the call
    seen = model_call(mw, state)
    assert seen.messages[0].kind == "summary" and "cycle 1]" in seen.messages[0].content
    text = history(state.store, "t")
    assert text.count("## Cycle ") == 1 and text.startswith("## Cycle 1: ")
    assert text.count("Opening brief.") == 1
    (row,) = state.store.summaries.all()
    assert row["cycle"] == 1


def test_a_run_resumed_after_the_append_rewrites_the_cycle_section_instead_of_repeating_it() -> (
    None
):
    store = Store(":memory:")
    window = [user("Opening brief. " + filler(500)), *tool_group([filler(500)]), user("next")]
    killed = Summarization(model=flaky_summarizer(1), trigger=500, keep=("messages", 1))
    with pytest.raises(ModelError):  # stands in for the kill: the step never commits
        model_call(killed, make_state(killed, window, store=store, thread_id="t"))
    resumed = Summarization(model=flaky_summarizer(0), trigger=500, keep=("messages", 1))
    state = make_state(resumed, [], store=store, thread_id="t")
    state.restore(store.load_window("t"), store.next_seq("t"))
    model_call(resumed, state)
    text = history(store, "t")
    assert text.count("## Cycle ") == 1 and text.count("Opening brief.") == 1
    assert [r["cycle"] for r in store.summaries.all()] == [1]
    # a later cycle still appends after it
    for m in [user(filler(500)), *tool_group([filler(500)]), user("again")]:
        state.append(m)
    state.flush()
    model_call(resumed, state)
    text = history(store, "t")
    assert text.count("## Cycle 1: ") == 1 and text.index("## Cycle 2: ") > text.index(
        "## Cycle 1: "
    )


def test_the_summarizer_input_never_exceeds_its_window() -> None:
    requests: list[int] = []

    def summarize(messages, params):
        requests.append(COUNTER.count_request(params.system_prompt, messages, params.tools))
        return f"merged summary {len(requests)}"

    summarizer = FunctionModel(
        summarize, name="tiny", profile=ModelProfile(name="tiny", context_window=3_000)
    )
    window = [user(filler(300))]
    for _ in range(12):
        window += tool_group([filler(900)])
    window += tool_group([filler(9_000)])  # one result alone three times the summarizer's window
    window += tool_group(["latest"])
    mw = Summarization(model=summarizer, trigger=10_000, keep=("messages", 2))
    state = make_state(mw, window, model=small_model(window=100_000))
    seen = model_call(mw, state)
    assert len(requests) >= 5 and max(requests) <= 3_000
    prompts = [c.messages[-1].content for c in summarizer.calls]
    assert all(p.startswith(SUMMARY_REQUEST) for p in prompts)
    assert all(f"merged summary {i}" in p for i, p in enumerate(prompts[1:], start=1))
    history = seen.messages[0].meta["history_path"]
    assert any(f"the full text is in {history}" in p for p in prompts)  # the giant one, clipped
    assert summary_text(seen.messages[0]) == f"merged summary {len(requests)}"
    assert list(seen.messages[1:]) == window[-2:]


def test_summarizer_model_and_prompt_can_differ_from_the_agent() -> None:
    cheap = ScriptedModel(["cheap summary"], name="cheap")
    window = [user(filler(500)), *tool_group([filler(500)]), user("next")]
    mw = Summarization(model=cheap, prompt="Be terse.", trigger=500, keep=("messages", 1))
    state = make_state(mw, window)
    model_call(mw, state)
    assert cheap.calls[0].params.system_prompt == "Be terse."
    assert state.config.model.calls == []
    assert [s["model"] for s in state.store.summaries.all()] == ["cheap"]
    assert [c["model"] for c in state.store.usage.rows()] == ["cheap#summarize"]
    assert state.usage.requests == 1 and state.usage.input_tokens > 0
    assert "exact" in DEFAULT_PROMPT and "Artifacts" in DEFAULT_PROMPT


def test_history_files_are_per_thread() -> None:
    store = Store(":memory:")
    for thread in ("parent", "parent.task.call_1"):
        window = [user(filler(500)), *tool_group([filler(500)]), user("next")]
        mw = Summarization(trigger=500, keep=("messages", 1))
        model_call(mw, make_state(mw, window, store=store, thread_id=thread))
    paths = [r["history_path"] for r in store.summaries.all()]
    assert sorted(paths) == [
        "/conversation_history/parent.md",
        "/conversation_history/parent.task.call_1.md",
    ]


# -- other triggers ------------------------------------------------------------------------------


def test_a_provider_overflow_compacts_and_retries_once() -> None:
    window = [user(filler(500)), *tool_group([filler(500)]), user("next")]
    mw = Summarization(keep=("messages", 1))
    state = make_state(mw, window)
    seen = model_call(mw, state, fail_first=ContextOverflowError("prompt is too long"))
    assert seen.messages[0].kind == "summary"
    (event,) = state.store.events.rows(action="summarized")
    assert '"reason": "overflow"' in event["detail"]

    async def always_too_long(request: ModelRequest) -> ModelResponse:
        raise ContextOverflowError("prompt is too long")

    state = make_state(mw, window)
    request = ModelRequest(state, tuple(state.messages), "", (), ModelSettings())
    with pytest.raises(ContextOverflowError):
        asyncio.run(mw.wrap_model_call(request, always_too_long))
    assert state.messages[0].kind == "summary"  # compacted once, then the error surfaced


def test_the_model_can_ask_for_compaction() -> None:
    model = ScriptedModel(
        [
            reply("", call("fetch", n=1)),
            reply("", call("fetch", n=2)),
            reply("Phase one done.", call("compact_conversation")),
            "SUMMARY of phase one",  # the summarizer (the agent's model) before the next turn
            "Starting phase two.",
        ]
    )
    agent = agent_for(model, compact_tool=True, keep=("messages", 2))
    result = agent.run_sync("Two phases, please.")
    model.assert_complete()
    assert "compact_conversation" in [t["name"] for t in model.calls[0].params.tools]
    last = model.calls[-1].messages
    assert last[0].kind == "summary" and "SUMMARY of phase one" in last[0].content
    assert [m.role for m in last[1:]] == ["assistant", "tool"]
    assert result.output == "Starting phase two."


def test_a_new_topic_summarizes_the_old_one() -> None:
    detector = LexicalTopicShift()
    earlier = [user("Compare Acme and Globex quarterly revenue growth in Europe.")]
    assert detector.is_new_topic(
        earlier, user("Plan the office holiday party menu with vegan dishes.")
    )
    assert not detector.is_new_topic(earlier, user("Which of Acme or Globex grew revenue faster?"))
    assert not detector.is_new_topic(earlier, user("ok thanks"))  # too few words to judge

    base = [earlier[0], *tool_group([filler(400)]), assistant("Acme revenue grew 12% in Europe.")]
    mw = Summarization(topic_shift=True, topic_min_tokens=300)
    same = model_call(mw, make_state(mw, [*base, user("Did Globex revenue grow in Europe too?")]))
    assert same.messages[0].kind == "message"
    new = model_call(
        mw, make_state(mw, [*base, user("Draft a vegan holiday party menu for forty guests.")])
    )
    assert new.messages[0].kind == "summary"
    assert [m.content for m in new.messages[1:]] == [
        "Draft a vegan holiday party menu for forty guests."
    ]
