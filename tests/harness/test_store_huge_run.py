"""A whole run whose tool result is several times the file store's DuckDB memory_limit (issue
37 item 2): it ends `completed`, and the result reads back byte-identical through the file
tools and the transcript, with write-behind on and off. A 32 MB limit stands in for the
default 256 MB and a ~300 MB result, so that the test takes seconds."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import Store, create_agent, tool
from harness.files.filesystem import FileSystem
from harness.files.tools import file_tools
from harness.messages import ToolCall
from harness.models import ScriptedModel, call, reply
from harness.tools import ToolContext

LIMIT = "32MB"
ROWS = 1_000_000  # 70 MB: more than twice the limit
LINE = "row {:09d}: a tool result far larger than the store's memory limit\n"


def _huge_text() -> str:
    return "".join(LINE.format(i) for i in range(ROWS))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("write_behind", [0, 64])
def test_a_result_larger_than_the_memory_limit_completes_and_reads_back(
    tmp_path: Path, write_behind: int
) -> None:
    digest = _sha(_huge_text())

    @tool
    def dump() -> str:
        """Dump the table."""
        return _huge_text()

    model = ScriptedModel([reply("", call("dump", call_id="c1")), "done"])
    store = Store(tmp_path / "s.duckdb", memory_limit=LIMIT, write_behind=write_behind)
    agent = create_agent(model, tools=[dump], store=store, system_prompt="s")
    result = agent.run_sync("go", thread_id="t")
    assert result.status == "completed"
    store.close()

    with Store(tmp_path / "s.duckdb", memory_limit=LIMIT) as again:
        (run,) = again.runs.all()
        assert run["status"] == "completed"
        (path,) = [r["path"] for r in again.files.rows() if "large_tool_results" in r["path"]]
        files = FileSystem(again, "t", run["run_id"])
        opened = files.open(path)
        streamed = hashlib.sha256()
        for piece in opened.text_from(0):  # what read_file and grep page through
            streamed.update(piece.encode())
        assert streamed.hexdigest() == digest
        args = {"file_path": path, "offset": 987_654, "limit": 2}
        ctx = ToolContext(state=SimpleNamespace(files=files), call=ToolCall("c", "read_file", args))
        read_file = {t.name: t for t in file_tools()}["read_file"]
        page = asyncio.run(read_file.run(args, ctx))
        assert LINE.format(987_654).rstrip("\n") in page
        assert LINE.format(987_655).rstrip("\n") in page
        texts = [r["text"] for r in again.messages.thread_messages("t") if r["role"] == "tool"]
        assert [_sha(t) for t in texts] == [digest]
