"""The DuckDB store: every run, message, model call, file, event, summary and memory version.

One `Store` per process. The transcript is append-only: compaction never rewrites `messages`,
it adds synthetic messages (summaries, placeholders) and a `windows` row naming which messages
the model sees from then on. Each agent step is written as one batch in one transaction.

`hold=True` (default) keeps one connection open: DuckDB opens cost ~20 ms, far too much per
step. `hold=False` opens the file for each transaction and closes it, retrying with backoff on
a lock conflict, so other processes (a second run, the duckdb CLI, polars) can use the file
between steps.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import StoreError
from harness.messages import Message, ToolCall, Usage

if TYPE_CHECKING:
    import duckdb
    import polars as pl

MIGRATIONS: list[str] = [
    # 1: the core tables
    """
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, thread_id VARCHAR NOT NULL, parent_run_id VARCHAR,
        parent_step INTEGER, agent VARCHAR, model VARCHAR, strategy VARCHAR,
        status VARCHAR NOT NULL, started_at TIMESTAMP NOT NULL, ended_at TIMESTAMP,
        steps INTEGER DEFAULT 0, input_tokens BIGINT DEFAULT 0, output_tokens BIGINT DEFAULT 0,
        cached_tokens BIGINT DEFAULT 0, cache_write_tokens BIGINT DEFAULT 0,
        cost_usd DOUBLE DEFAULT 0, error VARCHAR, config JSON
    );
    CREATE TABLE messages (
        thread_id VARCHAR NOT NULL, seq BIGINT NOT NULL, run_id VARCHAR NOT NULL,
        step INTEGER NOT NULL, message_id VARCHAR NOT NULL, role VARCHAR NOT NULL,
        kind VARCHAR NOT NULL, content VARCHAR NOT NULL, full_content VARCHAR,
        tool_calls JSON, tool_call_id VARCHAR, name VARCHAR, is_error BOOLEAN,
        tokens INTEGER, meta JSON, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE windows (
        thread_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, step INTEGER NOT NULL,
        at_seq BIGINT NOT NULL, message_ids JSON NOT NULL, reason VARCHAR,
        created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE model_calls (
        run_id VARCHAR NOT NULL, step INTEGER NOT NULL, model VARCHAR, input_tokens BIGINT,
        output_tokens BIGINT, cached_tokens BIGINT, cache_write_tokens BIGINT,
        context_tokens BIGINT, latency_ms DOUBLE, cost_usd DOUBLE, stop_reason VARCHAR,
        encoding VARCHAR, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE files (
        namespace VARCHAR NOT NULL, path VARCHAR NOT NULL, content BLOB NOT NULL,
        is_text BOOLEAN NOT NULL, size BIGINT NOT NULL, run_id VARCHAR,
        created_at TIMESTAMP NOT NULL, modified_at TIMESTAMP NOT NULL,
        PRIMARY KEY (namespace, path)
    );
    CREATE TABLE events (
        run_id VARCHAR NOT NULL, step INTEGER NOT NULL, middleware VARCHAR NOT NULL,
        hook VARCHAR NOT NULL, action VARCHAR NOT NULL, tokens_before BIGINT,
        tokens_after BIGINT, detail JSON, ms DOUBLE, task_run_id VARCHAR,
        created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE summaries (
        run_id VARCHAR NOT NULL, thread_id VARCHAR NOT NULL, cycle INTEGER NOT NULL,
        step INTEGER NOT NULL, first_seq BIGINT, last_seq BIGINT, message_ids JSON,
        tokens_before BIGINT, tokens_after BIGINT, summary_tokens BIGINT, model VARCHAR,
        history_path VARCHAR, summary VARCHAR, created_at TIMESTAMP NOT NULL
    );
    CREATE TABLE memory (
        path VARCHAR NOT NULL, version INTEGER NOT NULL, content VARCHAR NOT NULL,
        run_id VARCHAR, author VARCHAR, created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (path, version)
    );
    """,
    # 2: durable paths. A memory deletion is a version too (`deleted`, empty content). Files a
    # model once wrote at /skills or /memories sat in the shared namespace and blocked every
    # durable path below them: they move to the namespace of the thread that wrote them.
    """
    ALTER TABLE memory ADD COLUMN deleted BOOLEAN DEFAULT false;
    UPDATE files SET namespace = coalesce(
        (SELECT 'thread:' || r.thread_id FROM runs r WHERE r.run_id = files.run_id),
        'thread:unknown')
    WHERE namespace = 'shared'
        AND NOT (starts_with(path, '/memories/') OR starts_with(path, '/skills/'));
    """,
    # 3: large files in chunks with a line index, so a page read fetches only its chunks
    """
    CREATE TABLE file_chunks (
        blob_id VARCHAR NOT NULL, chunk INTEGER NOT NULL, newlines_before BIGINT NOT NULL,
        newlines INTEGER NOT NULL, content BLOB NOT NULL, PRIMARY KEY (blob_id, chunk)
    );
    ALTER TABLE files ADD COLUMN blob_id VARCHAR;
    ALTER TABLE files ADD COLUMN chars BIGINT;
    ALTER TABLE files ADD COLUMN lines BIGINT;
    """,
    # 4: why an event has no task run id (it was written outside any step task)
    """
    ALTER TABLE events ADD COLUMN task_reason VARCHAR;
    """,
]

_TABLE_COLUMNS = {
    "messages": 16,
    "model_calls": 13,
    "events": 12,
    "windows": 7,
    "summaries": 14,
}
_PLACEHOLDERS = {table: "(" + ",".join("?" * n) + ")" for table, n in _TABLE_COLUMNS.items()}


# For a file store DuckDB's default is 80% of the machine's memory, kept as cache once touched;
# the agent's writes are small and its reads by key, so this serves them. Much less is unsafe:
# DuckDB 2.0 fails fatally when a checkpoint cannot pin its blocks (seen at 32-64 MB).
FILE_MEMORY_LIMIT = "256MB"


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def default_path() -> str:
    return os.environ.get("CTXLAB_DB", "ctxlab.duckdb")


# -- text DuckDB can store --------------------------------------------------------------------
# A lone surrogate (from `"\ud800"` in JSON, or bytes decoded with errors="surrogateescape") has
# no UTF-8 form: DuckDB refuses the whole row, and with it the step. Text is made storable at the
# write boundary instead, each lone surrogate becoming U+FFFD, and the caller is told how many.

_SURROGATE = re.compile("[\ud800-\udfff]")
# A surrogate written as a JSON escape: DuckDB's JSON type refuses lone ones too.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

_COLUMN_NAMES = {
    "messages": ("thread_id", "seq", "run_id", "step", "message_id", "role", "kind", "content",
                 "full_content", "tool_calls", "tool_call_id", "name", "is_error", "tokens",
                 "meta", "created_at"),
    "model_calls": ("run_id", "step", "model", "input_tokens", "output_tokens",
                    "cached_tokens", "cache_write_tokens", "context_tokens", "latency_ms",
                    "cost_usd", "stop_reason", "encoding", "created_at"),
    "events": ("run_id", "step", "middleware", "hook", "action", "tokens_before",
               "tokens_after", "detail", "ms", "task_run_id", "created_at"),
    "windows": ("thread_id", "run_id", "step", "at_seq", "message_ids", "reason", "created_at"),
    "summaries": ("run_id", "thread_id", "cycle", "step", "first_seq", "last_seq",
                  "message_ids", "tokens_before", "tokens_after", "summary_tokens", "model",
                  "history_path", "summary", "created_at"),
}  # fmt: skip
_JSON_COLUMNS = frozenset({"tool_calls", "meta", "detail", "message_ids"})


def storable_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    if text.isascii():
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def storable_value(value: Any) -> tuple[Any, int]:
    """`value` (text, or JSON-like data: dicts, lists, tuples) with every string in it, keys
    included, made storable; and how many surrogates were replaced."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            key, n = storable_value(key)
            out[key], m = storable_value(item)
            total += n + m
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        pairs = [storable_value(item) for item in value]
        total = sum(n for _, n in pairs)
        if not total:
            return value, 0
        items = [item for item, _ in pairs]
        return (tuple(items) if isinstance(value, tuple) else items), total
    return value, 0


def storable_json(text: str) -> tuple[str, int]:
    """JSON text made storable: raw lone surrogates, and lone ones written as escapes."""
    text, n = storable_text(text)
    if not _ESCAPED_SURROGATE.search(text):
        return text, n
    try:
        value = json.loads(text)
    except ValueError:
        return text, n  # not JSON after all: DuckDB will say what is wrong with it
    value, m = storable_value(value)
    return (json.dumps(value, ensure_ascii=False), n + m) if m else (text, n)


def storable_row(table: str, row: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, int]]:
    """A step-table row made storable, and the surrogates replaced per column name."""
    names = _COLUMN_NAMES.get(table, ())
    fixed: list[Any] | None = None
    repairs: dict[str, int] = {}
    for i, value in enumerate(row):
        if not isinstance(value, str) or (value.isascii() and "\\u" not in value):
            continue
        name = names[i] if i < len(names) else str(i)
        clean, n = storable_json(value) if name in _JSON_COLUMNS else storable_text(value)
        if n:
            fixed = fixed if fixed is not None else list(row)
            fixed[i] = clean
            repairs[name] = n
    return (tuple(fixed) if fixed is not None else row), repairs


def storable_message(message: Message) -> tuple[Message, dict[str, int]]:
    """`message` with every text in it made storable (the same id, so it stays the same
    message), and the surrogates replaced per field."""
    repairs: dict[str, int] = {}
    changes: dict[str, Any] = {}
    for name in ("content", "full_content", "name", "tool_call_id", "meta"):
        value, n = storable_value(getattr(message, name))
        if n:
            changes[name], repairs[name] = value, n
    calls = []
    for c in message.tool_calls:
        (call_id, name, arguments, raw), n = storable_value(
            (c.id, c.name, c.arguments, c.raw_arguments)
        )
        calls.append(ToolCall(call_id, name, arguments, raw) if n else c)
        if n:
            repairs["tool_calls"] = repairs.get("tool_calls", 0) + n
    if "tool_calls" in repairs:
        changes["tool_calls"] = tuple(calls)
    return (replace(message, **changes), repairs) if changes else (message, {})


@dataclass
class StepBatch:
    """Rows one step produced, written together in one transaction. Rows are made storable as
    they are added; `repairs` says where text had to be changed (see `storable_row`)."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    repairs: list[dict[str, Any]] = field(default_factory=list)

    def add(self, table: str, row: tuple[Any, ...]) -> None:
        row, repaired = storable_row(table, row)
        if repaired:
            where: dict[str, Any] = {"table": table, "replaced": repaired}
            names = _COLUMN_NAMES.get(table, ())
            for key in ("message_id", "role", "tool_call_id", "step"):
                if key in names:
                    where[key] = row[names.index(key)]
            self.repairs.append(where)
        self.rows.setdefault(table, []).append(row)

    def __bool__(self) -> bool:
        return any(self.rows.values())


def message_row(
    msg: Message, *, thread_id: str, seq: int, run_id: str, step: int, tokens: int | None
) -> tuple[Any, ...]:
    calls = (
        json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in msg.tool_calls])
        if msg.tool_calls
        else None
    )
    return (
        thread_id, seq, run_id, step, msg.id, msg.role, msg.kind, msg.content, msg.full_content,
        calls, msg.tool_call_id, msg.name, msg.is_error, tokens,
        json.dumps(msg.meta, default=str) if msg.meta else None, now(),
    )  # fmt: skip


def row_to_message(row: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in json.loads(row["tool_calls"] or "[]")
    )
    return Message(
        role=row["role"],
        content=row["content"],
        tool_calls=calls,
        tool_call_id=row["tool_call_id"],
        name=row["name"],
        is_error=bool(row["is_error"]),
        id=row["message_id"],
        kind=row["kind"],
        full_content=row["full_content"],
        meta=json.loads(row["meta"]) if row["meta"] else {},
    )


class _Atomic:
    """The open transaction of one `Store.atomic` block."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.con: duckdb.DuckDBPyConnection | None = None
        self.failed: BaseException | None = None

    def begin(self) -> duckdb.DuckDBPyConnection:
        if self.con is None:
            con = self.store._step_connection()
            con.execute("BEGIN")
            self.con = con
        return self.con

    def commit(self) -> None:
        if self.con is None:
            return
        if self.failed is not None:
            # DuckDB may have aborted the transaction; without savepoints nothing of the
            # block can be kept apart from the statement that failed.
            raise StoreError(
                f"a write failed inside an atomic step, so none of its writes were stored: "
                f"{type(self.failed).__name__}: {self.failed}"
            )
        self.con.execute("COMMIT")
        self.con.close()
        self.con = None

    def close(self) -> None:
        import duckdb

        if self.con is not None:
            try:
                self.con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a failed COMMIT has already ended the transaction
            finally:
                self.con.close()
                self.con = None


_ATOMIC: ContextVar[_Atomic | None] = ContextVar("ctxlab_store_atomic", default=None)


class Store:
    """A DuckDB file (or `":memory:"`) holding everything ctxlab records."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        hold: bool = True,
        memory_limit: str | None = None,
        threads: int = 1,
    ) -> None:
        """`memory_limit` caps DuckDB's buffers in this process: FILE_MEMORY_LIMIT for a file
        store by default; an in-memory store is its buffers, so by default it is not capped
        (a cap below its data would fail it, not spill it). `threads` is DuckDB's worker
        count: the store's work is small writes, where more threads only add wake-ups."""
        self.path = str(path) if path is not None else default_path()
        self.hold = hold or self.path == ":memory:"
        self.memory_limit = memory_limit or (None if self.path == ":memory:" else FILE_MEMORY_LIMIT)
        self.threads = threads
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.RLock()
        self._spill_dir: str | None = None
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self.transaction() as con:
            self._migrate(con)

    def __repr__(self) -> str:
        return f"Store({self.path!r}, hold={self.hold})"

    # -- connections -------------------------------------------------------------------

    def _open(self) -> duckdb.DuckDBPyConnection:
        import duckdb  # loads with the first store, not with `import harness`

        try:
            con = duckdb.connect(self.path)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise StoreError(f"cannot open store {self.path}: {exc}") from exc
            con = self._open_when_free()
        self._configure(con)
        return con

    def _open_when_free(self) -> duckdb.DuckDBPyConnection:
        """Another process holds the file: wait for it to finish its step, holding the
        writer's turn so that `ctxlab sql` readers give way meanwhile."""
        import duckdb

        from harness.store_access import writer_turn

        delay = 0.01
        deadline = time.monotonic() + 30
        with writer_turn(self.path):
            while True:
                try:
                    return duckdb.connect(self.path)
                except duckdb.IOException as exc:
                    if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                        raise StoreError(f"cannot open store {self.path}: {exc}") from exc
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 0.5)

    def _configure(self, con: duckdb.DuckDBPyConnection) -> None:
        # SET rather than connect(config=...): a second connection to the same file in this
        # process (the user's) would otherwise be refused for a differing configuration.
        import duckdb

        try:
            if self.memory_limit is not None:
                con.execute("SET memory_limit = ?", [self.memory_limit])
            con.execute("SET threads = ?", [self.threads])
        except duckdb.Error as exc:
            con.close()
            raise StoreError(
                f"bad store setting (memory_limit={self.memory_limit!r}, "
                f"threads={self.threads!r}): {exc}"
            ) from exc
        if self.path == ":memory:":
            # Blocks a large query spills would otherwise land in ./.tmp of whatever the
            # working folder is. DuckDB creates the folder only if it spills.
            if self._spill_dir is None:
                name = f"ctxlab-duckdb-{os.getpid()}-{uuid.uuid4().hex[:12]}"
                self._spill_dir = os.path.join(tempfile.gettempdir(), name)
            con.execute("SET temp_directory = ?", [self._spill_dir])
            # A checkpoint of an in-memory database writes nothing anywhere but rewrites its
            # row groups, briefly doubling them (+25-30 MB spikes at ~400 steps of 100 kB
            # files); without a disk to make durable there is nothing to gain from it.
            con.execute("SET checkpoint_threshold = '1TB'")

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for reads or writes, used under the store's lock: in hold mode the
        held connection, otherwise one opened for this use and closed after it. Inside an
        `atomic` block that has written, its own connection (it sees its own writes)."""
        scope = _ATOMIC.get()
        if scope is not None and scope.store is self and scope.con is not None:
            yield scope.con
            return
        with self._lock:
            if self.hold:
                if self._con is None:
                    self._con = self._open()
                yield self._con
            else:
                con = self._open()
                try:
                    yield con
                finally:
                    con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        scope = _ATOMIC.get()
        if scope is not None and scope.store is self:
            # Part of the enclosing atomic block: it commits or rolls back everything at once.
            try:
                yield scope.begin()
            except BaseException as exc:
                scope.failed = scope.failed or exc
                raise
            return
        with self.connection() as con:
            con.execute("BEGIN")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Everything written to this store inside the block, by this task and the threads
        it starts, commits together when the block ends, or not at all if it raises: a step
        and its journal record are never stored one without the other. A connection is
        opened at the first write, so a block that only reads (or waits on a model) holds
        none. Nested blocks join the outer one."""
        if _ATOMIC.get() is not None:
            yield
            return
        scope = _Atomic(self)
        token = _ATOMIC.set(scope)
        try:
            yield
            scope.commit()
        finally:
            _ATOMIC.reset(token)
            scope.close()

    def _step_connection(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own for an atomic block: with the store held, a second
        connection to the same database (its own transaction); otherwise a new one."""
        if not self.hold:
            return self._open()
        with self._lock:
            if self._con is None:
                self._con = self._open()
            return self._con.cursor()

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            if self._spill_dir is not None:
                shutil.rmtree(self._spill_dir, ignore_errors=True)
                self._spill_dir = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)"
        )
        row = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
        current = int(row[0]) if row else 0
        if current > len(MIGRATIONS):
            raise StoreError(
                f"store {self.path} has schema v{current}, newer than this ctxlab "
                f"(v{len(MIGRATIONS)}): upgrade ctxlab"
            )
        for version, sql in enumerate(MIGRATIONS[current:], start=current + 1):
            con.execute(sql)
            con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, now()])

    @property
    def schema_version(self) -> int:
        return int(self.scalar("SELECT max(version) FROM schema_version"))

    # -- generic access ----------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Run SQL, each statement committed on its own (DuckDB autocommits; an explicit
        BEGIN/COMMIT around one statement only added two round trips). Statements that must
        land together go through `transaction()`."""
        with self.connection() as con:
            con.execute(sql, params or [])

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        with self.connection() as con:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self.connection() as con:
            row = con.execute(sql, params or []).fetchone()
        return row[0] if row else None

    def frame(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """A polars DataFrame of a query, for analysis (polars loads on first use)."""
        import polars  # noqa: F401  (DuckDB's `.pl()` needs it importable)

        with self.connection() as con:
            frame: pl.DataFrame = con.sql(sql, params=list(params or [])).pl()
            return frame

    def write(self, batch: StepBatch) -> None:
        """Write a step's rows, all tables, in one transaction: one multi-row insert per
        table. (Measured with DuckDB 2.0 on a step's 1-5 rows a table, an Arrow scan or
        `executemany` costs more than this; each statement costs ~0.5 ms whatever its form,
        so the only saving left is statements: a one-table batch skips BEGIN/COMMIT.)"""
        statements = [
            (
                f"INSERT INTO {table} VALUES " + ",".join([_PLACEHOLDERS[table]] * len(rows)),
                [v for row in rows for v in row],
            )
            for table, rows in batch.rows.items()
            if rows
        ]
        if len(statements) <= 1:
            for sql, params in statements:
                self.execute(sql, params)
            return
        with self.transaction() as con:
            for sql, params in statements:
                con.execute(sql, params)

    # -- runs ----------------------------------------------------------------------------

    def start_run(
        self,
        *,
        run_id: str,
        thread_id: str,
        agent: str,
        model: str,
        strategy: str | None,
        parent_run_id: str | None = None,
        parent_step: int | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.execute(
            "INSERT INTO runs (run_id, thread_id, parent_run_id, parent_step, agent, model, "
            "strategy, status, started_at, config) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            [run_id, thread_id, parent_run_id, parent_step, agent, model, strategy, now(),
             storable_json(json.dumps(config or {}, default=str))[0]],
        )  # fmt: skip

    def subagent_runs(self, run_id: str) -> list[dict[str, Any]]:
        """The runs started directly by `run_id`'s tool calls (run_id, thread_id, status)."""
        return self.query(
            "SELECT run_id, thread_id, status FROM runs WHERE parent_run_id = ? "
            "ORDER BY started_at",
            [run_id],
        )

    def discard_runs(self, run_ids: Sequence[str]) -> list[str]:
        """Delete the records of these runs and of every run below them (messages, windows,
        model calls, events, summaries, the runs rows); the files and memory versions their
        tools wrote stay. For runs that are started again from the same recorded replies, so
        that nothing is counted twice. Returns every id deleted."""
        if not run_ids:
            return []
        with self.transaction() as con:
            rows = con.execute(
                "WITH RECURSIVE below(run_id) AS ("
                "  SELECT unnest(?::VARCHAR[])"
                "  UNION SELECT r.run_id FROM runs r JOIN below b ON r.parent_run_id = b.run_id) "
                "SELECT run_id FROM below",
                [list(run_ids)],
            ).fetchall()
            ids = [str(r[0]) for r in rows]
            for table in ("messages", "windows", "model_calls", "events", "summaries", "runs"):
                con.execute(f"DELETE FROM {table} WHERE list_contains(?, run_id)", [ids])
        return ids

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        steps: int,
        usage: Usage,
        error: str | None = None,
    ) -> None:
        self.execute(
            "UPDATE runs SET status = ?, ended_at = ?, steps = ?, input_tokens = ?, "
            "output_tokens = ?, cached_tokens = ?, cache_write_tokens = ?, cost_usd = ?, "
            "error = ? WHERE run_id = ?",
            [status, now(), steps, usage.input_tokens, usage.output_tokens, usage.cached_tokens,
             usage.cache_write_tokens, usage.cost_usd,
             storable_text(error)[0] if error is not None else None, run_id],
        )  # fmt: skip

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
        return rows[0] if rows else None

    # -- transcript ----------------------------------------------------------------------

    def next_seq(self, thread_id: str) -> int:
        """The transcript position the thread's next message takes."""
        last = self.scalar(
            "SELECT coalesce(max(seq), 0) FROM messages WHERE thread_id = ?", [thread_id]
        )
        return int(last) + 1

    def transcript(self, thread_id: str, run_id: str | None = None) -> list[Message]:
        """Every message ever appended to a thread (or one run of it), in order."""
        sql = "SELECT * FROM messages WHERE thread_id = ?"
        params: list[Any] = [thread_id]
        if run_id:
            sql += " AND run_id = ?"
            params.append(run_id)
        return [row_to_message(r) for r in self.query(sql + " ORDER BY seq", params)]

    def load_window(self, thread_id: str) -> list[Message]:
        """What the model saw last on this thread: the latest window snapshot plus every
        message appended after it."""
        snap = self.query(
            "SELECT at_seq, message_ids FROM windows WHERE thread_id = ? "
            "ORDER BY at_seq DESC, created_at DESC LIMIT 1",
            [thread_id],
        )
        if not snap:
            return self.transcript(thread_id)
        at_seq, ids = snap[0]["at_seq"], json.loads(snap[0]["message_ids"])
        by_id = {
            r["message_id"]: row_to_message(r)
            for r in self.query(
                "SELECT * FROM messages WHERE thread_id = ? AND list_contains(?, message_id)",
                [thread_id, ids],
            )
        }
        later = self.query(
            "SELECT * FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq",
            [thread_id, at_seq],
        )
        return [by_id[i] for i in ids if i in by_id] + [row_to_message(r) for r in later]


def read_only(path: str | os.PathLike[str], *, timeout: float = 30.0) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an existing store, for queries while runs write: a writer
    holds the file's lock only for one step's transaction, so a conflict is retried with
    backoff for up to `timeout` seconds. Never creates the file."""
    import duckdb

    if not Path(path).is_file():
        raise StoreError(f"no store at {path}")
    delay = 0.01
    deadline = time.monotonic() + timeout
    while True:
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise StoreError(f"cannot read store {path}: {exc}") from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)
        except duckdb.Error as exc:
            raise StoreError(f"cannot read store {path}: {exc}") from exc
