"""The virtual filesystem: path rules, namespaces, binary safety, listing, glob and grep."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.files.filesystem import FileSystem
from harness.files.paths import (
    DURABLE_PREFIXES,
    MAX_PATH,
    FileError,
    normalize,
    safe_segment,
    split_lines,
)
from harness.store import Store


@pytest.fixture
def store() -> Store:
    return Store(":memory:")


@pytest.fixture
def fs(store: Store) -> FileSystem:
    return FileSystem(store, "t1", run_id="run_1")


# -- paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("notes.md", "/notes.md"),
        ("/a//b/./c/", "/a/b/c"),
        ("\\docs\\plan.md", "/docs/plan.md"),
        ("  /a.txt \n", "/a.txt"),
        ("/", "/"),
        ("/a /b", "/a/b"),
        ("/a/.../b", "/a/.../b"),
        ("/résumé/ünï.md", "/résumé/ünï.md"),
    ],
)
def test_normalize_canonical_forms(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("../etc/passwd", "contains '..'"),
        ("/a/../b", "contains '..'"),
        ("/a/ .. /b", "contains '..'"),
        ("a\\..\\b", "contains '..'"),
        ("/a\x00b", "NUL byte"),
        ("/" + "a" * 2000, "2001 characters long; the limit is 1024"),
        ("/" + "a" * 300 + "/b", "segment over 255 characters"),
        ("/a\nb", "control character"),
        ("~/notes.md", "'~' is not supported"),
        ("", "non-empty string"),
        ("   ", "non-empty string"),
    ],
)
def test_normalize_refuses_with_readable_reason(raw: str, message: str) -> None:
    with pytest.raises(FileError, match=message):
        normalize(raw)


def test_error_messages_do_not_echo_absurd_paths() -> None:
    with pytest.raises(FileError) as info:
        normalize("/" + "x" * 250 + "/" + "y" * 400)
    assert len(str(info.value)) < 200


_PIECES = st.sampled_from(["..", ".", "", " ", "a", "b c", "\x00", "\\", "~", "é", "\t", " .. "])
_PATHS = st.one_of(
    st.text(max_size=60),
    st.lists(_PIECES, max_size=8).map("/".join),
    st.lists(_PIECES, max_size=8).map("".join),
)


@given(_PATHS)
def test_normalize_is_safe_and_idempotent(raw: str) -> None:
    try:
        norm = normalize(raw)
    except FileError:
        return
    assert norm.startswith("/")
    assert "\x00" not in norm
    assert ".." not in norm.split("/")
    assert "//" not in norm and (norm == "/" or not norm.endswith("/"))
    assert len(norm) <= MAX_PATH
    assert normalize(norm) == norm


def test_safe_segment_makes_long_odd_ids_path_safe_and_distinct() -> None:
    a = safe_segment("call/" + "x" * 500 + ":1")
    b = safe_segment("call/" + "x" * 500 + ":2")
    assert a != b
    assert len(a) <= 120 and "/" not in a
    assert normalize(f"/large_tool_results/{a}") == f"/large_tool_results/{a}"
    assert safe_segment("toolu_01ABC") == "toolu_01ABC"


# -- namespaces -----------------------------------------------------------------------------


def test_durable_prefixes_are_shared_and_other_paths_per_thread(store: Store) -> None:
    one, two = FileSystem(store, "t1", grants=DURABLE_PREFIXES), FileSystem(store, "t2")
    one.write("/memories/AGENTS.md", "prefer tables")
    one.write("/skills/report/SKILL.md", "---\nname: report\n---")
    one.write("/notes.md", "thread one")
    two.write("/notes.md", "thread two")

    assert two.read_text("/memories/AGENTS.md") == "prefer tables"
    assert two.exists("/skills/report/SKILL.md")
    assert one.read_text("/notes.md") == "thread one"
    assert two.read_text("/notes.md") == "thread two"
    assert [e.path for e in FileSystem(store, "t3").ls("/")] == ["/memories", "/skills"]
    # A look-alike prefix is not durable.
    one.write("/memoriesX/a.md", "private")
    assert not two.exists("/memoriesX/a.md")


def test_durable_files_survive_reopening_the_store(tmp_path) -> None:
    path = tmp_path / "ctx.duckdb"
    with Store(path) as store:
        FileSystem(store, "t1", grants=["/memories/"]).write("/memories/AGENTS.md", "remember me")
    with Store(path) as store:
        assert FileSystem(store, "t9").read_text("/memories/AGENTS.md") == "remember me"


# -- content ------------------------------------------------------------------------------


def test_binary_content_is_stored_byte_exact(fs: FileSystem, store: Store) -> None:
    data = b"\x89PNG\r\n\x1a\n\x00\xff\xfe"
    fs.write("/img.png", data)
    assert fs.read_bytes("/img.png") == data
    assert store.query("SELECT is_text, size FROM files WHERE path = '/img.png'") == [
        {"is_text": False, "size": len(data)}
    ]
    with pytest.raises(FileError, match="binary"):
        fs.read_text("/img.png")


def test_lone_surrogates_from_a_model_are_replaced_not_fatal(fs: FileSystem) -> None:
    fs.write("/odd.txt", "a\ud800b")
    assert fs.read_text("/odd.txt") == "a\ufffdb"


def test_a_file_and_a_directory_cannot_share_a_path(fs: FileSystem) -> None:
    fs.write("/a", "file")
    with pytest.raises(FileError, match="/a is a file, not a directory"):
        fs.write("/a/b.txt", "x")
    fs.write("/d/x.txt", "x")
    with pytest.raises(FileError, match="/d is a directory"):
        fs.write("/d", "x")
    with pytest.raises(FileError, match="root directory"):
        fs.write("/", "x")
    with pytest.raises(FileError, match="/d is a directory, not a file"):
        fs.read_bytes("/d")
    with pytest.raises(FileError, match="/d is a directory"):
        fs.delete("/d")
    with pytest.raises(FileNotFoundError, match="file not found: /nope"):
        fs.delete("/nope")


def test_edit_counts_and_refuses_ambiguity(fs: FileSystem) -> None:
    fs.write("/a.txt", "x = 1\nx = 1\ny = 2\n")
    with pytest.raises(FileError, match="occurs 2 times"):
        fs.edit("/a.txt", "x = 1", "x = 3")
    assert fs.edit("/a.txt", "y = 2", "y = 4") == 1
    assert fs.edit("/a.txt", "x = 1", "x = 3", replace_all=True) == 2
    assert fs.read_text("/a.txt") == "x = 3\nx = 3\ny = 4\n"


def test_split_lines_matches_how_read_file_numbers_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\r\nb") == ["a", "b"]
    assert split_lines("\n") == [""]


# -- listing, glob, grep --------------------------------------------------------------------


@pytest.fixture
def tree(fs: FileSystem) -> FileSystem:
    writer = FileSystem(fs.store, fs.thread_id, grants=["/memories/"])  # memory, as the user
    for path, text in {
        "/README.md": "# ctxlab\nsee docs\n",
        "/docs/guide.md": "a.b literal\nabc regex\n",
        "/docs/api/tools.md": "grep me\n",
        "/src/app.py": "print('a.b')\n",
        "/src/lib/util.py": "def f():\n    return 'abc'\n",
        "/memories/AGENTS.md": "be brief\n",
    }.items():
        writer.write(path, text)
    fs.write("/src/blob.bin", b"a.b\xff\xfe")
    return fs


def test_ls_lists_direct_children_with_implied_directories(tree: FileSystem) -> None:
    assert [(e.path, e.is_dir) for e in tree.ls("/")] == [
        ("/README.md", False),
        ("/docs", True),
        ("/memories", True),
        ("/src", True),
    ]
    assert [e.path for e in tree.ls("/docs/")] == ["/docs/api", "/docs/guide.md"]
    assert tree.ls("/empty") == []
    with pytest.raises(FileError, match="is a file"):
        tree.ls("/README.md")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (
            "**/*.md",
            "/",
            ["/README.md", "/docs/api/tools.md", "/docs/guide.md", "/memories/AGENTS.md"],
        ),
        ("*.md", "/", ["/README.md"]),
        ("*.md", "/docs", ["/docs/guide.md"]),
        ("/src/**", "/", ["/src/app.py", "/src/blob.bin", "/src/lib/util.py"]),
        ("**/*.{py,bin}", "/src", ["/src/app.py", "/src/blob.bin", "/src/lib/util.py"]),
        ("/src/[a-b]*", "/", ["/src/app.py", "/src/blob.bin"]),
        ("/src/[!a]*.py", "/", []),
        ("docs/?uide.md", "/", ["/docs/guide.md"]),
    ],
)
def test_glob(tree: FileSystem, pattern: str, path: str, expected: list[str]) -> None:
    assert [f.path for f in tree.glob(pattern, path)] == expected


def test_grep_is_literal_by_default_and_skips_binary(tree: FileSystem) -> None:
    hits = [(m.path, m.line_no, m.line) for m in tree.grep("a.b")]
    assert hits == [("/docs/guide.md", 1, "a.b literal"), ("/src/app.py", 1, "print('a.b')")]


def test_grep_regex_glob_and_single_file(tree: FileSystem) -> None:
    assert [(m.path, m.line_no) for m in tree.grep(r"a.c", regex=True)] == [
        ("/docs/guide.md", 2),
        ("/src/lib/util.py", 2),
    ]
    assert [m.path for m in tree.grep("a", glob="*.py")] == ["/src/app.py", "/src/lib/util.py"]
    assert [m.path for m in tree.grep("a", glob="lib/*.py", path="/src")] == ["/src/lib/util.py"]
    assert [m.line for m in tree.grep("brief", path="/memories/AGENTS.md")] == ["be brief"]


def test_grep_rejects_bad_patterns_before_searching(tree: FileSystem) -> None:
    with pytest.raises(FileError, match="invalid regex '\\(unclosed'"):
        tree.grep("(unclosed", regex=True)
    with pytest.raises(FileError, match="must not be empty"):
        tree.grep("")


# -- the write policy for durable paths ---------------------------------------------------


SKILL = "/skills/report/SKILL.md"


def test_without_a_grant_skills_cannot_be_created_changed_or_deleted(store: Store) -> None:
    FileSystem(store, "sync", grants=["/skills/"]).write(SKILL, "---\nname: report\n---\n")
    model = FileSystem(store, "t1")
    for attempt in (
        lambda: model.write("/skills/evil/SKILL.md", "---\nname: evil\n---\n"),
        lambda: model.write(SKILL, "overwritten"),
        lambda: model.edit(SKILL, "report", "evil"),
        lambda: model.append(SKILL, "more"),
        lambda: model.delete(SKILL),
        lambda: model.write_many({"/skills/x/a.md": b"x"}),
    ):
        with pytest.raises(FileError, match="/skills/ is read-only: skills come from skill"):
            attempt()
    assert model.read_text(SKILL) == "---\nname: report\n---\n"
    assert model.list_files("/skills") == [SKILL]


def test_without_a_grant_memory_cannot_be_changed(store: Store) -> None:
    with pytest.raises(FileError, match="/memories/ is long-term memory, changed only with"):
        FileSystem(store, "t1").write("/memories/AGENTS.md", "x")
    assert not FileSystem(store, "t1").exists("/memories/AGENTS.md")


@pytest.mark.parametrize("path", ["/skills", "/memories", " /memories/ ", "\\skills"])
def test_no_file_may_sit_where_durable_files_live(store: Store, path: str) -> None:
    everything = FileSystem(store, "t1", grants=DURABLE_PREFIXES)
    with pytest.raises(FileError, match="no file may sit there"):
        everything.write(path, "blocks every durable path below it")
    with pytest.raises(FileError, match="no file may sit there"):
        everything.write_many({path: b"x"})
    everything.write("/memories/AGENTS.md", "still writable")
    everything.write("/skills/report/SKILL.md", "still writable")


def test_a_grant_hook_runs_in_the_change_transaction_and_can_cancel_it(store: Store) -> None:
    seen: list[tuple[str, bytes | None, bytes | None]] = []

    def hook(uow, path: str, old: bytes | None, new: bytes | None) -> None:
        seen.append((path, old, new))
        uow.sql.execute("INSERT INTO events (run_id, step, middleware, hook, action, created_at) "
                    "VALUES ('r', 0, 'test', 'hook', ?, now())", [path])  # fmt: skip
        if new == b"refused":
            raise FileError("refused by the hook")

    files = FileSystem(store, "t1")
    files.grant("/memories/", hook)
    files.write("/memories/a.md", "one")
    files.write("/memories/a.md", "two")
    with pytest.raises(FileError, match="refused by the hook"):
        files.write("/memories/a.md", "refused")
    files.delete("/memories/a.md")
    assert seen == [
        ("/memories/a.md", None, b"one"),
        ("/memories/a.md", b"one", b"two"),
        ("/memories/a.md", b"two", b"refused"),
        ("/memories/a.md", b"two", None),
    ]
    # The cancelled change left neither the file nor the hook's own row behind.
    assert store.scalar("SELECT count(*) FROM events") == 3
    with pytest.raises(ValueError, match="not a durable prefix"):
        files.grant("/notes/")


def test_write_many_checks_every_path_then_writes_all_at_once(store: Store) -> None:
    files = FileSystem(store, "t1", grants=["/skills/"])
    files.write("/skills/a/old.md", "old")
    first = store.query("SELECT created_at FROM files WHERE path = '/skills/a/old.md'")
    with pytest.raises(FileError, match="cannot create /skills/a/old.md/x: /skills/a/old.md is"):
        files.write_many({"/skills/a/new.md": b"new", "/skills/a/old.md/x": b"x"})
    with pytest.raises(FileError, match="/skills/b is a (file|directory)"):
        files.write_many({"/skills/b/c.md": b"c", "/skills/b": b"b"})
    assert files.list_files("/skills") == ["/skills/a/old.md"]  # nothing of a refused batch

    files.write_many({"/skills/a/old.md": b"changed", "/skills/a/new.md": b"new"})
    assert files.read_text("/skills/a/old.md") == "changed"
    assert store.query("SELECT created_at FROM files WHERE path = '/skills/a/old.md'") == first
    files.write_many({"/skills/a/old.md/x": b"x"}, delete=["/skills/a/old.md"])
    assert files.list_files("/skills") == ["/skills/a/new.md", "/skills/a/old.md/x"]
    files.write_many({"/skills/a/new.md": b"again"})
    assert files.read_text("/skills/a/new.md") == "again"


def test_a_thread_file_never_blocks_a_durable_path(store: Store) -> None:
    # Before the policy a file at /memories landed in the shared namespace and blocked every
    # memory save of every thread; thread paths and durable paths can no longer overlap.
    with pytest.raises(FileError):
        FileSystem(store, "t1").write("/memories", "x")
    FileSystem(store, "t2", grants=["/memories/"]).write("/memories/AGENTS.md", "saved")
    assert FileSystem(store, "t3").read_text("/memories/AGENTS.md") == "saved"


def test_migration_moves_stray_shared_files_to_their_thread(tmp_path, monkeypatch) -> None:
    import harness.store

    path = tmp_path / "old.duckdb"
    with monkeypatch.context() as m:
        m.setattr(harness.store.schema, "MIGRATIONS", harness.store.MIGRATIONS[:1])
        with Store(path) as old:
            old.execute(
                "INSERT INTO runs (run_id, thread_id, status, started_at) "
                "VALUES ('r1', 'writer', 'completed', now())"
            )
            for stray, run in (("/skills", "r1"), ("/memories", None)):
                old.execute(
                    "INSERT INTO files (namespace, path, content, is_text, size, run_id, "
                    "created_at, modified_at) "
                    "VALUES ('shared', ?, 'x'::BLOB, true, 1, ?, now(), now())",
                    [stray, run],
                )
    with Store(path) as store:
        assert store.query("SELECT namespace, path FROM files ORDER BY path") == [
            {"namespace": "thread:unknown", "path": "/memories"},
            {"namespace": "thread:writer", "path": "/skills"},
        ]
        FileSystem(store, "any", grants=DURABLE_PREFIXES).write_many(
            {"/skills/a/SKILL.md": b"a", "/memories/AGENTS.md": b"m"}
        )
        FileSystem(store, "writer").delete("/skills")  # its writer can still clean it up


def test_paths_at_sees_what_is_below_and_above_a_stem(fs: FileSystem) -> None:
    fs.write("/a/b-2", "x")
    fs.write("/a/b/c", "y")
    fs.write("/z", "file")
    assert fs.paths_at("/a/b") == ({"/a/b-2", "/a/b/c"}, False)
    assert fs.paths_at("/z/q") == (set(), True)
    assert fs.paths_at("/none") == (set(), False)
