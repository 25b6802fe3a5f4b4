"""The part of a tool result roles are found in, kept per result and call arguments
(evals/sources/roles._body): from memory it is what reading the result again gives, and a
result read for other arguments is read again, not recalled (SWE-agent's viewer names its
file as the call spelled it)."""

from __future__ import annotations

from typing import Any

from evals.sources.roles import _body, result_body
from evals.sources.swe_roles import swe_listing

_VIEW = (
    "[File: /tally/src/tally/ledger.py (212 lines total)]\n(10 more lines above)\n"
    "11:def settle_account(ledger):\n12:    return ledger.close()\n"
)
_TEXTS = (
    _VIEW,
    "<returncode>0</returncode>\n<output>\nsrc/app.py:3:x = 1\n</output>",
    "<output>\n</output>",
    '{"user_id": "mia_li_3668"}',
    "",
    'Found 2 matches for "settle" in /tally/src/tally/ledger.py:\nLine 11: def settle_account\n',
)
_ARGUMENTS: tuple[dict[str, Any], ...] = (
    {},
    {"path": "src/tally/ledger.py"},
    {"path": "/tally/src/tally/ledger.py"},
    {"command": "open src/tally/ledger.py 11"},
    {"command": "ls", "timeout": 30},
    {"command": "ls", "timeout": 30.0},
    {"nested": {"path": "src/tally/ledger.py"}},
)


def test_the_body_from_memory_is_the_body_read_again() -> None:
    for _ in range(2):  # the second round is answered from memory
        for text in _TEXTS:
            for arguments in _ARGUMENTS:
                want = swe_listing(result_body(text), arguments)
                assert _body(text, arguments) == want, (text, arguments)


def test_other_arguments_read_the_result_again() -> None:
    spelled = _body(_VIEW, {"path": "src/tally/ledger.py"})
    printed = _body(_VIEW, {})
    assert "src/tally/ledger.py:11:" in spelled and spelled.startswith("src/")
    assert printed.startswith("/tally/src/tally/ledger.py:11:")
