"""Paths of the virtual filesystem: their canonical form, the durable prefixes, and the error
every file operation raises for something the model asked for and can fix.

Paths are absolute, normalised POSIX paths. Files under a durable prefix (`/memories/`,
`/skills/`) live in one shared namespace; every other path belongs to the thread that wrote it.
"""

from __future__ import annotations

import hashlib
import re

from harness.errors import HarnessError

DURABLE_PREFIXES = ("/memories/", "/skills/")
# Why a FileSystem without the grant may not change files under each durable prefix; the
# model reads these in its tool results.
DURABLE_RULES = {
    "/skills/": (
        "/skills/ is read-only: skills come from skill folders on disk, copied in at run "
        "start. Keep your own notes elsewhere, e.g. under /notes/"
    ),
    "/memories/": (
        "/memories/ is long-term memory, changed only with write_file, edit_file or delete "
        "by an agent that has memory enabled (each change is versioned); this one has not"
    ),
}
SHARED_NAMESPACE = "shared"
MAX_PATH = 1024
MAX_SEGMENT = 255
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class FileError(HarnessError):
    """A file operation the model asked for cannot be done; the message says why."""


def safe_segment(text: str, max_len: int = 120) -> str:
    """A path segment made from any id: unsafe characters become `_`; long ids keep a readable
    head and a hash of the whole, so distinct ids never collide."""
    cleaned = _UNSAFE.sub("_", text).strip(".") or "_"
    if len(cleaned) <= max_len and cleaned == text:
        return cleaned
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned[: max_len - 13]}-{digest}"


def quoted(path: str) -> str:
    """`path` quoted for an error message, cut so an absurd path cannot flood the context."""
    return repr(path if len(path) <= 100 else path[:100] + "...")


def normalize(path: str) -> str:
    """The canonical form of `path` (absolute; no empty, `.` or `..` segments; no trailing
    slash), or `FileError` naming what is wrong with it. `normalize(normalize(p)) ==
    normalize(p)`."""
    if not isinstance(path, str) or not path.strip():
        raise FileError("path must be a non-empty string such as /notes.md")
    if "\x00" in path:
        raise FileError(f"path {quoted(path)} contains a NUL byte")
    if len(path) > MAX_PATH:
        raise FileError(f"path is {len(path)} characters long; the limit is {MAX_PATH}")
    raw = path.strip()
    if _CONTROL.search(raw):
        raise FileError(f"path {quoted(raw)} contains a control character")
    if raw.startswith("~"):
        raise FileError(
            f"path {quoted(raw)}: '~' is not supported; use an absolute path like /notes.md"
        )
    segments = []
    # Backslashes count as separators (models used to Windows send them). Whitespace around a
    # segment is dropped: it is invisible in listings and would make "/a /" and "/a" differ.
    for part in raw.replace("\\", "/").split("/"):
        segment = part.strip()
        if segment == "..":
            raise FileError(f"path {quoted(raw)} contains '..': paths may not leave the root")
        if len(segment) > MAX_SEGMENT:
            raise FileError(f"path {quoted(raw)} has a segment over {MAX_SEGMENT} characters")
        if segment and segment != ".":
            segments.append(segment)
    norm = "/" + "/".join(segments)
    if len(norm) > MAX_PATH:
        raise FileError(f"path is {len(norm)} characters long; the limit is {MAX_PATH}")
    return norm


def split_lines(text: str) -> list[str]:
    """Lines as `read_file` numbers them and `grep` searches them: split on "\\n" only, a
    trailing newline ends the last line rather than starting an empty one, "\\r" is dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def durable_prefix(path: str) -> str | None:
    """The durable prefix the normalised `path` lies strictly below, or None."""
    return next((p for p in DURABLE_PREFIXES if path.startswith(p)), None)


def dir_prefix(path: str) -> str:
    """What every path below the normalised directory `path` starts with."""
    return path if path == "/" else path + "/"
