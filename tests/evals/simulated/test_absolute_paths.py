"""The reader finds an absolute path by its role, also one whose user name the import redacted
(`/home/<user>/...`, evals/sources/redact.py): a Claude Code session's Glob and `find` list
absolute paths, and the agent reads the file it found there. Hand-written fixtures."""

from __future__ import annotations

from evals.simulated.sightings import Role, sightings
from evals.sources.role_rules import IMPORT_RULES
from evals.sources.roles import Call, role_of
from harness.messages import Message, ToolCall

ROOT = "/home/<user>/proj"
LISTING = "\n".join(
    f"{ROOT}/{name}" for name in ("core/heap.h", "parser/cmd_space.h", "parser/cmd_class.h")
)


def _seen(value: str, text: str, tool: str, args: dict[str, str]) -> list[str]:
    found = role_of(value, text, "tool", Call(tool, args), None)
    assert found is not None, value
    role = Role(found["kind"], found["phrase"], tuple(found["terms"]), found["shape"])
    made = ToolCall(id="c1", name=tool, arguments=args)
    messages = [
        Message(role="user", content="Find the space command's header."),
        Message(role="assistant", content="", tool_calls=(made,)),
        Message(role="tool", content=text, tool_call_id="c1"),
        Message(role="user", content=f"What is {found['phrase']}?"),
    ]
    return [s.value for s in sightings(IMPORT_RULES, role, messages)]


def test_a_redacted_home_path_a_glob_listed_is_read_by_its_role() -> None:
    value = f"{ROOT}/parser/cmd_space.h"
    assert _seen(value, LISTING, "Glob", {"pattern": "parser/**/*.h"}) == [value]


def test_an_absolute_path_find_listed_is_read_with_its_slash() -> None:
    listing = "/srv/app/core/heap.h\n/srv/app/parser/cmd_space.h\n/srv/app/parser/cmd_class.h"
    value = "/srv/app/parser/cmd_class.h"
    assert _seen(value, listing, "Bash", {"command": "find /srv/app -name '*.h'"}) == [value]
