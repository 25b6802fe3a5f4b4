"""Retrieval by role (evals/simulated/shapes.py, retrieval.py, queries.py): a probe named by
role is recognised by its role and the value's shape, searched for in saved files with them
(never with the question's step numbers), and a coding agent's recorded read command may run
again."""

import asyncio

import pytest
import regex
from role_scenario import PAYMENT, role_scenario

from evals.run.replay import replay
from evals.scenarios.from_file import load_scenario_file
from evals.simulated.queries import is_lookup
from evals.simulated.shapes import role_cue, role_query


def _first(cue, text: str) -> str | None:
    for pattern in cue.patterns:
        found = regex.search(pattern, text, regex.MULTILINE)
        if found:
            return found.group(1)
    return None


def test_a_role_cue_reads_a_key_a_listing_and_a_grep_hit_but_not_prose() -> None:
    key = role_cue(["payment_id"], "id")
    assert _first(key, '    "payment_id": "credit_card_4421907",') == "credit_card_4421907"
    assert _first(key, "payment_id = gift_card_77") == "gift_card_77"
    # A question states the role in prose: nothing there is read as the value.
    assert _first(key, "What is the payment_id of user mia_li_3668?") is None
    line = role_cue(["def split_exclude"], "line")
    assert _first(line, "django/db/models/sql/query.py:1294:    def split_exclude(self,") == "1294"
    assert _first(line, "  1294\t    def split_exclude(self,") == "1294"


def test_role_queries_search_with_the_role_and_the_shape() -> None:
    first = role_query(["payment_id", "mia_li_3668"], "id", 0)
    assert first is not None and "payment_id" in first
    assert regex.search(first, '"payment_id": "credit_card_4421907"')
    assert role_query(["payment_id", "mia_li_3668"], "id", 1) == "mia_li_3668"
    assert role_query([], "id", 0) is None


def test_retrieval_finds_an_offloaded_value_by_role_never_by_step_number(tmp_path) -> None:
    scenario = load_scenario_file(role_scenario(tmp_path))
    out = asyncio.run(replay(scenario, "offload", window=16_000, reader="ideal"))
    assert out.store is not None
    greps = [c["arguments"]["pattern"] for c in out.store.messages.all_tool_calls()
             if c["name"] == "grep"]  # fmt: skip
    out.store.close()
    roles = ("payment_id", "gift_card_id", "reservation_id")
    assert greps and all(any(r in g for r in roles) for g in greps)
    assert not any("24" in g or "Step" in g for g in greps)
    pay = next(p for p in out.probes if p.id == "pay")
    assert pay.correct and pay.answer == PAYMENT and pay.retrieval_found is True


@pytest.mark.parametrize(
    ("name", "command", "reads"),
    [
        ("bash", "cat django/db/models/sql/query.py", True),
        ("bash", "grep -n 'def split_exclude' django/db/models/sql/query.py", True),
        ("bash", "sed -n '1280,1300p' django/db/models/sql/query.py", True),
        ("bash", "sed -i 's/a/b/' query.py", False),
        ("bash", "python manage.py migrate", False),
        ("bash", "cat a.py > b.py", False),
        ("Read", "", True),
        ("Grep", "", True),
    ],
)
def test_a_recorded_read_command_may_run_again(name: str, command: str, reads: bool) -> None:
    assert is_lookup(name, {"command": command} if command else {}) is reads


def test_the_imports_shapes_read_a_whole_name_or_path() -> None:
    # `identifier` and `file path` are what an import writes (evals/sources/values.py); read
    # as any run of characters, a name was cut to its first letter.
    name = role_cue(["COLUMN_RELATED_METHODS"], "identifier")
    assert _first(name, "COLUMN_RELATED_METHODS = add_columns, keep") == "add_columns"
    # A grep hit's line number opens its line, but a name is not all digits.
    module = role_cue(["pkg.matrix_utilities"], "identifier")
    hit = "pkg/core.py:21:from pkg.matrix_utilities import matrix_transpose"
    assert _first(module, hit) != "21"
    path = role_cue(["file"], "file path")
    assert _first(path, "file: astropy/table/tests/test_table.py") == (
        "astropy/table/tests/test_table.py"
    )
    assert regex.fullmatch(role_query(["x"], "file path", 0) or "", "x: core.py")
