"""Memory files as plain markdown on disk: `export_memory` and its inverse `import_memory`."""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from harness.files.filesystem import FileSystem
from harness.files.paths import FileError, normalize
from harness.middleware.memory_versions import MEMORY_PREFIX, memory_text, versioning
from harness.store import Store


def export_memory(store: Store, directory: str | Path) -> list[Path]:
    """Write every file under `/memories/` to `directory` as plain markdown
    (`/memories/AGENTS.md` -> `directory/AGENTS.md`); returns the files written. Every target
    must stay inside `directory` on POSIX and on Windows alike: a stored name that would leave
    it (`..`, a drive such as `C:`, a backslash) is a `FileError` naming it, before anything
    is written."""
    files = FileSystem(store, thread_id="memory-io")
    out_dir = Path(directory)
    targets = {path: _export_target(out_dir, path) for path in files.list_files(MEMORY_PREFIX)}
    unsafe = sorted(path for path, target in targets.items() if target is None)
    if unsafe:
        raise FileError(
            f"not exported: stored memory names that would leave {out_dir}: "
            + ", ".join(repr(p) for p in unsafe)
        )
    written = []
    for path, target in targets.items():
        assert target is not None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files.read_bytes(path))
        written.append(target)
    return written


def _export_target(out_dir: Path, path: str) -> Path | None:
    """Where `path` goes under `out_dir`, or None when it could leave it on any OS."""
    parts = path[len(MEMORY_PREFIX) :].split("/")
    for part in parts:
        if (
            part in ("", ".", "..")
            or part != part.strip()
            or part.endswith(".")  # Windows drops trailing dots: "..." would mean "."
            or any(c in part for c in "\\:")
            or any(ord(c) < 32 for c in part)
        ):
            return None
    for flavour in (PurePosixPath, PureWindowsPath):
        rel = flavour(*parts)
        if rel.anchor or ".." in rel.parts:
            return None
    target = out_dir.joinpath(*parts)
    # A symlink already inside the folder could still lead out of it.
    if not target.resolve().is_relative_to(out_dir.resolve()):
        return None
    return target


def import_memory(store: Store, directory: str | Path, author: str = "import") -> list[str]:
    """Load every `*.md` file under `directory` into `/memories/` (the inverse of
    `export_memory`), recording a version, by `author`, for each changed file; returns the
    memory paths. A file that is not UTF-8 text is a `FileError` naming it, before anything
    is imported."""
    files = FileSystem(store, thread_id="memory-io")
    files.grant(MEMORY_PREFIX, versioning(None, author))
    root = Path(directory)
    texts: dict[str, str] = {}
    problems = []
    for source in sorted(root.rglob("*.md")):
        path = normalize(MEMORY_PREFIX + source.relative_to(root).as_posix())
        try:
            texts[path] = memory_text(str(source), source.read_bytes())
        except FileError as exc:
            problems.append(str(exc))
    if problems:
        raise FileError("nothing imported: " + "; ".join(problems))
    for path, text in texts.items():
        files.write(path, text)
    return list(texts)
