"""Skill folders on disk (harness/middleware/skills.py): which folders the sources provide,
the files of each that may be copied into `/skills/<name>/`, and what a sync must write and
delete to mirror them."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

SKILLS_ROOT = "/skills"
SKILL_FILE = "SKILL.md"
NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
_NAME = re.compile(NAME_PATTERN)
_IGNORED_PARTS = {"__pycache__", "node_modules"}


Digest = tuple[int, str]  # (size, SHA-256 hex) of a file's content


@dataclass
class Folder:
    """What the sync takes from one skill folder on disk."""

    name: str
    files: dict[str, bytes] = field(default_factory=dict)  # virtual path -> content
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (disk path, reason)


def disk_folders(sources: Iterable[Path], skip: Callable[[str, str], None]) -> list[Path]:
    """Skill folders found in `sources`; the first source providing a name wins. What is
    passed over goes to `skip(where, reason)`: a skill folder that is a symbolic link out of
    its source among them (the source itself was named by the user and is followed)."""
    found: dict[str, Path] = {}
    for source in sources:
        if not source.is_dir():
            skip(str(source), "skill source directory not found")
            continue
        if (source / SKILL_FILE).is_file():
            candidates = [source]
        else:
            candidates = sorted(c for c in source.iterdir() if (c / SKILL_FILE).is_file())
        real_source = source.resolve()
        for folder in candidates:
            if folder != source and not (real := folder.resolve()).is_relative_to(real_source):
                skip(str(folder), f"symbolic link leading outside {source}: not followed ({real})")
            elif not _NAME.match(folder.name) or len(folder.name) > 64:
                skip(
                    str(folder),
                    f"folder name {folder.name!r} is not a valid skill name (1-64 lowercase "
                    "letters, digits and single hyphens)",
                )  # fmt: skip
            elif folder.name in found:
                skip(
                    str(folder),
                    f"skill {folder.name!r} is already provided by {found[folder.name]}",
                )  # fmt: skip
            else:
                found[folder.name] = folder
    return list(found.values())


def read_folder(folder: Path, max_file_bytes: int, max_skill_bytes: int) -> Folder:
    """The files of a skill folder that may be copied; hidden files aside, symbolic links
    only when they stay inside the folder, within the size limits. No files at all when
    the skill is left out (its reason is the last skip)."""
    result = Folder(folder.name)
    root = folder.resolve()
    prefix = f"{SKILLS_ROOT}/{folder.name}/"
    total = 0
    for path, reason in _walk(folder, root):
        if reason is not None:
            result.skipped.append((str(path), reason))
            continue
        rel = path.relative_to(folder).as_posix()
        size = path.stat().st_size
        if size <= max_file_bytes:
            data = path.read_bytes()
            size = len(data)  # the file may have changed since stat
        if size > max_file_bytes:
            why = f"{size:,} bytes, over the limit of {max_file_bytes:,} per file"
            if rel == SKILL_FILE:
                return _left_out(result, folder, f"its {SKILL_FILE} is {why}")
            result.skipped.append((str(path), f"file not copied: {why} (max_file_bytes)"))
            continue
        total += size
        if total > max_skill_bytes:
            return _left_out(
                result, folder,
                f"its files add up to more than {max_skill_bytes:,} bytes, the limit "
                "per skill (max_skill_bytes)",
            )  # fmt: skip
        result.files[prefix + rel] = data
    if prefix + SKILL_FILE not in result.files:
        return _left_out(result, folder, f"no {SKILL_FILE} that can be copied")
    return result


def _left_out(result: Folder, folder: Path, reason: str) -> Folder:
    result.files.clear()
    result.skipped.append((str(folder), f"skill left out: {reason}"))
    return result


def _walk(folder: Path, root: Path) -> Iterable[tuple[Path, str | None]]:
    """Every file to consider in a skill folder, in path order, with the reason it is not
    read (None when it may be): hidden and cache entries are passed over silently."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            if name.startswith(".") or name in _IGNORED_PARTS:
                continue
            if (base / name).is_symlink():
                yield base / name, "symbolic link to a directory: not followed"
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = base / name
            if name.startswith(".") or name in _IGNORED_PARTS:
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                yield path, "symbolic link leading outside the skill folder: not followed"
            elif not path.is_file():
                yield path, "not a regular file"
            elif not path.resolve().is_relative_to(root):
                yield path, "its real location is outside the skill folder: not copied"
            elif (links := path.stat().st_nlink) > 1:
                # A hard link looks like a regular file here, but its other name may be a
                # secret anywhere on the same disk.
                yield path, f"hard link ({links} names for one file): not copied"
            else:
                yield path, None


def changes(synced: list[Folder], stored: dict[str, Digest]) -> tuple[dict[str, bytes], list[str]]:
    """Files to write and files to delete so `/skills/<name>/` mirrors each synced folder:
    only new or changed files are written (size and SHA-256 compared)."""
    to_write: dict[str, bytes] = {}
    to_delete: list[str] = []
    for folder in synced:
        prefix = f"{SKILLS_ROOT}/{folder.name}/"
        for path, data in folder.files.items():
            if stored.get(path) != (len(data), hashlib.sha256(data).hexdigest()):
                to_write[path] = data
        # A stored file where the skill's directory goes would block every file of it.
        stray = [prefix[:-1]] if prefix[:-1] in stored else []
        to_delete.extend(
            stray + sorted(p for p in stored if p.startswith(prefix) and p not in folder.files)
        )
    return to_write, to_delete
