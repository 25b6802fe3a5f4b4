"""Roles that code gives a value (evals/sources/code_roles.py): the module an import takes a
name from, the value a line assigns or passes by keyword, the one function a numbered line
calls, in a file a command printed or in code the user pasted; and an amount after a currency
sign, which stands as a value of its own."""

from __future__ import annotations

from evals.sources.roles import role_of
from evals.sources.text_roles import only_of_shape, text_role


def _bash(value: str, text: str, command: str) -> str | None:
    found = text_role(value, text, "bash", {"command": command}, "the `bash` result")
    return found["phrase"] if found else None


def test_the_module_an_import_line_takes_a_name_from() -> None:
    text = '"""Cart totals."""\nfrom shop.money_utils import round_cents, Money\n'
    phrase = _bash("shop.money_utils", text, "cat shop/cart.py")
    assert phrase == "the module that line 2 of `shop/cart.py` imports `round_cents` from"


def test_a_module_the_files_own_path_spells_is_no_recall() -> None:
    text = "from shop.money import round_cents\n"
    assert _bash("shop.money", text, "cat shop/money/cart.py") is None


def test_the_one_name_an_import_line_takes() -> None:
    text = "import os\nfrom shop.tax_tables import lookup_rate\n"
    phrase = _bash("lookup_rate", text, "cat shop/cart.py")
    assert phrase == "the name that line 2 of `shop/cart.py` imports from `shop.tax_tables`"


def test_a_call_is_no_value_of_the_name_it_is_assigned_to() -> None:
    text = "def totals(order_lines):\n    due = sum_lines(order_lines, tax_rate)\n"
    phrase = _bash("sum_lines", text, "cat shop/cart.py")
    assert phrase == "the function line 2 of `shop/cart.py` calls"  # not "the value of `due`"


def test_the_one_function_a_numbered_line_calls() -> None:
    text = "   471\t    if field_value is None:\n   472\t        val = field.get_default()\n"
    phrase = _bash("field.get_default", text, "nl -ba shop/models.py | sed -n '471,472p'")
    assert phrase == "the function line 472 of `shop/models.py` calls"


def test_a_line_calling_two_functions_names_neither() -> None:
    text = "   9\t    out = render_row(pick_cells(row_items))\n"
    assert _bash("render_row", text, "nl -ba shop/view.py") is None


def test_a_short_assigned_name_is_named_by_its_whole_line_when_it_stands_once() -> None:
    text = "   472\t    val = field.get_default()\n   473\t    return val\n"
    phrase = _bash("472", text, "nl -ba shop/models.py | sed -n '472,473p'")
    assert phrase == "the line number of `val = field.get_default()` in `shop/models.py`"
    twice = text + "   480\t    val = field.get_default()\n"
    assert _bash("472", twice, "nl -ba shop/models.py") is None  # which of the two?


def test_code_the_user_pasted_names_what_it_assigns_and_passes() -> None:
    issue = (
        "Serializing loses precision since release 2019:\n\n"
        "from shop.fields import Duration\n"
        "cfg.encoding_mode = 'STRICT_UTF8'\n"
        "obj = dict(span=timedelta(milliseconds=345))\n"
    )
    assert role_of("STRICT_UTF8", issue, "user", None, None)["phrase"] == (
        "the value the user's code assigns to `cfg.encoding_mode`"
    )
    assert role_of("345", issue, "user", None, None)["phrase"] == (
        "the value the user's code passes as `milliseconds`"
    )
    assert role_of("shop.fields", issue, "user", None, None)["phrase"] == (
        "the module that the user's code imports `Duration` from"
    )


def test_a_name_assigned_twice_in_the_users_code_names_no_value() -> None:
    issue = "cfg.level_name = 'LEVEL_ONE'\nrun()\ncfg.level_name = 'LEVEL_TWO'\n"
    assert role_of("LEVEL_ONE", issue, "user", None, None) is None


def test_an_amount_after_a_currency_sign_stands_as_its_own_value() -> None:
    said = "I'm willing to pay up to $600 for the upgrade."
    assert only_of_shape("600", said)
    # A plain number the user gave is not named by its shape alone (hygiene.shape_refusal).
    assert role_of("600", said, "user", None, None) is None
