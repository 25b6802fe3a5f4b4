"""The other arms as specifications: truncation, observation masking, context editing, the
dangling-call patch and the no-compaction guard."""

from __future__ import annotations

import pytest
from helpers.windows import make_state, model_call, small_model, tool_group

from harness import ContextOverflowError, Store, create_agent, tool
from harness.messages import Message, assistant, tool_result, user
from harness.middleware.context_edit import ContextEdit
from harness.middleware.cutoff import pairing_problems
from harness.middleware.dangling import PatchDanglingToolCalls
from harness.middleware.mask import ObservationMask
from harness.middleware.truncate import Truncate
from harness.models import ScriptedModel, call, reply
from harness.tokens import TokenCounter

COUNTER = TokenCounter()


def filler(tokens: int, tag: str = "") -> str:
    return " ".join(f"{tag}fact{i}" for i in range(tokens // 2))


def research_window(results: int, tokens: int = 300) -> list[Message]:
    window = [user("Study Acme.")]
    for i in range(results):
        window += tool_group([filler(tokens, tag=f"r{i}")], name="search" if i % 2 else "fetch")
    return window


def events(state, middleware: str) -> list[dict]:
    return state.store.events.rows(middleware=middleware)


# -- truncate ----------------------------------------------------------------------------------


def test_truncation_keeps_the_newest_messages_that_fit_and_says_so() -> None:
    window = research_window(10)
    mw = Truncate(trigger=0.5, target=0.5)  # of a 4,000-token window
    state = make_state(mw, window)
    seen = model_call(mw, state, system_prompt=filler(600))
    total = COUNTER.count_request(seen.system_prompt, seen.messages, [])
    assert total <= 2_000 < COUNTER.count_request(seen.system_prompt, window, [])
    notice, *kept = seen.messages
    assert notice.kind == "truncated" and notice.role == "user"
    dropped = len(window) - len(kept)
    assert notice.meta["dropped"] == dropped
    assert kept == window[dropped:] and kept[0].role == "assistant"
    assert pairing_problems(seen.messages) == []
    assert (
        len(state.store.messages.transcript(state.thread_id)) == len(window) + 1
    )  # nothing deleted
    (event,) = events(state, "truncate")
    assert event["tokens_before"] > 2_000 >= event["tokens_after"]

    # the next truncation counts what the first dropped
    state.append(assistant("more", []))
    for m in tool_group([filler(900)]):
        state.append(m)
    again = model_call(mw, state, system_prompt=filler(600))
    assert again.messages[0].meta["dropped"] > dropped
    assert sum(m.kind == "truncated" for m in again.messages) == 1


def test_truncation_by_message_count_and_below_budget_does_nothing() -> None:
    window = research_window(4)
    mw = Truncate(trigger=("messages", 3), target=("messages", 3))
    seen = model_call(mw, make_state(mw, window))
    assert [m.kind for m in seen.messages] == ["truncated", "message", "message"]
    untouched = Truncate()  # 85% of the window
    state = make_state(untouched, window)
    assert model_call(untouched, state).messages == tuple(window)
    assert events(state, "truncate") == []


def test_truncation_cuts_rarely_and_deep_so_the_prefix_survives_between_cuts() -> None:
    mw = Truncate()  # cut past 85% of the 4,000-token window, down to 50%
    state = make_state(mw, [user("Study Acme.")])
    requests = []
    for step in range(40):
        for m in tool_group([filler(120, tag=f"s{step}")]):
            state.append(m)
        requests.append(model_call(mw, state).messages)
    cuts = [
        i for i in range(1, len(requests)) if requests[i][: len(requests[i - 1])] != requests[i - 1]
    ]
    assert 2 <= len(cuts) <= len(requests) // 8  # a cut about every 10 steps, not every step
    for i in range(1, len(requests)):
        if i not in cuts:  # the whole previous request is the next one's prefix: cacheable
            assert requests[i][: len(requests[i - 1])] == requests[i - 1]
    for i in cuts:
        assert COUNTER.count_request("", requests[i], []) <= 2_000
    notices = {r[0].content for r in requests[cuts[0] :]}
    assert len(notices) == 1  # the notice's text never changes, even from one cut to the next


def test_truncation_target_cannot_exceed_a_message_trigger_nor_mix_units() -> None:
    with pytest.raises(ValueError, match="cannot keep more"):
        Truncate(trigger=("messages", 3), target=("messages", 5))
    with pytest.raises(ValueError, match="both be message counts"):
        Truncate(trigger=0.8, target=("messages", 5))


# -- mask --------------------------------------------------------------------------------------


def test_masking_keeps_the_last_results_and_names_offloaded_files() -> None:
    window = research_window(5)
    offloaded = window[2].with_content(
        filler(100, "preview"), full_content="all", meta={"offload_path": "/large_tool_results/c1"}
    )
    window[2] = offloaded
    mw = ObservationMask(keep=2, batch=1)
    state = make_state(mw, window)
    seen = model_call(mw, state)
    results = [m for m in seen.messages if m.role == "tool"]
    assert [m.kind for m in results] == ["masked", "masked", "masked", "message", "message"]
    assert results[-2:] == [window[-3], window[-1]]
    assert "/large_tool_results/c1" in results[0].content and "read_file" in results[0].content
    assert results[1].content.startswith("[Earlier search result omitted")
    assert [m.tool_call_id for m in results] == [m.tool_call_id for m in window if m.role == "tool"]
    (event,) = events(state, "mask")
    assert event["tokens_before"] > event["tokens_after"]

    # persisted: the next call with no new result changes nothing and records nothing
    assert model_call(mw, state).messages == seen.messages
    assert len(events(state, "mask")) == 1
    assert state.store.load_window(state.thread_id) == list(seen.messages)


def test_masking_in_batches_rewrites_the_window_less_often() -> None:
    mw = ObservationMask(keep=2, batch=3)
    state = make_state(mw, research_window(4))  # two results due: below the batch
    assert all(m.kind == "message" for m in model_call(mw, state).messages)
    for m in tool_group([filler(300)]):
        state.append(m)
    assert sum(m.kind == "masked" for m in model_call(mw, state).messages) == 3


def rewrites(mw, steps: int = 40, tokens: int = 150) -> list[int]:
    """The steps at which `mw` rewrote the window while a research run grew by one result of
    `tokens` a step (a rewrite breaks the provider's cached prefix)."""
    state = make_state(mw, [user("Study Acme.")])
    previous: tuple[Message, ...] = ()
    changed = []
    for step in range(steps):
        for m in tool_group([filler(tokens, tag=f"s{step}")]):
            state.append(m)
        seen = model_call(mw, state).messages
        if seen[: len(previous)] != previous:
            changed.append(step)
        previous = seen
    return changed


def test_masking_and_context_editing_rewrite_in_batches_by_default() -> None:
    assert ObservationMask().batch == 5
    masked_at = rewrites(ObservationMask(keep=3))
    assert masked_at and len(masked_at) <= 40 // 5
    # Hovering at the trigger, context editing would clear one newly old result every call;
    # by default each clear reclaims a tenth of the window, so it fires every few steps.
    cleared_at = rewrites(ContextEdit(trigger=1_000))
    eager = rewrites(ContextEdit(trigger=1_000, clear_at_least=0))
    assert len(eager) > 25 and 2 <= len(cleared_at) <= len(eager) // 2


def test_the_mask_strategy_end_to_end() -> None:
    @tool
    def fetch(n: int) -> str:
        """Fetch document n."""
        return filler(400, tag=f"d{n}")

    model = ScriptedModel([*(reply("", call("fetch", n=i)) for i in range(4)), "done"])
    agent = create_agent(
        model, [fetch], store=Store(":memory:"), strategy="mask", memory=(),
        strategy_params={"mask.keep": 1, "mask.batch": 1},
    )  # fmt: skip
    agent.run_sync("go")
    last = [m for m in model.calls[-1].messages if m.role == "tool"]
    assert [m.kind for m in last] == ["masked", "masked", "masked", "message"]


# -- context-edit ------------------------------------------------------------------------------


def test_context_editing_clears_old_results_past_the_trigger_once() -> None:
    window = research_window(6)
    mw = ContextEdit(
        trigger=1_000, keep=2, clear_at_least=0, exclude_tools=["search"], placeholder="[cleared]"
    )
    state = make_state(mw, window)
    seen = model_call(mw, state)
    results = [m for m in seen.messages if m.role == "tool"]
    # fetch results are 0, 2, 4; search 1, 3, 5; the last two (4, 5) are kept
    assert [m.kind for m in results] == [
        "cleared",
        "message",
        "cleared",
        "message",
        "message",
        "message",
    ]
    assert results[0].content == "[cleared]"
    (event,) = events(state, "context-edit")
    assert event["tokens_before"] >= 1_000

    # persisted: below the trigger now, the next call leaves the window alone
    model_call(mw, state)
    assert len(events(state, "context-edit")) == 1
    assert state.store.load_window(state.thread_id) == list(seen.messages)


def test_context_editing_clears_at_least_k_tokens_or_nothing() -> None:
    window = research_window(6)
    one_result = COUNTER.count_message(window[2])
    enough = ContextEdit(trigger=1_000, keep=0, clear_at_least=one_result + 1)
    seen = model_call(enough, make_state(enough, window))
    assert [m.kind for m in seen.messages if m.role == "tool"][:3] == [
        "cleared",
        "cleared",
        "message",
    ]
    greedy = ContextEdit(trigger=1_000, keep=0, clear_at_least=50_000)
    state = make_state(greedy, window)
    assert model_call(greedy, state).messages == tuple(window)
    assert events(state, "context-edit") == []


def test_context_editing_below_the_trigger_does_nothing() -> None:
    mw = ContextEdit()  # 100,000 tokens
    state = make_state(mw, research_window(6))
    assert all(m.kind == "message" for m in model_call(mw, state).messages)


# -- dangling tool calls -----------------------------------------------------------------------


class Crash(BaseException):
    """Stands for a process being killed in the middle of a tool call."""


def test_a_resumed_thread_gets_cancellation_results_for_dangling_calls() -> None:
    @tool
    def slow(n: int) -> str:
        """Never finishes."""
        raise Crash()

    store = Store(":memory:")
    first = ScriptedModel([reply("", call("slow", "c1", n=1), call("slow", "c2", n=2))])
    agent = create_agent(first, [slow], store=store, strategy="none", memory=())
    with pytest.raises(Crash):
        agent.run_sync("start", thread_id="t")
    second = ScriptedModel(["picking up again"])
    agent = create_agent(second, [slow], store=store, strategy="none", memory=())
    agent.run_sync("continue", thread_id="t")
    seen = second.calls[0].messages
    assert [(m.role, m.kind) for m in seen] == [
        ("user", "message"), ("assistant", "message"),
        ("tool", "cancelled"), ("tool", "cancelled"), ("user", "message"),
    ]  # fmt: skip
    assert [m.tool_call_id for m in seen[2:4]] == ["c1", "c2"]
    assert all(m.is_error and "cancelled" in m.content for m in seen[2:4])
    assert len(store.events.rows(middleware="dangling")) == 1


def test_stray_and_duplicate_results_leave_the_window() -> None:
    group = tool_group(["a", "b"])
    stray = tool_result(group[0].tool_calls[0].__class__("gone", "x"), "stray")
    window = [user("hi"), stray, *group, group[1], assistant("done")]
    mw = PatchDanglingToolCalls()
    state = make_state(mw, window)
    seen = model_call(mw, state)
    assert list(seen.messages) == [window[0], *group, window[-1]]
    clean = make_state(mw, [user("hi"), *group])
    model_call(mw, clean)
    assert events(clean, "dangling") == []  # a well-formed window costs no step


# -- none: the guard ---------------------------------------------------------------------------


def test_without_compaction_an_over_window_request_fails_before_the_model_is_called() -> None:
    model = ScriptedModel(["never"], profile=small_model(window=1_000).profile)
    agent = create_agent(
        model, store=Store(":memory:"), strategy="none", memory=(), file_tools=False
    )
    with pytest.raises(ContextOverflowError) as info:
        agent.run_sync(filler(2_000), thread_id="t")
    assert info.value.limit == 1_000 and info.value.tokens > 1_000
    assert model.calls == []
    (run,) = agent.store.runs.all()
    assert run["status"] == "failed" and "exceeds the 1,000-token window" in run["error"]
    assert agent.store.events.rows(middleware="guard")[0]["action"] == "overflow"
