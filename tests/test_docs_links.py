"""Every relative link in README.md and docs/*.md leads to a file that exists, and every
`#anchor` to a heading of that file: moving text between pages must not strand a link."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCED.sub("", path.read_text())
    return {slug(m) for m in re.findall(r"^#+\s+(.+)$", text, re.M)}


def links(path: Path) -> list[str]:
    return [m for m in LINK.findall(FENCED.sub("", path.read_text())) if "://" not in m]


def test_slugs_follow_github() -> None:
    assert slug("A year of Mondays: memory that stays small and current") == (
        "a-year-of-mondays-memory-that-stays-small-and-current"
    )
    assert slug("Set up: two commands") == "set-up-two-commands"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for link in links(doc):
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            broken.append(f"{link}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link}: no such heading")
    assert not broken, broken
