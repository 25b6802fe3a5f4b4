"""A virtual filesystem over the store's `files` table.

Paths are absolute, normalised POSIX paths. Files under a durable prefix (`/memories/`,
`/skills/`) live in one shared namespace, so they survive across threads and runs; every other
path belongs to the thread that wrote it (offloaded tool results, conversation history, drafts).
Directories are implicit: a directory exists while a file below it does. Contents are bytes;
text is UTF-8; a large file is stored in chunks with a line index (`storage`), so a page
costs O(page), and `grep` scans it in bounded windows under a time budget (`search`).
Anything the model should be told about (a bad path, a missing file) raises
`FileError`/`FileNotFoundError`, which the file tools turn into text.

Durable paths are shared by every agent, so a `FileSystem` changes them only under a prefix it
was granted (`grant`): the skills middleware is granted `/skills/` for its sync from disk, and
the memory middleware grants `/memories/` to its run with a hook that versions each change in
the change's own transaction. No file may sit at `/skills` or `/memories`, where it would
block every durable path below it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.files.paths import (
    DURABLE_PREFIXES,
    DURABLE_RULES,
    SHARED_NAMESPACE,
    FileError,
    dir_prefix,
    durable_prefix,
    normalize,
)
from harness.files.search import (
    MAX_PATTERN_CHARS,
    SEARCH_SECONDS,
    Deadline,
    GrepMatch,
    Matcher,
    Unit,
    anchor,
    compile_regex,
    file_filter,
    fullmatch,
    glob_regex,
    scan,
)
from harness.files.storage import (
    blob_rows,
    decode,
    delete_content,
    disk_refusals,
    encode_text,
    replace_many,
    store_content,
    whole_content,
    write_chunks,
)
from harness.files.stored_file import StoredFile
from harness.store import Store, UnitOfWork, now

ChangeHook = Callable[[UnitOfWork, str, bytes | None, bytes | None], None]
"""Runs in the transaction of each change under a granted prefix, just before it, with the path,
the old and the new content (None: no file before / a deletion); raising `FileError` cancels
the change."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    is_dir: bool
    size: int = 0
    modified_at: datetime | None = None


