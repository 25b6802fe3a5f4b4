"""No cutoff ever separates a tool call from its result: summarize, truncate, mask and
context-edit on random conversations with parallel tool-call groups, and the dangling patch on
broken ones."""

from __future__ import annotations

import random

from helpers.windows import make_state, model_call, small_model, tool_group
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ContextOverflowError
from harness.messages import Message, ToolCall, assistant, new_id, tool_result, user
from harness.middleware.context_edit import ContextEdit
from harness.middleware.cutoff import pairing_problems, safe_cuts, tail_cut
from harness.middleware.dangling import PatchDanglingToolCalls
from harness.middleware.mask import ObservationMask
from harness.middleware.summarization import Summarization
from harness.middleware.truncate import Truncate
from harness.store import Store

STORE = Store(":memory:")  # one store for all examples; each example has its own thread
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def words(n: int) -> str:
    return " ".join(f"w{i % 97}" for i in range(n))


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """A well-formed window: user turns, assistant texts, and groups of 1-4 parallel tool
    calls with their results, of random sizes."""
    msgs = [user(words(draw(st.integers(1, 200))))]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["tools", "tools", "text", "user"]))
        if kind == "tools":
            sizes = draw(st.lists(st.integers(1, 600), min_size=1, max_size=4))
            msgs += tool_group([words(s) for s in sizes], name=draw(st.sampled_from("abc")))
        elif kind == "text":
            msgs.append(assistant(words(draw(st.integers(1, 150)))))
        else:
            msgs.append(user(words(draw(st.integers(1, 150)))))
    return msgs


def brute_force_safe(messages: list[Message], i: int) -> bool:
    kept, dropped = messages[i:], messages[:i]
    dropped_calls = {c.id for m in dropped for c in m.tool_calls}
    kept_calls = {c.id for m in kept for c in m.tool_calls}
    dropped_results = {m.tool_call_id for m in dropped if m.role == "tool"}
    if i not in (0, len(messages)) and messages[i].role == "tool":
        return False
    return not any(m.role == "tool" and m.tool_call_id in dropped_calls for m in kept) and not (
        kept_calls & dropped_results
    )


@SETTINGS
@given(conversations(), st.integers(0, 4_000))
def test_safe_cuts_are_exactly_the_cuts_that_keep_pairs_together(msgs, budget) -> None:
    ok = safe_cuts(msgs)
    assert ok == [brute_force_safe(msgs, i) for i in range(len(msgs) + 1)]
    cut = tail_cut([len(m.content) for m in msgs], ok, budget)
    assert ok[cut]
    assert pairing_problems(msgs[cut:]) == []


def assert_well_formed(before: list[Message], after: list[Message], synthetic: set[str]) -> None:
    assert pairing_problems(after) == [], [(m.role, m.kind) for m in after]
    originals = [m for m in after if m.kind not in synthetic]
    ids = [m.id for m in before]
    # what stays verbatim keeps its order
    positions = [ids.index(m.id) for m in originals if m.id in ids]
    assert positions == sorted(positions)


@SETTINGS
@given(
    conversations(),
    st.sampled_from([0.3, 0.5, 0.85, 1_000, ("messages", 6)]),
    st.sampled_from([0.05, 0.1, 0.3, 300, ("messages", 3), ("messages", 7)]),
    st.booleans(),
)
def test_summarization_never_separates_calls_and_results(msgs, trigger, keep, overflow) -> None:
    mw = Summarization(trigger=trigger, keep=keep, model=small_model(window=50_000))
    state = make_state(mw, msgs, store=STORE, model=small_model(window=3_000))
    fail = ContextOverflowError("too long") if overflow else None
    try:
        seen = model_call(mw, state, fail_first=fail)
    except ContextOverflowError:
        # Raised again only when nothing is left to summarize.
        assert overflow and all(m.kind == "summary" for m in state.messages)
        return
    assert_well_formed(msgs, list(seen.messages), {"summary"})
    assert list(seen.messages) == state.messages
    if seen.messages[0].kind == "summary":
        kept = list(seen.messages[1:])
        assert kept == msgs[len(msgs) - len(kept) :]  # a verbatim suffix


@SETTINGS
@given(conversations(), st.sampled_from([0.2, 0.5, 500, 1_500, ("messages", 1), ("messages", 5)]))
def test_truncation_never_separates_calls_and_results(msgs, budget) -> None:
    mw = Truncate(trigger=budget, target=budget)
    state = make_state(mw, msgs, store=STORE, model=small_model(window=3_000))
    seen = model_call(mw, state)
    assert_well_formed(msgs, list(seen.messages), {"truncated"})
    assert seen.messages  # never an empty conversation


@SETTINGS
@given(conversations(), st.integers(0, 5), st.integers(1, 3))
def test_masking_never_separates_calls_and_results(msgs, keep, batch) -> None:
    mw = ObservationMask(keep=keep, batch=batch)
    state = make_state(mw, msgs, store=STORE)
    seen = model_call(mw, state)
    assert_well_formed(msgs, list(seen.messages), {"masked"})
    assert len(seen.messages) == len(msgs)


@SETTINGS
@given(conversations(), st.integers(0, 3_000), st.integers(0, 4), st.integers(0, 2_000))
def test_context_editing_never_separates_calls_and_results(msgs, trigger, keep, at_least) -> None:
    mw = ContextEdit(trigger=trigger, keep=keep, clear_at_least=at_least, exclude_tools=["c"])
    state = make_state(mw, msgs, store=STORE)
    seen = model_call(mw, state)
    assert_well_formed(msgs, list(seen.messages), {"cleared"})
    assert all(m.name != "c" for m in seen.messages if m.kind == "cleared")


@SETTINGS
@given(conversations(), st.integers(0, 2**32 - 1))
def test_the_dangling_patch_repairs_any_broken_window(msgs, seed) -> None:
    rng = random.Random(seed)
    broken = [m for m in msgs if not (m.role == "tool" and rng.random() < 0.3)]  # lost results
    for _ in range(rng.randint(0, 2)):  # results whose call is gone, and duplicates
        stray = tool_result(ToolCall(new_id("call"), "x"), "stray")
        broken.insert(rng.randint(0, len(broken)), stray)
    results = [m for m in broken if m.role == "tool"]
    if results and rng.random() < 0.5:
        broken.insert(rng.randint(0, len(broken)), results[0])
    if rng.random() < 0.5:
        broken.append(assistant("", [ToolCall(new_id("call"), "a")]))  # crashed mid-step
    mw = PatchDanglingToolCalls()
    state = make_state(mw, broken, store=STORE)
    seen = model_call(mw, state)
    assert pairing_problems(list(seen.messages)) == []
    kept_calls = [c.id for m in seen.messages for c in m.tool_calls]
    assert kept_calls == [c.id for m in broken for c in m.tool_calls]  # no call is lost
