"""`ctxlab sql` is a sandbox: it reads the store and nothing else (no other file, no network, no
extension, no write of any kind), and it gives way to runs that need to write the file."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evals.scoring.storage import open_store
from flows.cli import main
from harness.errors import QueryError, StoreError
from harness.store import Store
from harness.store.access import sandboxed_query
from harness.store.writer_turn import waiting_writer

pytestmark = pytest.mark.usefixtures("cli_env")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "store.duckdb")
    open_store(path).close()  # every table, eval_runs included
    s = Store(path, hold=False)
    s.execute(
        "INSERT INTO messages (thread_id, seq, run_id, step, message_id, role, kind, content, "
        "created_at) VALUES ('t', 0, 'r', 0, 'm', 'user', 'text', 'hi', now())"
    )
    return path


def refused(store: str, sql: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Runs `sql` through `ctxlab sql`, which must refuse it as a usage error (exit 2) in one
    line, and returns that line."""
    assert main(["sql", "--db", store, sql]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1 and "Traceback" not in captured.err, captured.err
    assert captured.out == ""
    return captured.err


def messages_intact(store: str) -> None:
    assert Store(store, hold=False).query("SELECT content FROM messages") == [{"content": "hi"}]


# -- the attacks of issue 22 --------------------------------------------------------------------


def test_copy_to_a_file_is_refused(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out.csv"
    assert "COPY" in refused(store, f"COPY (SELECT * FROM messages) TO '{target}'", capsys)
    assert not target.exists()


def test_export_database_is_refused(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "EXPORT" in refused(store, f"EXPORT DATABASE '{tmp_path / 'dump'}'", capsys)
    assert not (tmp_path / "dump").exists()


@pytest.mark.parametrize("reader", ["read_csv", "read_text", "read_blob", "glob"])
def test_other_files_cannot_be_read(
    reader: str, store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("name,password\nroot,hunter2\n")
    err = refused(store, f"SELECT * FROM {reader}('{secret}')", capsys)
    assert "hunter2" not in err and "disabled" in err
    assert "hunter2" not in refused(store, f"SELECT * FROM '{secret}'", capsys)


@pytest.mark.parametrize("sql", ["INSTALL httpfs", "LOAD httpfs", "FORCE INSTALL httpfs"])
def test_extensions_are_neither_installed_nor_loaded(
    sql: str, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "refused" in refused(store, sql, capsys)


def test_attach_is_refused_even_read_write_on_a_hard_link_to_the_store(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "link.duckdb"
    os.link(store, link)
    other = tmp_path / "other.duckdb"
    for sql in [
        f"ATTACH '{other}' AS o (READ_WRITE)",
        f"ATTACH '{link}' AS l (READ_WRITE); DROP TABLE l.messages",
        f"ATTACH '{store}' AS s",
    ]:
        assert "ATTACH" in refused(store, sql, capsys)
    assert not other.exists()
    messages_intact(store)


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE messages",
        "SELECT 1; DROP TABLE messages",  # a read first does not let a write through
        "DELETE FROM messages",
        "UPDATE messages SET content = 'x'",
        "INSERT INTO messages SELECT * FROM messages",
        "CREATE TABLE t (a INTEGER)",
        "CREATE TEMP TABLE t AS SELECT * FROM messages",
        "CREATE MACRO f(x) AS x",
        "ALTER TABLE messages RENAME TO m",
        "DETACH store",
        "SET enable_external_access = true",
        "RESET lock_configuration",
        "SET memory_limit = '100GB'",
        "BEGIN TRANSACTION",
        "VACUUM",
        "PREPARE p AS SELECT 1",
    ],
)
def test_writes_of_every_kind_are_refused(
    sql: str, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "refused" in refused(store, sql, capsys)
    messages_intact(store)


def test_the_connection_itself_is_locked_down(store: str, tmp_path: Path) -> None:
    """What the statement check lets through (reads) still cannot reach other files or change
    the sandbox: a second line of defence."""
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    with pytest.raises(QueryError, match="disabled by configuration"):
        sandboxed_query(store, f"SELECT content FROM read_text('{secret}')")
    with pytest.raises(QueryError, match="locked"):
        sandboxed_query(store, "PRAGMA enable_profiling")
    with pytest.raises(QueryError, match="refused"):  # a PRAGMA with `=` is a SET
        sandboxed_query(store, f"PRAGMA profiling_output = '{tmp_path / 'p'}'")
    assert not (tmp_path / "p").exists()
    assert sandboxed_query(store, "SELECT current_setting('enable_external_access') AS on")[1] == [
        (False,)
    ]


def test_an_empty_query_is_a_usage_error(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no SQL" in refused(store, "", capsys)
    assert "no SQL" in refused(store, " ; ", capsys)


# -- what the docs query --------------------------------------------------------------------------


def readme_queries() -> list[str]:
    """Every `ctxlab sql` query in README.md, docs/*.md and evals/README.md (continued lines
    joined)."""
    queries = []
    docs = sorted((ROOT / "docs").glob("*.md"))
    for readme in (ROOT / "README.md", *docs, ROOT / "evals" / "README.md"):
        text = readme.read_text().replace("\\\n", " ")
        for line in re.findall(r"^.*ctxlab sql .*$", text, flags=re.M):
            if line.lstrip().startswith(("uv run", "ctxlab")):
                queries.append(shlex.split(line, comments=True)[-1])
    return queries


def test_every_readme_query_runs(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    queries = readme_queries()
    assert len(queries) >= 3, queries
    for sql in queries:
        assert main(["sql", "--db", store, "--json", sql]) == 0, sql
        assert isinstance(json.loads(capsys.readouterr().out), list)
    for sql in ["SHOW TABLES", "DESCRIBE messages", "SUMMARIZE messages", "EXPLAIN SELECT 1",
                "PRAGMA table_info('runs')", "WITH a AS (SELECT 1 AS n) FROM a",
                "SELECT json_extract('{\"a\": 1}', '$.a') AS a"]:  # fmt: skip
        assert main(["sql", "--db", store, "--json", sql]) == 0, sql
        capsys.readouterr()


# -- readers give way to writers -----------------------------------------------------------------

WRITER = """
import sys
from harness.store import Store
s = Store(sys.argv[1], hold=False)
for i in range(int(sys.argv[2])):
    with s.transaction() as con:
        con.execute("INSERT INTO t SELECT ?, range FROM range(5)", [i])
print("done", flush=True)
"""


def start_writer(path: str, steps: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WRITER, path, str(steps)],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip


def test_a_long_query_stops_for_a_waiting_writer(tmp_path: Path) -> None:
    path = str(tmp_path / "w.duckdb")
    Store(path, hold=False).execute("CREATE TABLE t (step INTEGER, n BIGINT)")
    errors: list[BaseException] = []
    started = threading.Event()

    def read() -> None:
        started.set()
        try:  # runs for minutes unless interrupted
            sandboxed_query(path, "SELECT count(*) FROM range(1000000000000)", wait=60)
        except StoreError as exc:
            errors.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started.wait()
    while not errors and reader.is_alive() and not _holds_file(path):
        pass
    writer = start_writer(path, 1)
    try:
        out, _ = writer.communicate(timeout=120)
    finally:
        writer.kill()
    reader.join(timeout=120)
    assert out.strip() == "done" and writer.returncode == 0
    assert len(errors) == 1 and f"to let pid {writer.pid} write" in str(errors[0])
    assert waiting_writer(path) is None  # the writer released its turn
    assert Store(path, hold=False).scalar("SELECT count(*) FROM t") == 5


def _holds_file(path: str) -> bool:
    """Whether the reader has the file open: a write connection from another process fails
    (one from this process would race the reader's own connect)."""
    probe = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", probe, path], capture_output=True).returncode != 0


def test_readers_in_a_loop_never_starve_two_writers(tmp_path: Path) -> None:
    """Before the writer's turn, a reader loop always holding the file made writers give up
    after 30 s of retries (issue 22: two `ctxlab run` writers timed out under a sql loop)."""
    path = str(tmp_path / "w.duckdb")
    Store(path, hold=False).execute("CREATE TABLE t (step INTEGER, n BIGINT)")
    writers = [start_writer(path, 20), start_writer(path, 20)]
    stop = threading.Event()
    busy: list[str] = []

    def read_in_a_loop() -> None:
        while not stop.is_set():
            try:
                sandboxed_query(path, "SELECT count(*) FROM t", wait=5)
            except StoreError as exc:
                busy.append(str(exc))

    readers = [threading.Thread(target=read_in_a_loop, daemon=True) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        outs = [w.communicate(timeout=240)[0] for w in writers]
    finally:
        stop.set()
        for w in writers:
            w.kill()
    for reader in readers:
        reader.join(timeout=60)
    assert [o.strip() for o in outs] == ["done", "done"]
    assert all(w.returncode == 0 for w in writers)
    assert all("busy" in message for message in busy)  # a reader that gave up said why
    assert Store(path, hold=False).scalar("SELECT count(*) FROM t") == 200


def test_a_reader_names_the_writer_holding_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "w.duckdb")
    Store(path, hold=False).execute("CREATE TABLE t (step INTEGER, n BIGINT)")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
         "print('holding', flush=True); sys.stdin.read()", path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(StoreError, match=f"busy being written by pid {holder.pid}"):
            sandboxed_query(path, "SELECT 1", wait=0.2)
    finally:
        holder.kill()
        holder.wait()
