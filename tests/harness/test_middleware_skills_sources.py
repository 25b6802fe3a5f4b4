"""Skills: what a skill folder on disk may bring into the store. Links leading out of it and
hard links are not followed, files and skills over the size limits are left out, each with the
reason in an event, and no secret outside the folder reaches the store."""

from pathlib import Path
from typing import Any

import pytest
from helpers.skills import skill_events, write_skill

from harness import Store
from harness.files.filesystem import FileSystem
from harness.middleware.skills import SkillFormatError, Skills, parse_header
from harness.models import ScriptedModel


def all_stored_bytes(store: Store) -> bytes:
    return b"".join(bytes(r["content"]) for r in store.files.rows())


def secret_at(path: Path, text: str) -> None:
    """A file outside the skills folder that nothing may copy into the store."""
    path.parent.mkdir(parents=True)
    path.write_text(text)


def synced(bare_agent: Any, root: Path) -> tuple[Store, dict[str, str]]:
    """The store after one run with the skills of `root`, and why each file left out was."""
    store = Store(":memory:")
    bare_agent(ScriptedModel(["ok"]), middleware=[Skills([root])], store=store).run_sync("go")
    return store, skipped(store)


def skipped(store: Store) -> dict[str, str]:
    return {Path(e["path"]).name: e["reason"] for e in skill_events(store, "skipped")}


LINKED = "---\nname: linked\ndescription: Links.\n---\n"


def test_symlinks_that_leave_the_skill_folder_are_not_followed(bare_agent, tmp_path) -> None:
    secret = tmp_path / "home" / ".aws" / "credentials"
    secret_at(secret, "aws_secret_access_key = SECRET-KEY-123\n")
    root = tmp_path / "skills"
    skill = write_skill(root, "linked", LINKED, {"references/notes.md": "inside\n"})
    (skill / "creds.txt").symlink_to(secret)
    (skill / "relative.txt").symlink_to(Path("..") / ".." / "home" / ".aws" / "credentials")
    (skill / "home").symlink_to(secret.parent, target_is_directory=True)
    (skill / "notes-link.md").symlink_to(skill / "references" / "notes.md")  # stays inside
    outside_skill = write_skill(tmp_path / "elsewhere", "x", "---\nname: stolen\n---\n")
    (root / "stolen").mkdir()
    (root / "stolen" / "SKILL.md").symlink_to(outside_skill / "SKILL.md")

    store, reasons = synced(bare_agent, root)
    assert b"SECRET-KEY-123" not in all_stored_bytes(store)
    assert FileSystem(store, "t").list_files("/skills") == [
        "/skills/linked/SKILL.md",
        "/skills/linked/notes-link.md",
        "/skills/linked/references/notes.md",
    ]
    outside = "symbolic link leading outside the skill folder: not followed"
    assert reasons["creds.txt"] == outside and reasons["relative.txt"] == outside
    assert reasons["home"] == "symbolic link to a directory: not followed"
    assert reasons["SKILL.md"] == outside
    assert reasons["stolen"] == "skill left out: no SKILL.md that can be copied"


def test_a_skill_folder_that_links_out_of_its_source_is_not_followed(bare_agent, tmp_path) -> None:
    header = "---\nname: dotfiles\ndescription: x\n---\n"
    private = write_skill(tmp_path / "home", "dotfiles", header,
                          {"credentials": "aws_secret_access_key = SECRET-KEY-789\n"})  # fmt: skip
    root = tmp_path / "skills"
    write_skill(root, "real", "---\nname: real\ndescription: Real.\n---\n")
    (root / "leak").symlink_to(private, target_is_directory=True)

    store, reasons = synced(bare_agent, root)
    assert b"SECRET-KEY-789" not in all_stored_bytes(store)
    assert FileSystem(store, "t").list_files("/skills") == ["/skills/real/SKILL.md"]
    assert reasons == {
        "leak": f"symbolic link leading outside {root}: not followed ({private.resolve()})"
    }


def test_hard_links_in_a_skill_folder_are_not_copied(bare_agent, tmp_path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret_at(secret, "PRIVATE-KEY-456\n")
    root = tmp_path / "skills"
    skill = write_skill(root, "linked", LINKED, {"notes.md": "inside\n"})
    (skill / "key.txt").hardlink_to(secret)  # same disk: looks like a regular file
    (skill / "twin.md").hardlink_to(skill / "notes.md")  # inside, but one file with two names

    store, reasons = synced(bare_agent, root)
    assert b"PRIVATE-KEY-456" not in all_stored_bytes(store)
    assert FileSystem(store, "t").list_files("/skills") == ["/skills/linked/SKILL.md"]
    linked = "hard link (2 names for one file): not copied"
    assert reasons == {"key.txt": linked, "notes.md": linked, "twin.md": linked}


def test_size_limits_leave_files_and_skills_out_with_a_reason(bare_agent, tmp_path) -> None:
    root = tmp_path / "skills"
    ok = "---\nname: {}\ndescription: Fine.\n---\n"
    write_skill(root, "big-file", ok.format("big-file"), {"data.csv": "x" * 2_000})
    write_skill(root, "big-skill", ok.format("big-skill"),
                {f"part{i}.md": "y" * 900 for i in range(5)})  # fmt: skip
    write_skill(root, "big-header", ok.format("big-header") + "z" * 3_000)
    store = Store(":memory:")
    model = ScriptedModel(["ok"])
    middleware = [Skills([root], max_file_bytes=1_500, max_skill_bytes=3_000)]
    bare_agent(model, middleware=middleware, store=store).run_sync("go")
    assert skipped(store) == {
        "data.csv": "file not copied: 2,000 bytes, over the limit of 1,500 per file "
        "(max_file_bytes)",
        "big-skill": "skill left out: its files add up to more than 3,000 bytes, the limit "
        "per skill (max_skill_bytes)",
        "big-header": "skill left out: its SKILL.md is 3,044 bytes, over the limit of 1,500 "
        "per file",
    }
    assert FileSystem(store, "t").list_files("/skills") == ["/skills/big-file/SKILL.md"]
    prompt = model.calls[0].params.system_prompt
    assert "**big-file**" in prompt and "big-skill" not in prompt and "big-header" not in prompt


def test_a_huge_frontmatter_is_refused_before_yaml_parses_it() -> None:
    text = "---\nname: huge\ndescription: x\nfiller: '" + "a" * 70_000 + "'\n---\n"
    with pytest.raises(SkillFormatError, match="frontmatter is 70,036 characters long; the lim"):
        parse_header(text, "huge")
