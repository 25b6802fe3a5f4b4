"""A short source's values of a shape are found once per shape (evals/simulated/sightings.py
`_Tokens.all_of_shape`): every role of that shape asks the same. From memory they must be
what testing each value of each line afresh finds, in the same order, for every shape."""

from __future__ import annotations

from evals.simulated import sightings as module
from evals.simulated.sightings import Role
from evals.sources.role_rules import IMPORT_RULES

_TEXTS = (
    '{"membership": "gold_2024", "user_id": "ana_ruiz_4410", "total": 1250}',
    "src/app.py:41:    retries = 3\nsrc/app.py:42:    timeout = 30\n./tests/test_app.py",
    "Order #W2378156 placed 2024-05-14 for $1,250.00.\nThe order W2378156 ships from /srv/a.py.",
    "is Yes no 42 42 42\n\n",
    "",
)
_SHAPES = ("identifier", "number", "file path", "date", "word", "")


def _afresh(text: str, shape: str) -> list[str]:
    """The values of `shape` that fit, line by line, each once: as read before the memo."""
    lines = text.splitlines()
    tried: set[str] = set()
    out = []
    for line in lines:
        for value in module._line_values(line):
            if value in tried:
                continue
            tried.add(value)
            stands = IMPORT_RULES.stands(value, text) and IMPORT_RULES.distinctive(value)
            if IMPORT_RULES.shape(value) == shape and stands:
                out.append(value)
    return out


def test_values_of_a_shape_from_memory_are_those_found_afresh() -> None:
    for _ in range(2):  # the second round is answered from memory
        for text in _TEXTS:
            for shape in _SHAPES:
                role = Role("json_key", "the `x` in the `t` result", (), shape)
                got = list(module._candidates(IMPORT_RULES, role, text, None))
                assert got == _afresh(text, shape), (text, shape)
    some = [list(module._candidates(IMPORT_RULES, Role("listing", "p", (), s), _TEXTS[2], None))
            for s in _SHAPES]  # fmt: skip
    assert any(some)  # the texts hold values of these shapes
