"""Memory that does not exist costs nothing: on an in-memory store that holds none, a run start
reads nothing for it; memory that appears by any road is read at the next run start."""

from helpers.store import CountingStore

from harness import Store
from harness.files.filesystem import FileSystem
from harness.files.tools import file_tools
from harness.middleware.memory import Memory
from harness.models import ScriptedModel, call, reply

AGENTS = "/memories/AGENTS.md"


def _prompts(model: ScriptedModel) -> list[str]:
    return [c.params.system_prompt for c in model.calls]


def test_a_run_start_reads_nothing_when_the_store_holds_no_memory(bare_agent) -> None:
    store = CountingStore(("memory", "files"))
    agent = bare_agent(ScriptedModel(["One.", "Two.", "Three."]), (), [Memory()], store=store)
    agent.run_sync("hi", thread_id="t")
    store.reads.clear()
    agent.run_sync("hi again", thread_id="t")
    agent.run_sync("and again", thread_id="u")
    assert store.reads == []


def test_memory_written_outside_a_run_is_seen_at_the_next_start(bare_agent) -> None:
    store = CountingStore(("memory", "files"))
    model = ScriptedModel(["One.", "Two.", "Three."])
    agent = bare_agent(model, (), [Memory()], store=store)
    agent.run_sync("hi", thread_id="t")
    FileSystem(store, "outside", grants=["/memories/"]).write(AGENTS, "- Tables for numbers.\n")
    agent.run_sync("hi", thread_id="t")
    assert "- Tables for numbers." in _prompts(model)[1]
    assert [r["author"] for r in store.memory.versions(AGENTS)] == ["user"]


def test_memory_written_by_raw_sql_is_seen_at_the_next_start(bare_agent) -> None:
    store = CountingStore(("memory", "files"))
    model = ScriptedModel(["One.", "Two."])
    agent = bare_agent(model, (), [Memory()], store=store)
    agent.run_sync("hi", thread_id="t")
    store.execute(
        "INSERT INTO files (namespace, path, content, is_text, size, run_id, created_at, "
        "modified_at) VALUES ('shared', ?, '- Euro amounts.'::BLOB, true, 15, NULL, now(), now())",
        [AGENTS],
    )
    agent.run_sync("hi", thread_id="t")
    assert "- Euro amounts." in _prompts(model)[1]


def test_memory_the_agent_writes_is_read_at_the_next_start(bare_agent) -> None:
    store = CountingStore(("memory", "files"))
    model = ScriptedModel(
        [
            reply("", call("write_file", "w1", file_path=AGENTS, content="- Bullets.\n")),
            "Saved.",
            "Hello.",
        ]
    )
    agent = bare_agent(model, file_tools(), [Memory()], store=store)
    agent.run_sync("remember bullets", thread_id="t")
    agent.run_sync("hi", thread_id="other")
    assert "- Bullets." in _prompts(model)[2]
    assert store.holds_memory()


def test_a_file_store_always_reads(bare_agent, tmp_path) -> None:  # noqa: ANN001
    # Another process may change a file store between runs: its answer is never remembered.
    store = Store(tmp_path / "s.duckdb")
    assert not store.holds_memory()
    assert not store.own.memoryless
