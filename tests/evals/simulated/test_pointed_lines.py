"""The lines of a long listing a role points at (evals/simulated/sightings.py, `_pointed`) are
found with one search a line: the same lines as testing each quoted word and line number in
turn, whatever the role quotes (regex characters included) and the listing holds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.simulated import sightings as module
from evals.simulated.sightings import Call, Role

WORDS = ["core.py", "a+b", "(x)", "12", "7", "limit", "[a-z]", "$HOME", "\\d", "."]
LINES = st.lists(st.sampled_from(["  12\tx = 1", "7 limit", "a+b", "(x) 123", "core.py:7", "",
                                  "[a-z] $HOME", "\\d 70", "x.y"]), max_size=30)  # fmt: skip


def _reference(role: Role, lines: list[str], call: Call | None) -> list[int]:
    """`_pointed` as it tested each quoted word and each line number on its own."""
    quoted = re.findall(r"`([^`\n]+)`", role.phrase)
    numbers = [int(n) for n in re.findall(r"\bline (\d+)\b", role.phrase)]
    command = " ".join(str(v) for v in call.arguments.values()) if call else ""
    starts = {1, *(int(a) for a in re.findall(r"\b(\d+)\s*,", command))}
    at = {n - a for n in numbers for a in starts if 0 <= n - a < len(lines)}
    wanted = [re.compile(rf"(?<!\d){n}(?!\d)") for n in numbers]
    return [
        i for i, line in enumerate(lines)
        if i in at or any(q in line for q in quoted) or any(w.search(line) for w in wanted)
    ]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    quoted=st.lists(st.sampled_from(WORDS), max_size=3),
    numbers=st.lists(st.sampled_from(["7", "12", "007", "70"]), max_size=2),
    lines=LINES,
    command=st.sampled_from(["", "sed -n '5,20p' core.py", "cat core.py"]),
)
def test_the_lines_pointed_at_are_those_each_test_finds(
    quoted: list[str], numbers: list[str], lines: list[str], command: str
) -> None:
    phrase = " ".join([*(f"`{q}`" for q in quoted), *(f"line {n}" for n in numbers)])
    role = Role("listing", f"the name {phrase} defines", (), "identifier")
    call = Call("bash", {"command": command}) if command else None
    assert module._pointed(role, lines, call) == _reference(role, lines, call)
