"""The `messages` and `windows` tables: the append-only transcript of each thread, and what
the model saw of it after each rewrite."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness.messages import Message
from harness.store.files import blob_pieces
from harness.store.rows import row_to_message

if TYPE_CHECKING:
    from harness.store.sql import Sql


class Messages:
    """Transcripts and windows."""

    def __init__(self, sql: Sql, *, names_full_refs: bool = True) -> None:
        """`names_full_refs`: the schema has `messages.full_ref` and `message_texts` (a store
        always: it migrates on opening; a reader of a file from before schema v5 not)."""
        self._sql = sql
        self._names_full_refs = names_full_refs

    def next_seq(self, thread_id: str) -> int:
        """The transcript position the thread's next message takes."""
        last = self._sql.scalar(
            "SELECT coalesce(max(seq), 0) FROM messages WHERE thread_id = ?", [thread_id]
        )
        return int(last) + 1

    def is_empty(self, thread_id: str) -> bool:
        """True when the thread has no message and no window row."""
        return not self._sql.scalar(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE thread_id = ?) "
            "OR EXISTS (SELECT 1 FROM windows WHERE thread_id = ?)",
            [thread_id, thread_id],
        )

    def transcript(self, thread_id: str, run_id: str | None = None) -> list[Message]:
        """Every message ever appended to a thread (or one run of it), in order; an offloaded
        original is read back into `full_content` (see `full_texts`)."""
        messages = self._stored(thread_id, run_id)
        texts = self.full_texts([m.full_ref for m in messages if m.full_ref is not None])
        return [
            replace(m, full_content=texts.get(m.full_ref))
            if m.full_ref is not None and m.full_content is None
            else m
            for m in messages
        ]

    def _stored(self, thread_id: str, run_id: str | None = None) -> list[Message]:
        sql = "SELECT * FROM messages WHERE thread_id = ?"
        params: list[Any] = [thread_id]
        if run_id:
            sql += " AND run_id = ?"
            params.append(run_id)
        return [row_to_message(r) for r in self._sql.query(sql + " ORDER BY seq", params)]

    def full_texts(self, refs: Sequence[str]) -> dict[str, str]:
        """The offloaded originals messages name (`Message.full_ref`), by ref: each is a blob
        of `file_chunks`, kept while a message names it even once its file is gone, read a
        bounded number of chunks a query (`blob_pieces`) and joined here."""
        texts: dict[str, str] = {}
        for ref in sorted(set(refs)):
            pieces = [piece.decode("utf-8") for piece in blob_pieces(self._sql, ref)]
            if pieces:
                texts[ref] = "".join(pieces)
        return texts

    def full_text(self, message: Message) -> str:
        """The whole text of `message`: its offloaded original if it has one, else its
        content."""
        if message.full_content is not None:
            return message.full_content
        if message.full_ref is not None:
            text = self.full_texts([message.full_ref]).get(message.full_ref)
            if text is not None:
                return text
        return message.content

    def load_window(self, thread_id: str) -> list[Message]:
        """What the model saw last on this thread: the latest window snapshot plus every
        message appended after it, as the run held them (an offloaded original stays a
        `full_ref`, not read back)."""
        snap = self._sql.query(
            "SELECT at_seq, message_ids FROM windows WHERE thread_id = ? "
            "ORDER BY at_seq DESC, created_at DESC LIMIT 1",
            [thread_id],
        )
        if not snap:
            return self._stored(thread_id)
        at_seq, ids = snap[0]["at_seq"], json.loads(snap[0]["message_ids"])
        by_id = {
            r["message_id"]: row_to_message(r)
            for r in self._sql.query(
                "SELECT * FROM messages WHERE thread_id = ? AND list_contains(?, message_id)",
                [thread_id, ids],
            )
        }
        later = self._sql.query(
            "SELECT * FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq",
            [thread_id, at_seq],
        )
        return [by_id[i] for i in ids if i in by_id] + [row_to_message(r) for r in later]

    def rows(
        self, thread_id: str | None = None, *, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Message rows (of a thread, a run, or all), in transcript order."""
        filters = {"thread_id": thread_id, "run_id": run_id}
        used = {k: v for k, v in filters.items() if v is not None}
        where = " AND ".join(f"{k} = ?" for k in used)
        return self._sql.query(
            "SELECT * FROM messages " + (f"WHERE {where} " if where else "") + "ORDER BY seq",
            list(used.values()),
        )

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's messages as rows, in order, without the synthetic ones compaction
        added (summaries, placeholders): `text` is the whole content, before any offloading
        (what the view `message_texts` gives, an original read chunk by chunk); `tool_calls`
        the stored JSON."""
        if not self._names_full_refs:
            return self._sql.query(  # a store from before schema v5, read without migrating it
                "SELECT run_id, seq, message_id, role, coalesce(full_content, content) AS text, "
                "tool_calls, tool_call_id, name FROM messages WHERE thread_id = ? "
                "AND kind = 'message' ORDER BY seq",
                [thread_id],
            )
        rows = self._sql.query(
            "SELECT run_id, seq, message_id, role, coalesce(full_content, content) AS text, "
            "full_content IS NULL AND full_ref IS NOT NULL AS offloaded, full_ref, "
            "tool_calls, tool_call_id, name FROM messages WHERE thread_id = ? "
            "AND kind = 'message' ORDER BY seq",
            [thread_id],
        )
        texts = self.full_texts([r["full_ref"] for r in rows if r["offloaded"]])
        for row in rows:
            ref, offloaded = row.pop("full_ref"), row.pop("offloaded")
            if offloaded and ref in texts:
                row["text"] = texts[ref]
        return rows

    def committed_steps(self, run_id: str) -> tuple[int, int]:
        """(the last step, the number of messages) the store holds of a run."""
        (row,) = self._sql.query(
            "SELECT coalesce(max(step), 0) AS steps, count(*) AS n FROM messages WHERE run_id = ?",
            [run_id],
        )
        return int(row["steps"]), int(row["n"])

    def last(self, run_id: str) -> Message | None:
        """The last message a run appended, if any."""
        rows = self._sql.query(
            "SELECT * FROM messages WHERE run_id = ? ORDER BY seq DESC LIMIT 1", [run_id]
        )
        return row_to_message(rows[0]) if rows else None

    def answered_tool_calls(self, run_id: str) -> set[str]:
        """The tool call ids whose results `run_id` has committed."""
        rows = self._sql.query(
            "SELECT tool_call_id FROM messages WHERE run_id = ? AND role = 'tool'", [run_id]
        )
        return {str(r["tool_call_id"]) for r in rows}

    def all_tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call any message in the store made (`id`, `name`, `arguments`)."""
        rows = self._sql.query("SELECT tool_calls FROM messages WHERE tool_calls IS NOT NULL")
        return [c for row in rows for c in json.loads(row["tool_calls"] or "[]")]

    def seq_range(
        self, thread_id: str, message_ids: Sequence[str]
    ) -> tuple[int | None, int | None]:
        """(lowest, highest) transcript position of the thread's messages among
        `message_ids`; (None, None) when none of them is stored."""
        rows = self._sql.query(
            "SELECT min(seq) AS lo, max(seq) AS hi FROM messages "
            "WHERE thread_id = ? AND list_contains(?, message_id)",
            [thread_id, list(message_ids)],
        )
        return (rows[0]["lo"], rows[0]["hi"]) if rows else (None, None)
