"""A virtual filesystem over the store's `files` table.

Paths are absolute, normalised POSIX paths. Files under a durable prefix (`/memories/`,
`/skills/`) live in one shared namespace, so they survive across threads and runs; every other
path belongs to the thread that wrote it (offloaded tool results, conversation history, drafts).
Contents are bytes; text is UTF-8. Anything the model should be told about (a bad path, a
missing file) raises `FileError`/`FileNotFoundError`, which the file tools turn into text.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from datetime import datetime

from harness.errors import HarnessError
from harness.store import Store, now

DURABLE_PREFIXES = ("/memories/", "/skills/")
SHARED_NAMESPACE = "shared"
MAX_PATH = 1024
MAX_SEGMENT = 255
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class FileError(HarnessError):
    """A file operation the model asked for cannot be done; the message says why."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    is_dir: bool
    size: int = 0
    modified_at: datetime | None = None


def safe_segment(text: str, max_len: int = 120) -> str:
    """A path segment made from any id: unsafe characters become `_`; long ids keep a readable
    head and a hash of the whole, so distinct ids never collide."""
    cleaned = _UNSAFE.sub("_", text).strip(".") or "_"
    if len(cleaned) <= max_len and cleaned == text:
        return cleaned
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned[: max_len - 13]}-{digest}"


def normalize(path: str) -> str:
    """The canonical form of `path`, or `FileError` naming what is wrong with it."""
    if not isinstance(path, str) or not path.strip():
        raise FileError("path must be a non-empty string")
    if "\x00" in path:
        raise FileError("path contains a NUL byte")
    if len(path) > MAX_PATH:
        raise FileError(f"path is {len(path)} characters long; the limit is {MAX_PATH}")
    raw = path.strip().replace("\\", "/")
    if any(seg == ".." for seg in raw.split("/")):
        raise FileError(f"path {path!r} contains '..': paths may not leave the root")
    if raw.startswith("~"):
        raise FileError(f"path {path!r}: '~' is not supported; use an absolute path like /notes.md")
    norm = posixpath.normpath("/" + raw.lstrip("/"))
    if any(len(seg) > MAX_SEGMENT for seg in norm.split("/")):
        raise FileError(f"path {path!r} has a segment over {MAX_SEGMENT} characters")
    return norm


def decode(content: bytes) -> str | None:
    """UTF-8 text, or None for binary content."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


class FileSystem:
    """Files of one thread, plus the durable shared prefixes."""

    def __init__(self, store: Store, thread_id: str, run_id: str | None = None) -> None:
        self.store = store
        self.thread_id = thread_id
        self.run_id = run_id
        self._thread_ns = f"thread:{thread_id}"

    def namespace(self, path: str) -> str:
        durable = any((path + "/").startswith(p) for p in DURABLE_PREFIXES)
        return SHARED_NAMESPACE if durable else self._thread_ns

    # -- reading -------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        path = normalize(path)
        rows = self.store.query(
            "SELECT content FROM files WHERE namespace = ? AND path = ?",
            [self.namespace(path), path],
        )
        if not rows:
            raise FileNotFoundError(f"file not found: {path}")
        return bytes(rows[0]["content"])

    def read_text(self, path: str) -> str:
        content = self.read_bytes(path)
        text = decode(content)
        if text is None:
            raise FileError(f"{normalize(path)} is binary ({len(content)} bytes), not UTF-8 text")
        return text

    def exists(self, path: str) -> bool:
        path = normalize(path)
        return bool(
            self.store.scalar(
                "SELECT count(*) FROM files WHERE namespace = ? AND path = ?",
                [self.namespace(path), path],
            )
        )

    def _all(self, under: str) -> list[dict]:
        prefix = under.rstrip("/") + "/"
        return self.store.query(
            "SELECT path, size, modified_at FROM files WHERE namespace IN (?, ?) "
            "AND starts_with(path, ?) ORDER BY path",
            [self._thread_ns, SHARED_NAMESPACE, prefix if prefix != "//" else "/"],
        )

    def ls(self, path: str = "/") -> list[FileInfo]:
        """Direct children of `path`: files, and directories implied by deeper files."""
        base = normalize(path)
        prefix = base.rstrip("/") + "/"
        entries: dict[str, FileInfo] = {}
        for row in self._all(base):
            rest = row["path"][len(prefix) :] if base != "/" else row["path"][1:]
            head, sep, _ = rest.partition("/")
            child = prefix + head if base != "/" else "/" + head
            if sep:
                entries.setdefault(child, FileInfo(child, is_dir=True))
            else:
                entries[child] = FileInfo(child, False, row["size"], row["modified_at"])
        if not entries and base != "/" and self.exists(base):
            raise FileError(f"{base} is a file, not a directory")
        return sorted(entries.values(), key=lambda e: e.path)

    def glob(self, pattern: str, path: str = "/") -> list[FileInfo]:
        """Files under `path` matching `pattern` (`*` within a segment, `**` across segments)."""
        base = normalize(path)
        if not pattern.startswith("/"):
            pattern = posixpath.join(base, pattern) if base != "/" else "/" + pattern
        regex = _glob_regex(pattern)
        return [
            FileInfo(r["path"], False, r["size"], r["modified_at"])
            for r in self._all(base)
            if regex.fullmatch(r["path"])
        ]

    def list_files(self, path: str = "/") -> list[str]:
        return [r["path"] for r in self._all(normalize(path))]

    # -- writing -------------------------------------------------------------------------

    def write(self, path: str, content: str | bytes) -> str:
        path = normalize(path)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        ts = now()
        self.store.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, path) "
            "DO UPDATE SET content = excluded.content, is_text = excluded.is_text, "
            "size = excluded.size, run_id = excluded.run_id, modified_at = excluded.modified_at",
            [self.namespace(path), path, data, decode(data) is not None, len(data),
             self.run_id, ts, ts],
        )  # fmt: skip
        return path

    def append(self, path: str, text: str) -> str:
        existing = self.read_text(path) if self.exists(path) else ""
        return self.write(path, existing + text)

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> int:
        """Replace `old` by `new`; returns how many occurrences changed."""
        text = self.read_text(path)
        if not old:
            raise FileError("old_string must not be empty")
        count = text.count(old)
        if count == 0:
            raise FileError(f"old_string not found in {normalize(path)}")
        if count > 1 and not replace_all:
            raise FileError(
                f"old_string occurs {count} times in {normalize(path)}; give more surrounding "
                "context to make it unique, or set replace_all=true"
            )
        self.write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
        return count if replace_all else 1

    def delete(self, path: str) -> None:
        path = normalize(path)
        if not self.exists(path):
            raise FileNotFoundError(f"file not found: {path}")
        self.store.execute(
            "DELETE FROM files WHERE namespace = ? AND path = ?", [self.namespace(path), path]
        )


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            ch = pattern[i]
            out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
            i += 1
    return re.compile("".join(out))


__all__ = ["FileError", "FileInfo", "FileSystem", "decode", "normalize", "safe_segment"]
