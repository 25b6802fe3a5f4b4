"""The reader remembers what a source shows under a role (evals/simulated/sightings.py): a
probe is read again at every retrieval round with the same results in view. From memory it
must answer what reading the source afresh answers, and a source is remembered with the call
that made it: the same text from another tool, or other arguments, is another source. And it
reads a source's values in one order in every process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.simulated import sightings as module
from evals.simulated.sightings import Call, Role, Rules, sightings
from evals.sources.role_rules import IMPORT_RULES
from harness.messages import Message, ToolCall

ROLE = Role("json_key", "the `membership` in the `get_user_details` result",
            ("membership", "get_user_details"), "identifier")  # fmt: skip
RESULT = '{"membership": "gold_2024", "user_id": "ana_ruiz_4410"}'


def _view(tool: str, arguments: dict[str, str]) -> list[Message]:
    made = ToolCall(id="c1", name=tool, arguments=arguments)
    call = Message(role="assistant", content="", tool_calls=(made,))
    return [call, Message(role="tool", content=RESULT, tool_call_id="c1")]


def test_a_source_read_again_answers_as_read_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    view = _view("get_user_details", {"user_id": "ana_ruiz_4410"})
    first = sightings(IMPORT_RULES, ROLE, view)
    read: list[str] = []
    real = module._candidates

    def counted(*args: object) -> object:
        read.append("read")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_candidates", counted)
    assert sightings(IMPORT_RULES, ROLE, view) == first
    assert [s.value for s in first] == ["gold_2024"] and first[0].offset == RESULT.find("gold")
    assert read == []  # from memory
    monkeypatch.setattr(module, "_SHOWN", module.Memo(module.SOURCE_CHARS, len))
    assert sightings(IMPORT_RULES, ROLE, view) == first and read == ["read"]


def test_the_same_text_from_another_call_is_another_source() -> None:
    assert sightings(IMPORT_RULES, ROLE, _view("get_user_details", {"user_id": "x"}))
    assert sightings(IMPORT_RULES, ROLE, _view("get_other_details", {"user_id": "x"})) == []
    again = Role("json_key", "the `membership` in the `get_user_details` result for `user_id` "
                 "`ana_ruiz_4410`", ("membership", "get_user_details"), "identifier")  # fmt: skip
    view = _view("get_user_details", {"user_id": "ana_ruiz_4410"})
    assert [s.value for s in sightings(IMPORT_RULES, again, view)] == ["gold_2024"]


_READ = """
from evals.simulated.sightings import Role, sightings
from evals.sources.role_rules import IMPORT_RULES
from harness.messages import Message
role = Role("user_text", "the `reservation ID` the user wrote", ("reservation ID",), "identifier")
text = "My user ID is mia_kim_4397, and the reservation ID is H9ZU1C."
print([s.value for s in sightings(IMPORT_RULES, role, [Message(role="user", content=text)])])
"""


def test_a_token_and_it_without_its_full_stop_come_in_one_order() -> None:
    """Both name the same role; the reader reads the first. Under hash seeds 0 and 2 a set
    gave them in opposite orders, so a replay's answer changed from process to process."""
    found = {
        subprocess.run([sys.executable, "-c", _READ], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("0", "2")
    }  # fmt: skip
    assert found == {"['H9ZU1C', 'H9ZU1C.']"}


# -- a source's tokens, read once per text ---------------------------------------------------


def _reference(rules: Rules, role: Role, text: str, call: Call | None) -> list[str]:
    """`_candidates` as it read a source before its tokens were remembered."""
    lines = text.splitlines()
    if len(lines) > module.ALL_LINES:
        lines = [lines[i] for i in module._pointed(role, lines, call)]
    tried: set[str] = set()
    found = []
    for line in lines:
        for m in module._TOKEN.finditer(line):
            token = m.group()
            for value in dict.fromkeys((token.rstrip(".:,;"), token, *module._relative(token))):
                if value in tried:
                    continue
                tried.add(value)
                if value and rules.shape(value) == role.shape and \
                        rules.stands(value, text) and rules.distinctive(value):  # fmt: skip
                    found.append(value)
    return found


LINES = ["id: ORD-1234.", "see /src/app.py:12", "ord-1234", "user_7 and user_8", "x = 41.5",
         "line 65 of core.py", "  65\tdef parse_args(argv):", "ORD-1234 ORD-1234.", "yes",
         "/home/<user>/src/app.py", "total: 9,474.58", "`core.py` says build_7", ""]  # fmt: skip
SHAPES = ["identifier", "number", "file path", "word", "date"]


@settings(max_examples=400, deadline=None)
@given(
    rows=st.lists(st.sampled_from(LINES), min_size=1, max_size=80),
    shapes=st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3),
    phrase=st.sampled_from(["the name `core.py` holds", "line 65 of `core.py`", "the id"]),
)
def test_a_sources_candidates_are_those_read_afresh_for_every_role(
    rows: list[str], shapes: list[str], phrase: str
) -> None:
    text = "\n".join(rows)
    call = Call("bash", {"command": "sed -n '60,80p' core.py"})
    for shape in shapes:  # one text read for several roles: the later ones from memory
        role = Role("listing", phrase, (), shape)
        fresh = _reference(IMPORT_RULES, role, text, call)
        assert list(module._candidates(IMPORT_RULES, role, text, call)) == fresh


class _Counting:
    """The import's rules, counting what is asked of them."""

    def __init__(self) -> None:
        self.stands_asked: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(IMPORT_RULES, name)

    def stands(self, value: str, text: str) -> bool:
        self.stands_asked.append((value, text))
        return IMPORT_RULES.stands(value, text)

    def asked(self, value: str) -> list[str]:
        return [text for v, text in self.stands_asked if v == value]


def test_a_value_is_tested_once_per_text_and_again_in_another_text() -> None:
    rules = _Counting()
    role = Role("listing", "the id", (), "identifier")
    one, other = "build_7 shipped\nbuild_7 again", "then\nbuild_7 "
    assert list(module._candidates(rules, role, one, None)) == ["build_7"]  # type: ignore[arg-type]
    assert list(module._candidates(rules, role, one, None)) == ["build_7"]  # type: ignore[arg-type]
    assert rules.asked("build_7") == [one]
    # The same lines in another text: its own tokens and tests, not the first text's.
    assert list(module._candidates(rules, role, other, None)) == ["build_7"]  # type: ignore[arg-type]
    assert rules.asked("build_7") == [one, other]
