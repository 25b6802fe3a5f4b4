"""A folder on disk that holds the files under one virtual prefix (`/workspace/` -> a repo).

Confined to its root: a path is taken relative to the root and refused, naming it, when it is
absolute, has a `..` or NUL, or reaches outside the root through a symlink (the resolved path
must stay under the resolved root); only regular files are read or replaced (a device, FIFO
or socket is refused, and opened with O_NOFOLLOW | O_NONBLOCK so a swapped-in FIFO cannot
block the read). A write goes to a temporary file in the same directory, is synced, then
renamed over the target: a reader sees the old file or the new one, never half of either.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from harness.files.paths import FileError

MAX_LISTED = 20_000  # files a listing walks before it stops: a mount is a folder, not a disk


@dataclass(frozen=True, slots=True)
class DiskEntry:
    path: str  # relative to the root, "/"-separated
    size: int
    modified_at: datetime


class DiskFolder:
    """The files of one folder; every path is relative to it (`notes/a.md`)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise FileError(f"{root} is not a folder")
        self.root = real

    def __repr__(self) -> str:
        return f"DiskFolder({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------

    def locate(self, rel: str) -> Path:
        """The real path of `rel` under the root, or `FileError` naming the escape."""
        if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
            raise FileError(f"{rel}: an absolute path; give one relative to {self.root}")
        if "\x00" in rel:
            raise FileError(f"{rel!r}: a NUL byte in the path")
        parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            raise FileError(f"{rel}: '..' may not leave {self.root}")
        real = Path(os.path.realpath(self.root.joinpath(*parts)))
        if real != self.root and self.root not in real.parents:
            raise FileError(f"{rel} leads outside {self.root} (through a symlink to {real})")
        return real

    # -- reading -------------------------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        real = self.locate(rel)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise FileNotFoundError(f"file not found: {rel}") from None
        except IsADirectoryError:
            raise FileError(f"{rel} is a directory, not a file") from None
        with os.fdopen(fd, "rb") as f:
            kind = os.fstat(f.fileno()).st_mode
            if stat.S_ISDIR(kind):
                raise FileError(f"{rel} is a directory, not a file")
            if not stat.S_ISREG(kind):
                raise FileError(f"{rel} is not a regular file (a device, FIFO or socket)")
            return f.read()

    def read_or_none(self, rel: str) -> bytes | None:
        return self.read_bytes(rel) if self.exists(rel) else None

    def exists(self, rel: str) -> bool:
        """True for a regular file."""
        try:
            return stat.S_ISREG(os.stat(self.locate(rel)).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def is_dir(self, rel: str) -> bool:
        try:
            return self.locate(rel).is_dir()
        except FileError:
            return False

    def listing(self, rel: str = "") -> list[DiskEntry]:
        """The regular files under the folder `rel`, sorted; symlinks that leave the root and
        special files are left out."""
        top = self.locate(rel)
        if not top.is_dir():
            return []
        found: list[DiskEntry] = []
        for folder, _dirs, names in os.walk(top):
            for name in names:
                path = Path(folder) / name
                real = Path(os.path.realpath(path))
                if self.root not in real.parents:
                    continue
                info = os.stat(real)
                if not stat.S_ISREG(info.st_mode):
                    continue
                when = datetime.fromtimestamp(info.st_mtime)
                found.append(DiskEntry(path.relative_to(self.root).as_posix(), info.st_size, when))
                if len(found) >= MAX_LISTED:
                    return sorted(found, key=lambda e: e.path)
        return sorted(found, key=lambda e: e.path)

    # -- writing -------------------------------------------------------------------------

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Create or replace `rel` atomically (its folders made as needed, inside the root)."""
        real = self.locate(rel)
        if real == self.root or real.is_dir():
            raise FileError(f"{rel or '/'} is a directory, not a file")
        if real.exists() and not stat.S_ISREG(os.stat(real).st_mode):
            raise FileError(f"{rel} is not a regular file (a device, FIFO or socket)")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise FileError(f"cannot create {rel}: a file stands where a folder should") from None
        self.locate(rel)  # a folder swapped for a symlink while it was made
        fd, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, real)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def delete(self, rel: str) -> None:
        real = self.locate(rel)
        if not self.exists(rel):
            raise FileNotFoundError(f"file not found: {rel}")
        real.unlink()
