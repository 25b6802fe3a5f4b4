"""Skills: folders of know-how the model loads on demand (progressive disclosure).

A skill is a folder holding a `SKILL.md` in the Agent Skills format: YAML frontmatter (`name`,
`description`, optional `license`, `compatibility`, `metadata`, `allowed-tools`) and a markdown
body, plus optional scripts and reference files. At every run start the skill folders on disk
are synced into the virtual filesystem under `/skills/<name>/`, and the frontmatter of every
`/skills/*/SKILL.md` is read (never cached across runs, so a resumed thread sees today's
skills). Every model call then carries a short menu; the body enters the context only when the
model reads the file. A malformed skill is left out with a `skipped` event saying why.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
import yaml

from harness.messages import ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest

if TYPE_CHECKING:
    from harness.state import RunState

SKILLS_ROOT = "/skills"
SKILL_FILE = "SKILL.md"
# Agent Skills naming: lowercase letters and digits in hyphen-separated runs.
_NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
_NAME = re.compile(_NAME_PATTERN)
_IGNORED_PARTS = {"__pycache__", "node_modules"}

MENU_INTRO = (
    "Skills are packaged instructions for particular kinds of work, kept as folders under "
    "/skills/. Only each skill's name and description are listed here. When a task matches a "
    "description, read that skill's SKILL.md with read_file before you start and follow it; "
    "the scripts and reference files it mentions are in the same folder. Ignore skills that do "
    "not apply."
)


class SkillHeader(pydantic.BaseModel):
    """The frontmatter of a SKILL.md."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    name: str = pydantic.Field(min_length=1, max_length=64, pattern=_NAME_PATTERN)
    description: str = pydantic.Field(min_length=1, max_length=1024)
    license: str | None = None
    compatibility: str | None = pydantic.Field(default=None, max_length=500)
    metadata: dict[str, Any] | None = None
    allowed_tools: str | list[str] | None = pydantic.Field(default=None, alias="allowed-tools")


@dataclass(frozen=True, slots=True)
class Skill:
    header: SkillHeader
    path: str  # of its SKILL.md in the virtual filesystem

    @property
    def name(self) -> str:
        return self.header.name


class SkillFormatError(ValueError):
    """A SKILL.md that does not follow the Agent Skills format; the message says why."""


