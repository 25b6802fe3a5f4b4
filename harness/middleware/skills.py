"""Skills: folders of know-how the model loads on demand (progressive disclosure).

A skill is a folder holding a `SKILL.md` in the Agent Skills format: YAML frontmatter (`name`,
`description`, optional `license`, `compatibility`, `metadata`, `allowed-tools`) and a markdown
body, plus optional scripts and reference files. At every run start the skill folders on disk
are synced into the virtual filesystem under `/skills/<name>/` (the only way anything gets
there: the model may not write `/skills/`), and the frontmatter of every `/skills/*/SKILL.md`
is read (never cached across runs, so a resumed thread sees today's skills). Every model call
then carries a short menu, descriptions escaped inside its `<available_skills>` block; the
body enters the context only when the model reads the file.

The sync reads only regular files inside each skill folder: a symbolic link is followed only
when it stays inside the folder (a skill folder that is itself a link, only when it stays inside
its source), and a file with more than one hard link is not read at all, so a link cannot copy a
secret from elsewhere into the store.
Files over `max_file_bytes`, and whole skills over `max_skill_bytes`, are left out. Files are
compared by size and SHA-256 with the stored copies, and only what changed is written, in one
transaction: under `Store(hold=False)` each transaction reopens the database file. Anything
left out gets a `skipped` event saying why; a source folder that is missing also warns (a
`UserWarning` naming it, once) when the middleware is built.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic

from harness.files.filesystem import FileSystem
from harness.files.paths import SHARED_NAMESPACE, FileError
from harness.messages import ModelResponse
from harness.middleware.base import Middleware, ModelHandler, ModelRequest
from harness.middleware.blocks import SKILLS_TAG, escape_block_text
from harness.middleware.params import flag, whole
from harness.middleware.skill_folders import (
    NAME_PATTERN,
    SKILL_FILE,
    SKILLS_ROOT,
    Digest,
    Folder,
    changes,
    disk_folders,
    read_folder,
)

if TYPE_CHECKING:
    from harness.state import RunState

SKILLS_PREFIX = "/skills/"
MAX_FILE_BYTES = 1_000_000
MAX_SKILL_BYTES = 10_000_000
# The fields it holds are short (a description is at most 1,024 characters); YAML parsing of a
# huge frontmatter would cost seconds at every run start.
MAX_FRONTMATTER_CHARS = 64_000
# Agent Skills naming: lowercase letters and digits in hyphen-separated runs.

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

    name: str = pydantic.Field(min_length=1, max_length=64, pattern=NAME_PATTERN)
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
    frontmatter = "\n".join(lines[1:end])
    if len(frontmatter) > MAX_FRONTMATTER_CHARS:
        raise SkillFormatError(
            f"the frontmatter is {len(frontmatter):,} characters long; the limit is "
            f"{MAX_FRONTMATTER_CHARS:,}"
        )
    import yaml  # ~4 MB and 35 ms, only for agents that have skills

    try:
        data = yaml.safe_load(frontmatter)
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
    """The system-prompt section listing the skills; empty when there are none. Descriptions
    are escaped so that one cannot close the block or open another."""
    entries = [
        f"- **{s.name}**: {escape_block_text(' '.join(s.header.description.split()))}\n"
        f"  Read {s.path} for the full instructions."
        for s in skills
    ]
    if not entries:
        return ""
    listing = "\n".join(entries)
    return f"## Skills\n\n{MENU_INTRO}\n\n<{SKILLS_TAG}>\n{listing}\n</{SKILLS_TAG}>"


class Skills(Middleware):
    """Syncs skill folders into `/skills/`, reads their headers at run start, and adds the
    menu to every model call."""

    name = "skills"

    def __init__(
        self,
        sources: Iterable[str | os.PathLike[str]] = (),
        *,
        include_stored: bool = True,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_skill_bytes: int = MAX_SKILL_BYTES,
    ) -> None:
        """Parameters:
        sources: directories on disk, each either one skill folder (it holds a SKILL.md) or a
            folder of skill folders; copied to `/skills/<name>/` at every run start.
        include_stored: also offer skills already under `/skills/` in the store that no source
            provides (default True).
        max_file_bytes: a larger file is not copied (default 1,000,000); a SKILL.md over it
            leaves its skill out.
        max_skill_bytes: a skill whose copied files add up to more is left out (default
            10,000,000).
        """
        self.sources = tuple(Path(s).expanduser() for s in sources)
        for source in self.sources:
            if not source.is_dir():
                # A mistyped path would otherwise show only as a `skipped` event in the store.
                # Python's default filter shows each message once: once per path.
                warnings.warn(
                    f"skills folder {str(source)!r} "
                    f"{'is not a directory' if source.exists() else 'does not exist'}: the "
                    "agent runs without the skills it was to hold",
                    UserWarning,
                    stacklevel=2,
                )
        self.include_stored = flag("skills.include_stored", include_stored)
        self.max_file_bytes = whole("skills.max_file_bytes", max_file_bytes, minimum=1)
        self.max_skill_bytes = whole("skills.max_skill_bytes", max_skill_bytes, minimum=1)

    async def before_agent(self, state: RunState) -> None:
        start = time.perf_counter()
        scratch = state.scratch.setdefault(self.name, {})
        found = disk_folders(self.sources, lambda where, reason: self._skip(state, where, reason))
        folders = [read_folder(f, self.max_file_bytes, self.max_skill_bytes) for f in found]
        for folder in folders:
            for where, reason in folder.skipped:
                self._skip(state, where, reason)
        synced = [f for f in folders if f.files]
        stored = _stored_digests(state)
        to_write, to_delete = changes(synced, stored)
        if to_write or to_delete:
            try:
                await state.run_step("skills", self._sync, state, to_write, to_delete)
            except FileError as exc:  # a broken skill must never break the run
                self._skip(state, SKILLS_ROOT, f"sync failed, nothing was changed: {exc}")
                synced = []  # the menu must not point at files that are not there
        skills = self._load(state, synced, stored, {f.name for f in folders})
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

    async def _sync(
        self, state: RunState, to_write: dict[str, bytes], to_delete: list[str]
    ) -> None:
        start = time.perf_counter()
        files = FileSystem(state.store, state.thread_id, state.run_id, grants=[SKILLS_PREFIX])
        files.write_many(to_write, to_delete)
        state.event(
            self.name, "before_agent", "synced",
            detail={"written": sorted(to_write), "deleted": to_delete},
            ms=state.elapsed_ms(start),
        )  # fmt: skip

    # -- headers ---------------------------------------------------------------------------

    def _load(
        self, state: RunState, synced: list[Folder], stored: dict[str, Digest], on_disk: set[str]
    ) -> list[Skill]:
        """Headers of the synced skills, from what was just read on disk, and, with
        `include_stored`, of the skills in the store that no folder on disk provides (one
        query); a skill left out on disk is not offered from an older stored copy."""
        texts = {
            path: data
            for folder in synced
            for path, data in folder.files.items()
            if path.count("/") == 3 and path.endswith("/" + SKILL_FILE)
        }
        if self.include_stored:
            others = [
                p for p in stored
                if p.count("/") == 3 and p.endswith("/" + SKILL_FILE)
                and p.split("/")[2] not in on_disk
            ]  # fmt: skip
            texts.update(_stored_contents(state, others))
        skills = []
        for path, data in sorted(texts.items()):
            folder = path.split("/")[2]
            try:
                header = parse_header(data.decode("utf-8"), folder)
            except Exception as exc:  # a broken skill must never break the run
                self._skip(state, path, str(exc))
                continue
            skills.append(Skill(header, path))
        return sorted(skills, key=lambda s: s.name)

    def _skip(self, state: RunState, where: str, reason: str) -> None:
        state.event(self.name, "before_agent", "skipped", detail={"path": where, "reason": reason})


def _stored_digests(state: RunState) -> dict[str, Digest]:
    """Path -> (size, SHA-256 hex) of every file under `/skills/` in the store. A file stored
    in chunks (over 256 KiB) is hashed from its chunks, so it is not rewritten every sync."""
    rows = state.store.file_digests(SHARED_NAMESPACE, SKILLS_PREFIX)
    chunked = [r["path"] for r in rows if r["blob_id"] is not None]
    whole = _stored_contents(state, chunked)
    return {
        r["path"]: (
            r["size"],
            hashlib.sha256(whole[r["path"]]).hexdigest() if r["path"] in whole else r["digest"],
        )
        for r in rows
    }


def _stored_contents(state: RunState, paths: list[str]) -> dict[str, bytes]:
    return {path: state.files.read_bytes(path) for path in paths}
