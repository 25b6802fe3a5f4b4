"""File tools run in worker threads (sync tools do) and share one store: many calls from one
model message, on a held connection and on per-use connections, all see consistent files."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from harness import Store, create_agent
from harness.models import ScriptedModel, call, reply


@pytest.mark.parametrize("hold", [True, False])
def test_concurrent_file_tool_calls_share_the_store_from_their_threads(
    tmp_path: Path, hold: bool
) -> None:
    n = 10
    body = "".join(f"row {i}: revenue {i * 100} EUR\n" for i in range(30))
    writes = [
        call("write_file", file_path=f"/w/f{i}.md", content=f"# {i}\n{body}") for i in range(n)
    ]
    reads = [call("read_file", file_path=f"/w/f{i}.md") for i in range(n)]
    edits = [
        call(
            "edit_file", file_path=f"/w/f{i}.md", old_string=f"# {i}\n", new_string=f"# file {i}\n"
        )
        for i in range(n)
    ]
    scans = [call("grep", pattern="revenue 2900 EUR"), call("glob", pattern="/w/*.md")] * 3
    model = ScriptedModel(
        [reply("", *writes), reply("", *reads, *edits, *scans), reply("", *reads), "done"]
    )
    store = Store(tmp_path / "s.duckdb", hold=hold)
    agent = create_agent(model, store=store, strategy="none", memory=())
    result = agent.run_sync("go", thread_id="t")
    model.assert_complete()
    tools = [m for m in result.messages if m.role == "tool"]
    assert [m.content for m in tools if m.is_error] == []
    assert len(tools) == 4 * n + len(scans)
    final_reads = [m.content for m in tools[-n:]]
    assert all(f"# file {i}" in text for i, text in enumerate(final_reads))
    glob_out = next(m.content for m in tools if m.name == "glob")
    assert all(f"/w/f{i}.md" in glob_out for i in range(n))
    assert len(store.files.rows("/w/")) == n


def test_sync_tools_reuse_worker_threads_and_a_hung_one_keeps_its_own() -> None:
    """Calls one after another run on one reused worker; a call that hangs past its limit
    keeps its worker and the next call gets another, so nothing waits behind it."""
    import asyncio
    import math

    from harness.tools import _WORKERS, ToolContext, ToolTimeoutError, tool

    release = threading.Event()

    @tool(timeout=0.05)
    def hangs() -> str:
        """Hangs until released."""
        release.wait(5)
        return "late"

    @tool(timeout=math.inf)
    def where() -> str:
        """The name of the thread it ran on."""
        return threading.current_thread().name

    ctx = ToolContext(state=None, call=None)  # type: ignore[arg-type]

    async def main() -> tuple[list[str], str]:
        names = [await where.run({}, ctx) for _ in range(5)]
        counts.append(_WORKERS.started)
        with contextlib.suppress(ToolTimeoutError):
            await hangs.run({}, ctx)
        return names, await where.run({}, ctx)

    try:
        counts = [_WORKERS.started]
        names, after = asyncio.run(main())
        assert all(name.startswith("tool-worker-") for name in names)
        # At most one new worker for five calls in a row (none if one was idle) ...
        assert counts[1] - counts[0] <= 1
        # ... and the hung call kept its own: the call after it ran elsewhere.
        assert after != "late" and after.startswith("tool-worker-")
    finally:
        release.set()
