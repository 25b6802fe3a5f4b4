"""The reader's role rules answer a repeated question from memory: a replay asks the same
value of the same source at every probe and arm, and naming its role is the import's costliest
work (evals/sources/role_rules.py)."""

from __future__ import annotations

import json

import pytest

from evals.sources import role_rules
from evals.sources.role_rules import ImportRules

_RESULT = json.dumps({"user": {"user_id": "mia_li_3668", "payment_id": "credit_card_4421983"}})


def test_a_repeated_question_is_answered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = ImportRules()
    calls: list[str] = []
    real = role_rules.role_of

    def counted(value: str, *args: object) -> object:
        calls.append(value)
        return real(value, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(role_rules, "role_of", counted)
    args = {"user_id": "mia_li_3668"}
    first = rules.phrase("credit_card_4421983", _RESULT, "get_user_details", args, False, None)
    again = rules.phrase("credit_card_4421983", _RESULT, "get_user_details", dict(args), False,
                         None)  # fmt: skip
    assert first is not None and "payment_id" in first
    assert again == first and calls == ["credit_card_4421983"]
    other = rules.phrase("credit_card_4421983", _RESULT, "get_user_details", {}, False, None)
    assert len(calls) == 2 and other is not None  # other arguments: asked again, not recalled
