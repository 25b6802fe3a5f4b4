"""Folders on disk mounted at virtual prefixes: `/workspace/` on a repository, `/memories/` in
a folder the user owns, the rest of the files in the store.

A mounted path is read from its folder (the file a person edits is the file the agent reads)
and written to it atomically; every change is also written to the store as it would be
without the mount, in the same unit of work and before the disk write (a refused disk write
rolls it back), so DuckDB holds the content of every file the agent wrote and memory files
keep every version (the memory middleware's change hook sees the folder's old content).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from harness.files.disk import DiskEntry, DiskFolder
from harness.files.filesystem import FileSystem
from harness.files.paths import DURABLE_RULES, FileError, durable_prefix, normalize
from harness.files.storage import decode, delete_content, encode_text, store_content
from harness.files.stored_file import StoredFile
from harness.store import Store, now


class FileBackend(Protocol):
    """Where the files under a mounted prefix live; paths are relative to the prefix
    (`docs/plan.md`). `DiskFolder` is one; the store itself is the backend of every path not
    mounted. Escapes and special files are the backend's to refuse (`FileError`)."""

    def read_bytes(self, rel: str) -> bytes: ...
    def read_or_none(self, rel: str) -> bytes | None: ...
    def exists(self, rel: str) -> bool: ...
    def is_dir(self, rel: str) -> bool: ...
    def listing(self, rel: str = "") -> list[DiskEntry]: ...
    def write_bytes(self, rel: str, data: bytes) -> None: ...
    def delete(self, rel: str) -> None: ...


# Written by the harness itself through blobs and bulk writes, so they stay in the store.
_STORE_ONLY = ("/large_tool_results/", "/conversation_history/", "/skills/")


def mount_table(
    mounts: Mapping[str, str | os.PathLike[str] | FileBackend],
) -> dict[str, FileBackend]:
    """`{"/workspace/": "/path/to/repo"}` checked: each prefix one top-level folder (`/name/`),
    not one the harness keeps in the store, each folder an existing directory."""
    table: dict[str, FileBackend] = {}
    for prefix, folder in mounts.items():
        top = normalize(prefix)
        if top.count("/") != 1 or top == "/" or f"{top}/" in _STORE_ONLY:
            raise FileError(
                f"cannot mount {prefix!r}: give a top-level folder such as /workspace/ or "
                "/memories/, not / or one the harness keeps in the store "
                f"({', '.join(_STORE_ONLY)})"
            )
        if isinstance(folder, str | os.PathLike):
            table[f"{top}/"] = DiskFolder(os.path.expanduser(folder))
        else:
            table[f"{top}/"] = folder
    return table


class MountedFileSystem(FileSystem):
    """A `FileSystem` whose paths under a mounted prefix live in a folder on disk."""

    def __init__(
        self,
        store: Store,
        thread_id: str,
        run_id: str | None = None,
        *,
        mounts: Mapping[str, FileBackend],
        grants: Iterable[str] = (),
    ) -> None:
        super().__init__(store, thread_id, run_id, grants=grants)
        self.mounts = dict(mounts)

    def _on_disk(self, path: str) -> tuple[FileBackend, str] | None:
        for prefix, folder in self.mounts.items():
            if path == prefix[:-1] or path.startswith(prefix):
                return folder, path[len(prefix) :]
        return None

    def _as_stored(self, path: str, data: bytes) -> StoredFile:
        text = decode(data)
        row = {"path": path, "content": data, "is_text": text is not None, "size": len(data),
               "blob_id": None, "chars": None, "lines": None}  # fmt: skip
        return StoredFile.from_row(self.store, row)

    # -- reading -------------------------------------------------------------------------

    def open(self, path: str) -> StoredFile:
        path = normalize(path)
        found = self._on_disk(path)
        if found is None:
            return super().open(path)
        folder, rel = found
        if folder.is_dir(rel):
            raise FileError(f"{path} is a directory, not a file; use ls to see its files")
        try:
            return self._as_stored(path, folder.read_bytes(rel))
        except FileNotFoundError:
            raise FileNotFoundError(f"file not found: {path}") from None

    def exists(self, path: str) -> bool:
        path = normalize(path)
        found = self._on_disk(path)
        return super().exists(path) if found is None else found[0].exists(found[1])

    def is_dir(self, path: str) -> bool:
        path = normalize(path)
        found = self._on_disk(path)
        if found is None:
            return super().is_dir(path) or any(p.startswith(path + "/") for p in self.mounts)
        return found[0].is_dir(found[1])

    def _all(self, under: str) -> list[dict[str, Any]]:
        rows = [r for r in super()._all(under) if self._on_disk(r["path"]) is None]
        for prefix, folder in self.mounts.items():
            if under in ("/", prefix[:-1]):
                rel = ""
            elif under.startswith(prefix):
                rel = under[len(prefix) :]
            else:
                continue
            rows += [{"path": prefix + e.path, "size": e.size, "modified_at": e.modified_at}
                     for e in folder.listing(rel)]  # fmt: skip
        return sorted(rows, key=lambda r: r["path"])

    def _text_files(self, base: str, wanted: Callable[[str], bool] | None) -> Iterator[StoredFile]:
        for f in super()._text_files(base, wanted):
            if self._on_disk(f.path) is None:
                yield f
        for row in self._all(base):
            found = self._on_disk(row["path"])
            if found is not None and (not wanted or wanted(row["path"])):
                stored = self._as_stored(row["path"], found[0].read_bytes(found[1]))
                if stored.is_text:
                    yield stored

    # -- writing -------------------------------------------------------------------------

    def write(self, path: str, content: str | bytes) -> str:
        path = normalize(path)
        found = self._on_disk(path)
        if found is None:
            return super().write(path, content)
        folder, rel = found
        self._check_writable(path)
        data = encode_text(content) if isinstance(content, str) else bytes(content)
        with self.store.unit() as uow:
            self._on_change(uow, path, folder.read_or_none(rel), data)
            store_content(uow.files, self.namespace(path), path, data, self.run_id, now())
            folder.write_bytes(rel, data)
        return path

    def delete(self, path: str) -> None:
        path = normalize(path)
        found = self._on_disk(path)
        if found is None:
            return super().delete(path)
        folder, rel = found
        prefix = durable_prefix(path)
        if prefix is not None and prefix not in self._grants:
            raise FileError(f"cannot change {path}: {DURABLE_RULES[prefix]}")
        old = folder.read_bytes(rel)
        with self.store.unit() as uow:
            self._on_change(uow, path, old, None)
            delete_content(uow.files, [(self.namespace(path), path)])
            folder.delete(rel)

    def _on_change(self, uow: Any, path: str, old: bytes | None, new: bytes | None) -> None:
        prefix = durable_prefix(path)
        hook = self._grants.get(prefix) if prefix else None
        if hook is not None:
            hook(uow, path, old, new)

    def write_blob(self, path: str, text: str, *, new: bool = False) -> str:
        if self._on_disk(normalize(path)) is not None:
            raise FileError(f"{path}: the harness keeps this file in the store, not on disk")
        return super().write_blob(path, text, new=new)

    def write_many(self, files: Mapping[str, bytes], delete: Iterable[str] = ()) -> None:
        for path in [*files, *delete]:
            if self._on_disk(normalize(path)) is not None:
                raise FileError(f"{path}: batch writes go to the store, not to a mounted folder")
        super().write_many(files, delete)
