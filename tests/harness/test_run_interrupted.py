"""Ctrl-C ends a library run `interrupted`, as a kill would leave the store: every step committed
before it stays, the step in flight is not written, and the run says so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness import Store, create_agent, tool
from harness.models import ScriptedModel, call, reply


@pytest.mark.parametrize("where", ["memory", "file"])
def test_a_run_stopped_by_ctrl_c_keeps_its_committed_steps_and_is_marked_interrupted(
    where: str, tmp_path: Path
) -> None:
    store = Store(":memory:" if where == "memory" else tmp_path / "s.duckdb")  # held: writes behind

    async def session() -> None:
        main = asyncio.current_task()
        assert main is not None

        @tool
        async def fetch(n: int) -> str:
            """Fetch page n.

            Args:
                n: the page.
            """
            if n == 3:
                main.cancel()  # what asyncio.run does on SIGINT
                await asyncio.sleep(5)
            return f"page {n}"

        script = [reply(f"page {n}", call("fetch", call_id=f"c{n}", n=n)) for n in (1, 2, 3)]
        model = ScriptedModel([*script, "done"])
        agent = create_agent(model, [fetch], store=store, strategy="none", file_tools=False,
                             memory=(), name="pager")  # fmt: skip
        await agent.run("read three pages", thread_id="t")

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(session())
    (run,) = store.runs.all()
    assert run["status"] == "interrupted" and "interrupted after 3 model calls" in run["error"]
    # Model calls 1 and 2 and their results were committed; call 3's reply, whose tool never
    # returned, was not (a resumed thread would read its call as cancelled).
    assert [(m.role, m.tool_call_id) for m in store.messages.transcript("t")] == [
        ("user", None), ("assistant", None), ("tool", "c1"), ("assistant", None), ("tool", "c2")
    ]  # fmt: skip
    assert run["steps"] == 2 and len(store.usage.rows()) == 2
    assert run["input_tokens"] == store.usage.of_run(run["run_id"])[0].input_tokens
    store.close()