def parse_header(text: str, folder: str) -> SkillHeader:
    """The validated frontmatter of a SKILL.md whose folder is named `folder`."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError("SKILL.md must start with a '---' line opening YAML frontmatter")
    try:
        end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration:
        raise SkillFormatError("the YAML frontmatter is not closed by a '---' line") from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillFormatError("the frontmatter must be a YAML mapping of fields")
    try:
        header = SkillHeader.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'frontmatter'}: {err['msg']}"
            for err in exc.errors()
        )
        raise SkillFormatError(f"invalid frontmatter: {problems}") from None
    if header.name != folder:
        raise SkillFormatError(f"name {header.name!r} must equal its folder name {folder!r}")
    return header


def render_menu(skills: Iterable[Skill]) -> str:
    """The system-prompt section listing the skills; empty when there are none."""
    entries = [
        f"- **{s.name}**: {' '.join(s.header.description.split())}\n"
        f"  Read {s.path} for the full instructions."
        for s in skills
    ]
    if not entries:
        return ""
    return "## Skills\n\n" + MENU_INTRO + "\n\n" + "\n".join(entries)


class Skills(Middleware):
    """Syncs skill folders into `/skills/`, reads their headers at run start, and adds the
    menu to every model call."""

    name = "skills"

    def __init__(
        self, sources: Iterable[str | os.PathLike[str]] = (), *, include_stored: bool = True
    ) -> None:
        """Parameters:
        sources: directories on disk, each either one skill folder (it holds a SKILL.md) or a
            folder of skill folders; copied to `/skills/<name>/` at every run start.
        include_stored: also offer skills already under `/skills/` in the store that no source
            provides (default True).
        """
        self.sources = tuple(Path(s).expanduser() for s in sources)
        self.include_stored = include_stored

    async def before_agent(self, state: RunState) -> None:
        start = time.perf_counter()
        scratch = state.scratch.setdefault(self.name, {})
        folders = self._disk_folders(state)
        changes = self._changes(state, folders)
        if changes[0] or changes[1]:
            await state.run_step("skills", self._sync, state, *changes)
        skills = self._load(state, {f.name for f in folders})
        scratch["skills"] = skills
        scratch["menu"] = render_menu(skills)
        state.event(
            self.name, "before_agent", "loaded",
            tokens_after=state.counter.count_text(scratch["menu"]),
            detail={"skills": [s.name for s in skills], "paths": [s.path for s in skills]},
            ms=state.elapsed_ms(start),
        )  # fmt: skip

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        menu = request.state.scratch.get(self.name, {}).get("menu", "")
        return await handler(request.with_system_section(menu))

    # -- disk -> virtual filesystem --------------------------------------------------------

    def _disk_folders(self, state: RunState) -> list[Path]:
        """Skill folders found in the sources; the first source providing a name wins."""
        found: dict[str, Path] = {}
        for source in self.sources:
            if not source.is_dir():
                self._skip(state, str(source), "skill source directory not found")
                continue
            if (source / SKILL_FILE).is_file():
                candidates = [source]
            else:
                candidates = sorted(c for c in source.iterdir() if (c / SKILL_FILE).is_file())
            for folder in candidates:
                if not _NAME.match(folder.name) or len(folder.name) > 64:
                    self._skip(
                        state, str(folder),
                        f"folder name {folder.name!r} is not a valid skill name (1-64 lowercase "
                        "letters, digits and single hyphens)",
                    )  # fmt: skip
                elif folder.name in found:
                    self._skip(
                        state, str(folder),
                        f"skill {folder.name!r} is already provided by {found[folder.name]}",
                    )  # fmt: skip
                else:
                    found[folder.name] = folder
        return list(found.values())

    def _changes(self, state: RunState, folders: list[Path]) -> tuple[dict[str, bytes], list[str]]:
        """Files to write and files to delete so `/skills/<name>/` mirrors each disk folder."""
        to_write: dict[str, bytes] = {}
        to_delete: list[str] = []
        for folder in folders:
            prefix = f"{SKILLS_ROOT}/{folder.name}"
            wanted = {f"{prefix}/{rel}": data for rel, data in _folder_files(folder)}
            stored = set(state.files.list_files(prefix))
            for path, data in wanted.items():
                if path not in stored or state.files.read_bytes(path) != data:
                    to_write[path] = data
            to_delete.extend(sorted(stored - wanted.keys()))
        return to_write, to_delete

    async def _sync(
        self, state: RunState, to_write: dict[str, bytes], to_delete: list[str]
    ) -> None:
        start = time.perf_counter()
        for path, data in to_write.items():
            state.files.write(path, data)
        for path in to_delete:
            state.files.delete(path)
        state.event(
            self.name, "before_agent", "synced",
            detail={"written": sorted(to_write), "deleted": to_delete},
            ms=state.elapsed_ms(start),
        )  # fmt: skip

    # -- headers ---------------------------------------------------------------------------

    def _load(self, state: RunState, from_disk: set[str]) -> list[Skill]:
        skills = []
        for info in state.files.glob(f"{SKILLS_ROOT}/*/{SKILL_FILE}", SKILLS_ROOT):
            folder = info.path.split("/")[2]
            if not self.include_stored and folder not in from_disk:
                continue
            try:
                header = parse_header(state.files.read_text(info.path), folder)
            except Exception as exc:  # a broken skill must never break the run
                self._skip(state, info.path, str(exc))
                continue
            skills.append(Skill(header, info.path))
        return sorted(skills, key=lambda s: s.name)

    def _skip(self, state: RunState, where: str, reason: str) -> None:
        state.event(self.name, "before_agent", "skipped", detail={"path": where, "reason": reason})


def _folder_files(folder: Path) -> list[tuple[str, bytes]]:
    """(relative POSIX path, content) of every file in a skill folder, hidden files aside."""
    files = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or any(p.startswith(".") or p in _IGNORED_PARTS for p in rel.parts):
            continue
        files.append((rel.as_posix(), path.read_bytes()))
    return files
