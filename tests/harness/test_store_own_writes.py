"""An in-memory store answers a run's window and next position from the rows it wrote: the
same messages the tables give, with no read; anything it cannot see into makes it read again."""

from typing import Any

from helpers.store import CountingStore

from harness import Store, create_agent, tool
from harness.models import ScriptedModel, call, reply
from harness.store import own_writes


def filler(tokens: int, tag: str) -> str:
    return " ".join(f"{tag}w{i}" for i in range(tokens))


@tool
def fetch(n: int) -> str:
    """Fetch document n."""
    return filler(400, tag=f"d{n}")


def _masking_agent(store: Store, turns: int) -> Any:
    script = [x for i in range(turns) for x in (reply("", call("fetch", n=i)), f"done {i}")]
    return create_agent(
        ScriptedModel(script), [fetch], store=store, strategy="mask", memory=(),
        strategy_params={"mask.keep": 1, "mask.batch": 1},
    )  # fmt: skip


def test_the_window_it_remembers_is_the_window_the_tables_hold() -> None:
    store = CountingStore(("messages", "windows"))
    agent = _masking_agent(store, 4)
    for i in range(4):
        agent.run_sync(f"turn {i}", thread_id="t")
        remembered = store.load_window("t")
        assert remembered == store.messages.load_window("t")
        assert store.next_seq("t") == store.messages.next_seq("t")
    assert any(m.kind == "masked" for m in remembered)  # windows rows were written and followed


def test_a_known_thread_is_not_read_again() -> None:
    store = CountingStore(("messages", "windows"))
    agent = _masking_agent(store, 3)
    agent.run_sync("turn 0", thread_id="t")
    store.reads.clear()
    agent.run_sync("turn 1", thread_id="t")
    agent.run_sync("turn 2", thread_id="t")
    assert store.reads == []


def test_a_statement_it_cannot_see_into_makes_it_read_again() -> None:
    store = CountingStore(("messages", "windows"))
    agent = _masking_agent(store, 2)
    agent.run_sync("turn 0", thread_id="t")
    store.execute("DELETE FROM messages WHERE thread_id = 't' AND role = 'tool'")
    assert store.load_window("t") == store.messages.load_window("t")
    assert all(m.role != "tool" for m in store.load_window("t"))


def test_a_file_store_always_reads(tmp_path) -> None:  # noqa: ANN001
    # Another process may write a file store between two runs.
    store = CountingStore(("messages", "windows"), tmp_path / "s.duckdb")
    agent = _masking_agent(store, 2)
    agent.run_sync("turn 0", thread_id="t")
    store.reads.clear()
    agent.run_sync("turn 1", thread_id="t")
    assert store.reads


def test_only_messages_a_window_holds_are_read_back_from_their_rows(monkeypatch) -> None:  # noqa: ANN001
    """A message is made from its row when a window holds it, once: the ones no run has
    started from yet never are, and a reload answers the same objects."""
    made: list[str] = []
    real = own_writes.row_to_message
    monkeypatch.setattr(
        own_writes, "row_to_message", lambda row: made.append(row["message_id"]) or real(row)
    )
    store = Store(":memory:")
    agent = _masking_agent(store, 4)
    held: set[str] = set()  # every message a run start's window held
    for i in range(4):
        held |= {m.id for m in store.load_window("t")}  # what the run starts from
        agent.run_sync(f"turn {i}", thread_id="t")
    assert sorted(made) == sorted(held)  # each made once, and only those
    assert len(store.messages.transcript("t")) > len(held)  # the last run's never were
    window = store.load_window("t")
    assert window == store.messages.load_window("t")  # the tables' answer
    assert all(a is b for a, b in zip(store.load_window("t"), window, strict=True))


def test_a_snapshot_window_keeps_its_order_makes_rows_once_and_skips_dropped_ids() -> None:
    from datetime import datetime

    from harness.messages import user
    from harness.store.rows import message_row

    made, as_row, later = user("made"), user("as row"), user("later")
    thread = own_writes._Thread()
    thread.by_id[made.id] = made
    thread.by_id[as_row.id] = message_row(
        as_row, thread_id="t", seq=2, run_id="r", step=0, tokens=1
    )
    thread.by_id[later.id] = later
    thread.seqs = [(1, made.id), (2, as_row.id), (3, later.id)]
    # The snapshot names a message this thread never wrote (another thread's): left out.
    thread.snapshot = (2, datetime(2026, 1, 1), [as_row.id, "elsewhere", made.id])
    window = thread.window()
    assert [m.content for m in window] == ["as row", "made", "later"]
    assert window[1] is made and thread.by_id[as_row.id] == window[0]  # made once, then kept
    assert thread.window()[0] is window[0]
