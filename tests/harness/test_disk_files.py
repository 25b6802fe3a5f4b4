"""Folders on disk mounted in the virtual filesystem: `/workspace/` on a folder, `/memories/` in
one, the rest in DuckDB; every change also in the store; nothing outside a folder reachable."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from harness import create_agent
from harness.files.disk import DiskFolder
from harness.files.mounts import mount_table
from harness.files.paths import FileError
from harness.models import ScriptedModel, call, reply
from harness.store import Store


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "plan.md").write_text("Ship v1 in March.\n")
    return folder


def _run(calls: list[Any], mounts: dict[str, Any], store: Store | None = None) -> list[str]:
    model = ScriptedModel([reply("", c) for c in calls] + ["done"])
    agent = create_agent(model, store=store or Store(":memory:"), mounts=mounts)
    result = agent.run_sync("work")
    return [m.content for m in result.messages if m.role == "tool"]


def test_an_agent_edits_a_file_in_its_workspace_and_the_store_records_it(
    workspace: Path,
) -> None:
    store = Store(":memory:")
    texts = _run(
        [
            call(
                "edit_file",
                file_path="/workspace/docs/plan.md",
                old_string="March",
                new_string="April",
            ),  # fmt: skip
            call("write_file", file_path="/workspace/report.md", content="# Report\n"),
            call("write_file", file_path="/notes.md", content="in the store only"),
            call("grep", pattern="April", path="/workspace"),
            call("ls", path="/workspace"),
        ],
        {"/workspace/": workspace},
        store,
    )
    assert (workspace / "docs" / "plan.md").read_text() == "Ship v1 in April.\n"
    assert (workspace / "report.md").read_text() == "# Report\n"
    assert not (workspace / "notes.md").exists()
    assert "/workspace/docs/plan.md" in texts[3]  # grep reads the folder
    assert "/workspace/report.md" in texts[4] and "/workspace/docs" in texts[4]
    rows = store.query("SELECT path FROM files ORDER BY path")
    assert [r["path"] for r in rows] == [
        "/notes.md", "/workspace/docs/plan.md", "/workspace/report.md",
    ]  # fmt: skip
    assert not [p for p in workspace.rglob("*.tmp")]  # atomic writes leave no temporary


def test_memories_on_disk_are_a_file_of_the_user_s_and_keep_every_version(
    workspace: Path,
) -> None:
    store = Store(":memory:")
    agent_dir = workspace / ".agent"
    agent_dir.mkdir()
    (agent_dir / "AGENTS.md").write_text("# Memory\n- Use bullets.\n")
    _run(
        [
            call(
                "edit_file",
                file_path="/memories/AGENTS.md",
                old_string="bullets",
                new_string="bullets, not paragraphs",
            )
        ],  # fmt: skip
        {"/memories/": agent_dir},
        store,
    )
    assert (agent_dir / "AGENTS.md").read_text() == "# Memory\n- Use bullets, not paragraphs.\n"
    versions = store.memory.versions("/memories/AGENTS.md")
    assert versions[-1]["content"] == "# Memory\n- Use bullets, not paragraphs.\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("do not read")
    return secret


@pytest.mark.parametrize(
    ("tool_call", "refusal"),
    [
        (call("read_file", file_path="/workspace/../outside/secret.txt"), "contains '..'"),
        (call("read_file", file_path="/workspace/out/secret.txt"), "leads outside"),
        (call("read_file", file_path="/workspace/secret-link"), "leads outside"),
        (call("write_file", file_path="/workspace/out/secret.txt", content="x"), "leads outside"),
        (
            call("edit_file", file_path="/workspace/secret-link", old_string="do", new_string="x"),
            "leads outside",
        ),  # fmt: skip
        (call("delete", file_path="/workspace/secret-link"), "leads outside"),
        (call("read_file", file_path="/workspace/pipe"), "not a regular file"),
        (call("write_file", file_path="/workspace/pipe", content="x"), "not a regular file"),
    ],
)
def test_every_escape_is_refused_naming_the_path(
    workspace: Path, outside: Path, tool_call: Any, refusal: str
) -> None:
    (workspace / "out").symlink_to(outside.parent, target_is_directory=True)
    (workspace / "secret-link").symlink_to(outside)
    os.mkfifo(workspace / "pipe")  # a read would block forever if it were opened
    (text,) = _run([tool_call], {"/workspace/": workspace})
    assert text.startswith("Error") and refusal in text
    assert outside.read_text() == "do not read"
    assert stat.S_ISFIFO(os.lstat(workspace / "pipe").st_mode)


def test_a_listing_leaves_out_what_is_outside_or_not_a_file(workspace: Path, outside: Path) -> None:
    (workspace / "out").symlink_to(outside.parent, target_is_directory=True)
    os.mkfifo(workspace / "pipe")
    assert [e.path for e in DiskFolder(workspace).listing()] == ["docs/plan.md"]


@pytest.mark.parametrize(
    ("rel", "refusal"),
    [
        ("/etc/passwd", "an absolute path"),
        ("C:/Windows", "an absolute path"),
        ("docs/../../x", "'..' may not leave"),
        ("docs/\x00x", "NUL"),
    ],
)
def test_the_folder_refuses_paths_that_leave_it(workspace: Path, rel: str, refusal: str) -> None:
    with pytest.raises(FileError, match=refusal):
        DiskFolder(workspace).locate(rel)


def test_a_device_file_is_refused(workspace: Path) -> None:
    try:
        os.mknod(workspace / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("no permission to make a device file here")
    folder = DiskFolder(workspace)
    for attempt in (lambda: folder.read_bytes("null"), lambda: folder.write_bytes("null", b"x")):
        with pytest.raises(FileError, match="not a regular file"):
            attempt()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        DiskFolder(workspace).write_bytes("docs/plan.md", b"half")
    assert (workspace / "docs" / "plan.md").read_text() == "Ship v1 in March.\n"
    assert [p.name for p in (workspace / "docs").iterdir()] == ["plan.md"]


@pytest.mark.parametrize("prefix", ["/", "/large_tool_results/", "/a/b/"])
def test_a_mount_where_the_harness_keeps_its_own_files_is_refused(
    workspace: Path, prefix: str
) -> None:
    with pytest.raises(FileError, match="cannot mount"):
        mount_table({prefix: workspace})


class DictBackend:
    """Another backend behind the same protocol: files in a dict."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def read_bytes(self, rel: str) -> bytes:
        if rel not in self.files:
            raise FileNotFoundError(rel)
        return self.files[rel]

    def read_or_none(self, rel: str) -> bytes | None:
        return self.files.get(rel)

    def exists(self, rel: str) -> bool:
        return rel in self.files

    def is_dir(self, rel: str) -> bool:
        return rel == ""

    def listing(self, rel: str = "") -> list[Any]:
        return []

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.files[rel] = data

    def delete(self, rel: str) -> None:
        del self.files[rel]


def test_any_backend_of_the_protocol_can_be_mounted() -> None:
    backend = DictBackend()
    texts = _run(
        [
            call("write_file", file_path="/scratch/a.md", content="hello"),
            call("read_file", file_path="/scratch/a.md"),
        ],  # fmt: skip
        {"/scratch/": backend},
    )
    assert backend.files == {"a.md": b"hello"}
    assert "hello" in texts[1]
