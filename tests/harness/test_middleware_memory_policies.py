"""Memory policies: consolidate rewrites memory past its budget (keeping every version, and
refusing a rewrite that does not shrink), append only adds, off injects nothing; a token budget
keeps the newest lines."""

import pytest
from helpers.memory import AGENTS, as_user, versions
from helpers.store import events

from harness import Store
from harness.middleware.memory import Memory, render_memory
from harness.models import ScriptedModel
from harness.tokens import TokenCounter


def _long_memory(entries: int = 120) -> str:
    return "# Agent memory\n" + "".join(
        f"- [topic {i % 7}] value {i} of the log\n" for i in range(entries)
    )


def test_consolidate_rewrites_memory_past_its_budget_and_keeps_every_version(bare_agent) -> None:
    store = Store(":memory:")
    original = _long_memory()
    as_user(store).write(AGENTS, original)
    shorter = "# Agent memory\n- [topic 0] value 119 of the log"
    model = ScriptedModel([shorter, "ok"])
    memory = Memory(policy="consolidate", budget_tokens=200)
    bare_agent(model, middleware=[memory], store=store).run_sync("hi")

    request = model.calls[0]
    assert request.params.system_prompt.startswith("You maintain an AI agent's long-term memory")
    assert 'budget_tokens="200"' in request.messages[0].content
    assert "value 119 of the log" in request.messages[0].content
    assert versions(store) == [(1, "user", original), (2, "consolidate", shorter + "\n")]
    prompt = model.calls[1].params.system_prompt
    assert "value 119 of the log" in prompt and "value 118" not in prompt
    (row,) = [c for c in store.usage.rows() if c["model"].endswith("#consolidate")]
    assert store.usage.by_role()["summarizer"]["calls"] == 1 and row["input_tokens"] > 0
    (event,) = events(store, action="consolidated")
    assert event["tokens_before"] > 200 >= event["tokens_after"]


def test_a_rewrite_that_does_not_shrink_is_refused(bare_agent) -> None:
    store = Store(":memory:")
    original = _long_memory()
    as_user(store).write(AGENTS, original)
    model = ScriptedModel([original + "- [more] padding\n", "ok"])
    bare_agent(model, middleware=[Memory(budget_tokens=200)], store=store).run_sync("hi")
    assert [v[1] for v in versions(store)] == ["user"]
    assert events(store, action="consolidation_refused")
    # Still over budget: the newest lines are shown, within it, with a note.
    prompt = model.calls[1].params.system_prompt
    assert "value 119 of the log" in prompt and "value 0 of the log" not in prompt
    assert "[memory trimmed to its 200-token budget" in prompt


def test_token_budget_keeps_the_newest_lines_within_it() -> None:

    count = TokenCounter("o200k_base").count_text
    text = _long_memory()
    section = render_memory({AGENTS: text}, 20_000, "", budget_tokens=150, count=count)
    assert count(section) <= 150
    assert "value 119 of the log" in section and "value 0 of the log" not in section
    assert render_memory({AGENTS: "- one"}, 20_000, "", budget_tokens=150, count=count) == (
        render_memory({AGENTS: "- one"}, 20_000, "")
    )


def test_append_never_consolidates_and_off_injects_nothing(bare_agent) -> None:
    store = Store(":memory:")
    as_user(store).write(AGENTS, _long_memory())
    model = ScriptedModel(["ok", "ok again"])
    bare_agent(model, middleware=[Memory(policy="append", budget_tokens=200)], store=store
               ).run_sync("hi")  # fmt: skip
    assert "value 119 of the log" in model.calls[0].params.system_prompt
    bare_agent(model, middleware=[Memory(policy="off")], store=store).run_sync("hi")
    assert "agent_memory" not in model.calls[1].params.system_prompt
    assert len(versions(store)) == 1
    first, off = events(store, action="loaded")
    assert first["detail"]["policy"] == "append" and off["detail"]["memory_tokens"] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"policy": "forget"}, "memory.policy must be one of append, consolidate, off"),
     ({"budget_tokens": 10}, "memory.budget_tokens must be a whole number >= 50")],
)  # fmt: skip
def test_bad_policy_options_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Memory(**kwargs)
