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

from evals.simulated import sightings as module
from evals.simulated.sightings import Role, sightings
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
