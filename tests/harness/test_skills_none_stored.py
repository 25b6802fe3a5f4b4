"""Skills that do not exist cost nothing: on an in-memory store holding no file under
`/skills/`, a run start reads nothing for them; skills that appear by any road are offered at
the next run start."""

from typing import Any

from helpers.store import CountingStore

from harness.files.filesystem import FileSystem
from harness.middleware.skills import Skills
from harness.models import ScriptedModel

SKILL = "/skills/house-style/SKILL.md"
TEXT = "---\nname: house-style\ndescription: Write numbers in tables.\n---\nUse tables.\n"


def _prompts(model: ScriptedModel) -> list[str]:
    return [c.params.system_prompt for c in model.calls]


def test_a_run_start_reads_nothing_when_the_store_holds_no_skills(bare_agent) -> None:
    store = CountingStore(("files",))
    agent = bare_agent(ScriptedModel(["One.", "Two.", "Three."]), (), [Skills()], store=store)
    agent.run_sync("hi", thread_id="t")
    assert len(store.reads) == 1
    store.reads.clear()
    agent.run_sync("hi again", thread_id="t")
    agent.run_sync("and again", thread_id="u")
    assert store.reads == []


def test_a_skill_written_outside_a_run_is_offered_at_the_next_start(bare_agent) -> None:
    store = CountingStore(("files",))
    model = ScriptedModel(["One.", "Two."])
    agent = bare_agent(model, (), [Skills()], store=store)
    agent.run_sync("hi", thread_id="t")
    FileSystem(store, "outside", grants=["/skills/"]).write(SKILL, TEXT)
    agent.run_sync("hi", thread_id="t")
    assert "house-style" not in _prompts(model)[0]
    assert "house-style" in _prompts(model)[1]


def test_a_skill_written_by_raw_sql_is_offered_at_the_next_start(bare_agent) -> None:
    store = CountingStore(("files",))
    model = ScriptedModel(["One.", "Two."])
    agent = bare_agent(model, (), [Skills()], store=store)
    agent.run_sync("hi", thread_id="t")
    store.execute(
        "INSERT INTO files (namespace, path, content, is_text, size, run_id, created_at, "
        "modified_at) VALUES ('shared', ?, ?::BLOB, true, ?, NULL, now(), now())",
        [SKILL, TEXT, len(TEXT)],
    )
    agent.run_sync("hi", thread_id="t")
    assert "house-style" in _prompts(model)[1]


def test_a_file_store_always_reads(bare_agent, tmp_path) -> None:  # noqa: ANN001
    # Another process may change a file store between runs: its answer is never remembered.
    store = CountingStore(("files",), tmp_path / "s.duckdb")
    agent = bare_agent(ScriptedModel(["One.", "Two."]), (), [Skills()], store=store)
    agent.run_sync("hi", thread_id="t")
    agent.run_sync("hi", thread_id="t")
    assert len(store.reads) == 2


def test_rows_written_under_the_folder_make_it_read_again() -> None:
    from harness.store.own_writes import OwnWrites

    own, reads = OwnWrites(private=True), []

    def read() -> list[dict[str, Any]]:
        reads.append(1)
        return []

    own.files_under("/skills/", read)
    own.wrote({"files": [("shared", "/large_tool_results/a")]})
    own.files_under("/skills/", read)
    assert len(reads) == 1
    own.wrote({"files": [("shared", SKILL)]})
    own.files_under("/skills/", read)
    assert len(reads) == 2
