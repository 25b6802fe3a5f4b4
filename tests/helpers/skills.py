"""Skill folders on disk and what the skills middleware reported, for the skills tests."""

from __future__ import annotations

from pathlib import Path

from harness import Store
from helpers.store import events


def write_skill(root: Path, folder: str, text: str, extra: dict[str, str] | None = None) -> Path:
    skill = root / folder
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(text)
    for rel, content in (extra or {}).items():
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text(content)
    return skill


def skill_events(store: Store, action: str) -> list[dict]:
    return [e["detail"] for e in events(store, middleware="skills", action=action)]