class FileSystem:
    """Files of one thread, plus the durable shared prefixes."""

    def __init__(
        self,
        store: Store,
        thread_id: str,
        run_id: str | None = None,
        *,
        grants: Iterable[str] = (),
    ) -> None:
        """`grants`: durable prefixes this instance may change (see `grant`)."""
        self.store = store
        self.thread_id = thread_id
        self.run_id = run_id
        self._thread_ns = f"thread:{thread_id}"
        self._grants: dict[str, ChangeHook | None] = {}
        for prefix in grants:
            self.grant(prefix)

    def grant(self, prefix: str, on_change: ChangeHook | None = None) -> None:
        """Let this instance change files under the durable `prefix` (`/skills/` or
        `/memories/`); `on_change` runs in the transaction of each such change."""
        if prefix not in DURABLE_PREFIXES:
            raise ValueError(f"{prefix!r} is not a durable prefix: use one of {DURABLE_PREFIXES}")
        self._grants[prefix] = on_change

    def namespace(self, path: str) -> str:
        return SHARED_NAMESPACE if durable_prefix(path) else self._thread_ns

    # -- reading -------------------------------------------------------------------------

    def open(self, path: str) -> StoredFile:
        """The file at `path`, opened for reading in pages (`FileError` for a directory,
        `FileNotFoundError` if there is none)."""
        path = normalize(path)
        row = self.store.files.row(self.namespace(path), path)
        if row is None:
            if self.is_dir(path):
                raise FileError(f"{path} is a directory, not a file; use ls to see its files")
            raise FileNotFoundError(f"file not found: {path}")
        return StoredFile.from_row(self.store, row)

    def read_bytes(self, path: str) -> bytes:
        return self.open(path).read_bytes()

    def read_text(self, path: str) -> str:
        content = self.read_bytes(path)
        text = decode(content)
        if text is None:
            raise FileError(f"{normalize(path)} is binary ({len(content)} bytes), not UTF-8 text")
        return text

    def exists(self, path: str) -> bool:
        """True if `path` is a file."""
        path = normalize(path)
        return self.store.files.exists(self.namespace(path), path)

    def is_dir(self, path: str) -> bool:
        """True for "/" and for any path with files below it."""
        path = normalize(path)
        if path == "/":
            return True
        return self.store.files.has_files_below((self._thread_ns, SHARED_NAMESPACE), path + "/")

    def _all(self, under: str) -> list[dict[str, Any]]:
        return self.store.files.listing((self._thread_ns, SHARED_NAMESPACE), dir_prefix(under))

    def ls(self, path: str = "/") -> list[FileInfo]:
        """Direct children of `path`: files, and directories implied by deeper files."""
        base = normalize(path)
        prefix = dir_prefix(base)
        entries: dict[str, FileInfo] = {}
        for row in self._all(base):
            head, sep, _ = row["path"][len(prefix) :].partition("/")
            child = prefix + head
            if sep:
                entries.setdefault(child, FileInfo(child, is_dir=True))
            else:
                entries[child] = FileInfo(child, False, row["size"], row["modified_at"])
        if not entries and base != "/" and self.exists(base):
            raise FileError(f"{base} is a file, not a directory")
        return sorted(entries.values(), key=lambda e: e.path)

    def glob(
        self,
        pattern: str,
        path: str = "/",
        *,
        limit: int | None = None,
        seconds: float = SEARCH_SECONDS,
    ) -> list[FileInfo]:
        """Files under `path` matching `pattern`: `*` and `?` within a segment, `**` across
        segments, `[abc]` classes and `{a,b}` alternatives. A relative pattern is anchored at
        `path`. At most `limit` files; matching raises `SearchStopped` after `seconds`."""
        base = normalize(path)
        regex = glob_regex(anchor(pattern, base))
        deadline = Deadline(seconds)
        found: list[FileInfo] = []
        for r in self._all(base):
            if fullmatch(regex, r["path"], deadline):
                found.append(FileInfo(r["path"], False, r["size"], r["modified_at"]))
                if limit is not None and len(found) >= limit:
                    break
        return found

    def list_files(self, path: str = "/") -> list[str]:
        return [r["path"] for r in self._all(normalize(path))]

    def grep(
        self,
        pattern: str,
        path: str = "/",
        glob: str | None = None,
        regex: bool = False,
        *,
        unit: Unit = "match",
        seconds: float = SEARCH_SECONDS,
    ) -> Iterator[GrepMatch]:
        """Matches of `pattern` (literal text unless `regex`) in the text files at or under
        `path`, in path and line order, produced lazily so callers can stop early: one per
        matching line, and one per match in a line over `LONG_LINE` characters, with the text
        around it (`unit` "line" or "file" keeps the first of each line or file). `glob`
        filters files: without "/" it matches file names at any depth, with "/" whole paths as
        in `glob()`. Binary files are skipped. An empty, overlong or invalid pattern is a
        `FileError`; running past `seconds` raises `SearchStopped` from the iterator."""
        if not pattern:
            raise FileError("pattern must not be empty")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise FileError(
                f"pattern is {len(pattern)} characters long; the limit is {MAX_PATTERN_CHARS}"
            )
        matcher = Matcher(None, compile_regex(pattern)) if regex else Matcher(pattern, None)
        base = normalize(path)
        deadline = Deadline(seconds)
        wanted = file_filter(glob, base, deadline)
        return scan(self._text_files(base, wanted), matcher, unit, deadline)

    def _text_files(self, base: str, wanted: Callable[[str], bool] | None) -> Iterator[StoredFile]:
        # Inline contents are small by construction; chunked files are fetched while scanned.
        namespaces = (self._thread_ns, SHARED_NAMESPACE)
        rows = self.store.files.text_files_at(namespaces, base, dir_prefix(base))
        return (StoredFile.from_row(self.store, r) for r in rows if not wanted or wanted(r["path"]))

    # -- writing -------------------------------------------------------------------------

    def write(self, path: str, content: str | bytes) -> str:
        """Create or overwrite a file; returns its normalised path."""
        path = normalize(path)
        self._check_file_path(path)
        with disk_refusals(path):
            chunked, ns = write_chunks(self.store, content), self.namespace(path)
            with self.store.unit() as uow:
                self._changing(uow, path, content)
                store_content(uow.files, ns, path, content, self.run_id, now(), chunked=chunked)
        return path

    def write_blob(self, path: str, text: str, *, new: bool = False) -> str:
        """Create or overwrite a text file stored as a blob (`file_chunks`) however short;
        returns the blob id. A message that names it (`Message.full_ref`) keeps it readable
        after the file is overwritten or deleted: offloading stores an original once.
        `new=True`: the caller has just seen that no file is at `path`, above it or below it
        (`paths_at`), so only the write policy is checked here, and a text of one chunk is
        handed to the store as rows, written with the step's (`Store.write_rows`)."""
        path = normalize(path)
        if new:
            self._check_writable(path)
            if self._grants.get(durable_prefix(path) or "") is None:  # no change hook to run
                made = blob_rows(self.namespace(path), path, text, self.run_id, now())
                if made is not None:
                    new_blob, rows = made
                    self.store.write_rows(rows)
                    return new_blob
        else:
            self._check_file_path(path)
        with disk_refusals(path):
            chunked, ns = write_chunks(self.store, text), self.namespace(path)
            with self.store.unit() as uow:
                self._changing(uow, path, text)
                blob_id = store_content(uow.files, ns, path, text, self.run_id, now(),
                                        blob=True, new=new, chunked=chunked)  # fmt: skip
        assert blob_id is not None  # text with blob=True is always chunked
        return blob_id

    def write_many(self, files: Mapping[str, bytes], delete: Iterable[str] = ()) -> None:
        """Delete the files at `delete` and create or overwrite `files`, in one transaction,
        after checking every path with one query (the skills sync writes hundreds). Small rows
        are replaced in bulk: row-by-row upserts cost DuckDB ~30 ms each."""
        writes = {normalize(p): bytes(data) for p, data in files.items()}
        deletes = [normalize(p) for p in delete]
        for path in [*writes, *deletes]:
            self._check_writable(path)
        self._check_batch(writes, set(deletes))
        with self.store.unit() as uow:
            for path in deletes:
                self._changing(uow, path, None)
            for path, data in writes.items():
                self._changing(uow, path, data)
            replace_many(
                uow.files,
                {(self.namespace(p), p): data for p, data in writes.items()},
                [(self.namespace(p), p) for p in deletes],
                self.run_id,
                now(),
            )

    def _changing(self, uow: UnitOfWork, path: str, data: str | bytes | None) -> None:
        """Tell the hook of a granted durable prefix about a change, inside its unit of work.
        Only durable files (small by policy) are ever encoded or read whole here."""
        prefix = durable_prefix(path)
        hook = self._grants.get(prefix) if prefix else None
        if hook is None:
            return
        row = uow.files.content(self.namespace(path), path)
        old = None if row is None else whole_content(uow.files, *row)
        new = encode_text(data) if isinstance(data, str) else data
        hook(uow, path, old, new)

    def _check_writable(self, path: str) -> None:
        """The write policy: no file at a path that holds durable files, and durable files
        change only under a granted prefix."""
        if path == "/":
            raise FileError("/ is the root directory, not a file")
        for prefix in DURABLE_PREFIXES:
            if prefix.startswith(path + "/"):
                raise FileError(
                    f"cannot create a file at {path}: it is the directory {prefix} that holds "
                    "files every agent shares, so no file may sit there"
                )
        granted = durable_prefix(path)
        if granted is not None and granted not in self._grants:
            raise FileError(f"cannot change {path}: {DURABLE_RULES[granted]}")

    def _check_file_path(self, path: str) -> None:
        """The write policy, then: a file may not sit where a directory is, nor below another
        file. Only the path's own namespace can clash: thread and durable paths never overlap,
        so a thread's file cannot block a shared path."""
        self._check_writable(path)
        clashes = self.store.files.clashes(self.namespace(path), _parents(path), path + "/")
        if clashes:
            _raise_clash(path, clashes[0])

    def paths_at(self, stem: str) -> tuple[set[str], bool]:
        """The files whose path starts with `stem` (in its namespace), and whether a file
        sits above it (then nothing at `stem` can be written), in one query: a caller that
        picks a free path from these (and passes `new=True` to `write_blob`) needs no
        query per candidate and no second clash check."""
        stem = normalize(stem)
        parents = _parents(stem)
        found = self.store.files.clashes(self.namespace(stem), parents, stem)
        return set(found) - set(parents), any(p in parents for p in found)

    def _check_batch(self, writes: Mapping[str, bytes], deletes: set[str]) -> None:
        """`_check_file_path` for many paths: one query for every path under their top-level
        directories, then the same rules in memory (the batch counts as already written)."""
        if not writes:
            return
        tops = sorted({"/" + p.split("/")[1] for p in writes})
        stored = self.store.files.paths_under_tops(
            sorted({self.namespace(p) for p in writes}), tops
        )
        taken = (stored - deletes) | writes.keys()
        for path in writes:
            above = next((p for p in _parents(path) if p in taken), None)
            if above is not None:
                _raise_clash(path, above)
        dirs = {p[:i] for p in taken for i in range(1, len(p)) if p[i] == "/"}
        for path in writes:
            if path in dirs:
                below = next(p for p in sorted(taken) if p.startswith(path + "/"))
                _raise_clash(path, below)

    def append(self, path: str, text: str) -> str:
        existing = self.read_text(path) if self.exists(path) else ""
        return self.write(path, existing + text)

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> int:
        """Replace `old` by `new`; returns how many occurrences changed."""
        self._check_writable(normalize(path))
        text = self.read_text(path)
        if not old:
            raise FileError("old_string must not be empty")
        count = text.count(old)
        if count == 0:
            raise FileError(
                f"old_string not found in {normalize(path)}; read the file and copy the text "
                "exactly, including whitespace"
            )
        if count > 1 and not replace_all:
            raise FileError(
                f"old_string occurs {count} times in {normalize(path)}; give more surrounding "
                "context to make it unique, or set replace_all=true"
            )
        self.write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
        return count if replace_all else 1

    def delete(self, path: str) -> None:
        path = normalize(path)
        prefix = durable_prefix(path)
        if prefix is not None and prefix not in self._grants:
            raise FileError(f"cannot change {path}: {DURABLE_RULES[prefix]}")
        if not self.exists(path):
            if self.is_dir(path):
                raise FileError(f"{path} is a directory; delete the files in it one by one")
            raise FileNotFoundError(f"file not found: {path}")
        with self.store.unit() as uow:
            self._changing(uow, path, None)
            delete_content(uow.files, [(self.namespace(path), path)])


def _parents(path: str) -> list[str]:
    """The directories above `path`: "/a", "/a/b" for "/a/b/c"."""
    return [path[:i] for i in range(1, len(path)) if path[i] == "/"]


def _raise_clash(path: str, other: str) -> None:
    if other.startswith(path + "/"):
        raise FileError(f"{path} is a directory (it holds {other}), not a file")
    raise FileError(f"cannot create {path}: {other} is a file, not a directory")


__all__ = ["ChangeHook", "FileInfo", "FileSystem"]
