"""A JSON result is parsed once for all the values it shows (evals/sources/roles.py): each
value's role is the one found parsing afresh, and another text is parsed on its own."""

from __future__ import annotations

import json

import pytest

import evals.sources.roles as roles
from evals.sources.roles import Call, role_of

METHODS = {"credit_card_4421486": {"brand": "visa", "amount": 150},
           "gift_card_1": {"brand": "none", "amount": 75}}  # fmt: skip
RESULT = json.dumps(
    {"user_id": "ana_ruiz_4410", "membership": "gold_2024", "payment_methods": METHODS}
)
CALL = Call("get_user_details", {"user_id": "ana_ruiz_4410"})
VALUES = ["ana_ruiz_4410", "gold_2024", "visa", "150", "75", "credit_card_4421486", "none"]


def test_each_value_has_the_role_found_parsing_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    loads = json.loads
    monkeypatch.setattr(roles._PARSED, "_answers", type(roles._PARSED._answers)())
    monkeypatch.setattr(json, "loads", lambda text: parsed.append(text) or loads(text))
    found = [role_of(v, RESULT, "tool", CALL, None) for v in VALUES]
    assert len(parsed) == 1  # once for all its values
    for value, role in zip(VALUES, found, strict=True):
        monkeypatch.setattr(roles._PARSED, "_answers", type(roles._PARSED._answers)())
        assert role_of(value, RESULT, "tool", CALL, None) == role
    assert found[1] is not None and found[1]["phrase"].startswith("the `membership`")


def test_another_text_is_parsed_on_its_own() -> None:
    other = RESULT.replace("gold_2024", "silver_2025").replace('"membership"', '"tier"')
    assert role_of("gold_2024", RESULT, "tool", CALL, None) is not None
    assert role_of("gold_2024", other, "tool", CALL, None) is None
    found = role_of("silver_2025", other, "tool", CALL, None)
    assert found is not None and found["phrase"].startswith("the `tier`")
    assert role_of("x", "[not json", "tool", CALL, None) is None
