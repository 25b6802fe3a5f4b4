"""Roles a command's output gives a value that a line of it does not (evals/sources/
command_roles.py), found on real coding trajectories where such values were rejected as
`no_role`: a numbered line that says nothing, named by its neighbour; a failing test; the
version a quoted key is given; a commit hash by its subject; a value after a label inside a
line; `grep -n` on one file; the size `ls -l` printed; and in a user's pasted traceback or
code, a frame's line number and a dict literal's value. Every fixture is written by hand."""

from __future__ import annotations

import re

from evals.sources.to_scenario import trace_to_scenario
from evals.sources.trace import Trace, TraceMessage, TraceToolCall


def _bash(id_: str, command: str, output: str) -> list[TraceMessage]:
    call = TraceMessage("assistant", "", [TraceToolCall(id_, "bash", {"command": command})])
    return [call, TraceMessage("tool", output, tool_call_id=id_)]


def _cued(probe: dict, text: str) -> dict:
    """`probe`, once its cue (built from its role) is seen to find its answer in `text`."""
    (pattern,) = probe["cue"]["patterns"]
    assert re.search(pattern, text)[1] == probe["answer"]  # type: ignore[index]
    return probe


def _question(value: str, source: tuple[str, str], use: str, task: str = "Fix the refunds.") -> \
        str | None:  # fmt: skip
    """The question of the probe of `value`, which `source` (a command and its output) showed
    and a later command (`use`) ran, a step apart; None when no probe was made. The probe's
    cue finds the value in the output."""
    trace = Trace("shop", "mini-swe-agent", "shop.traj.json")
    trace.messages = [
        TraceMessage("user", task),
        *_bash("a", *source),
        *_bash("b", "ls shop", "cart.py\nrefunds.py"),
        *_bash("c", use, "ok"),
    ]
    doc = trace_to_scenario(trace)
    asked = [_cued(p, source[1])["question"] for p in doc["probes"] if p["answer"] == value]
    return asked[0] if asked else None


def test_a_blank_numbered_line_is_named_by_the_line_before_it() -> None:
    listing = (
        "   240\t    def total(self):\n   241\t        return sum_lines(self.items)\n   242\t\n"
        "   243\tdef refund_order(order):\n"
    )
    asked = _question("242", ("nl -ba shop/cart.py | sed -n '240,243p'", listing),
                      "sed -n '242,250p' shop/cart.py")  # fmt: skip
    assert asked == "What is the line number of the blank line right after " \
        "`return sum_lines(self.items)` in `shop/cart.py`?"  # fmt: skip


def test_a_line_that_says_nothing_is_named_by_the_line_after_it_when_the_one_before_repeats() \
        -> None:  # fmt: skip
    listing = (
        "   310\t        )\n   311\t    else:\n"
        "   312\t        refund_lines = split_refund(order_total)\n   320\t        )\n"
    )
    asked = _question("311", ("nl -ba shop/refunds.py | sed -n '310,320p'", listing),
                      "sed -n '311,330p' shop/refunds.py")  # fmt: skip
    assert asked == "What is the line number of the `else:` right before " \
        "`refund_lines` in `shop/refunds.py`?"  # fmt: skip


def test_a_failing_test_is_named_by_its_file_and_else_by_its_error() -> None:
    output = (
        "collected 9 items\n\n"
        "FAILED tests/test_cart.py::test_refund_rounds_down - AssertionError: 4.99 != 5.0\n"
        "FAILED tests/test_cart.py::test_total_with_coupon - KeyError: 'coupon_code'\n"
        "FAILED tests/test_tax.py::test_vat_rate_for_norway - ZeroDivisionError\n"
        "3 failed, 6 passed in 0.41s\n"
    )
    source = ("pytest tests", output)
    asked = _question("test_vat_rate_for_norway", source,
                      "pytest tests/test_tax.py::test_vat_rate_for_norway -x")  # fmt: skip
    assert asked == "What is the test in `tests/test_tax.py` that `pytest tests` reported failing?"
    asked = _question("test_refund_rounds_down", source,
                      "pytest tests/test_cart.py::test_refund_rounds_down -x")  # fmt: skip
    assert asked == "What is the test in `tests/test_cart.py` that `pytest tests` reported " \
        "failing with `AssertionError: 4.99 != 5.0`?"  # fmt: skip
    # A message cut short ("AssertionError...") that begins another test's tells neither apart
    cut = output.replace("4.99 != 5.0", "...").replace("KeyError: 'coupon_code'", "AssertionError")
    assert _question("test_refund_rounds_down", ("pytest tests", cut),
                     "pytest tests/test_cart.py::test_refund_rounds_down -x") is None  # fmt: skip


def test_the_version_a_listing_gives_a_quoted_key() -> None:
    listing = '{\n  "dependencies": {\n    "lodash": "^4.17.21",\n    "left-pad": "1.3.0"\n  }\n}\n'
    asked = _question("4.17.21", ("cat package.json", listing), "npm install lodash@4.17.21")
    assert asked == "What is the version `package.json` gives `lodash`?"


def test_the_value_a_dict_literal_of_the_users_code_gives_a_key() -> None:
    task = "Slicing breaks:\n\n    header = {'CDELT3': 0.055, 'NAXIS': 3, 'CRVAL3': 1.05}\n"
    trace = Trace("wcs", "mini-swe-agent", "wcs.traj.json")
    trace.messages = [
        TraceMessage("user", task),
        *_bash("a", "ls shop", "cart.py"),
        *_bash("b", "python -c 'print(0.055 * 2)'", "0.11"),
    ]
    (probe,) = [
        _cued(p, task) for p in trace_to_scenario(trace)["probes"] if p["answer"] == "0.055"
    ]
    assert probe["question"] == "What is the value the user's code gives `CDELT3`?"


def test_a_commit_hash_is_named_by_its_subject() -> None:
    log = "9f3c2ab1 Round refunds down\n77de0a41 Add cart totals\n"
    asked = _question("77de0a41", ("git log --oneline -2", log), "git show 77de0a41")
    assert asked == "What is the hash `git log --oneline -2` printed for the commit " \
        "`Add cart totals`?"  # fmt: skip


def test_a_value_after_a_label_inside_a_line_of_a_programs_output() -> None:
    output = "checked 3 orders; order total is 1288.40, 2 refunds pending\n"
    asked = _question("1288.40", ("python check_total.py", output),
                      "python -c 'print(1288.40 * 0.2)'")  # fmt: skip
    assert asked == "What is the `order total` `python check_total.py` printed?"


def test_a_line_of_code_in_a_listing_gives_no_label_role() -> None:
    # `refunds: list = split_refund(...)` is code: `refunds` is not what `split_refund` is
    listing = "refunds: split_refund_v2(order_total)\nlate: split_refund_v3(order_total)\n"
    # imported here: the module is new, and each test is to fail on the old code
    from evals.sources.command_roles import command_role

    args = {"command": "cat shop/refunds.py"}
    assert command_role("split_refund_v2", listing, "bash", args, "the `bash` result") is None


def test_grep_n_on_one_file_names_the_line_by_what_it_says() -> None:
    output = "157:class RefundPolicy:\n204:REFUND_WINDOW_DAYS = 30\n"
    asked = _question("157", ('grep -n "class Refund" shop/refunds.py', output),
                      "sed -n '157,170p' shop/refunds.py")  # fmt: skip
    assert asked == "What is the line number of `class RefundPolicy` in `shop/refunds.py`?"


def test_the_size_ls_l_printed_is_named_by_its_file() -> None:
    output = (
        "total 52\n-rw-r--r-- 1 dev dev 48213 Mar  3 10:12 orders.csv\n"
        "-rw-r--r-- 1 dev dev   912 Mar  3 10:12 notes.txt\n"
    )
    asked = _question("48213", ("ls -l data", output), "head -c 48213 data/orders.csv")
    assert asked == "What is the size in bytes of `orders.csv` that `ls -l data` listed?"


def test_a_frame_of_a_traceback_the_user_pasted_names_its_line_number() -> None:
    task = (
        "Refund 1042 fails since v2.3:\n\nTraceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/shop/cart.py", line 218, in refund\n'
        "    return round_down(total)\nValueError: negative total\n"
    )
    trace = Trace("shop", "mini-swe-agent", "shop.traj.json")
    trace.messages = [
        TraceMessage("user", task),
        *_bash("a", "ls shop", "cart.py"),
        *_bash("b", "nl -ba shop/cart.py | sed -n '218,220p'", "   218\t    return 1"),
    ]
    (probe,) = [_cued(p, task) for p in trace_to_scenario(trace)["probes"] if p["answer"] == "218"]
    assert probe["question"] == (
        "What is the line number in `refund` of `shop/cart.py` in the traceback the user gave?"
    )


def test_a_literal_the_users_code_passes_by_position_is_named_by_the_call() -> None:
    task = (
        "Reading fails in shop/io.py:\n\n    >>> t = load_orders('orders_q3.csv', strict=True)\n"
        "    >>> load_orders('orders_q3.csv')\n    >>> check_version('shop', '2.3rc1')\n"
    )
    trace = Trace("shop", "mini-swe-agent", "shop.traj.json")
    trace.messages = [
        TraceMessage("user", task),
        *_bash("a", "ls shop", "cart.py"),
        *_bash("b", "python -c 'import shop; shop.load_orders(\"orders_q3.csv\")'", "ok"),
        *_bash("c", "pip install shop==2.3rc1", "ok"),
    ]
    probes = {p["answer"]: p for p in trace_to_scenario(trace)["probes"]}
    for value in ("orders_q3.csv", "2.3rc1"):
        _cued(probes[value], task)
    assert probes["orders_q3.csv"]["question"] == (
        "What is the first argument the user's code passes to `load_orders`?"
    )
    assert probes["2.3rc1"]["question"] == (
        "What is the second argument the user's code passes to `check_version`?"
    )
    # Called with two values in one place, a function's argument names neither
    twice = task + "    >>> load_orders('orders_q4.csv')\n"
    trace.messages[0] = TraceMessage("user", twice)
    assert "orders_q3.csv" not in {p["answer"] for p in trace_to_scenario(trace)["probes"]}


def test_a_name_a_signature_or_a_list_item_is_no_argument_the_user_passed() -> None:
    from evals.sources.command_roles import user_role

    code = "def refund(order_q3, amount):\n    totals = Ledger(ids=[1204, 1288, 1301])\n"
    assert user_role("order_q3", code) is None  # a parameter of a definition
    assert user_role("1288", code) is None  # an item of a list, not the second argument
    assert user_role("ledger_q3", "book(ledger_q3)\n") is None  # a variable: code, not a value


def test_a_role_whose_words_hold_the_value_inside_a_name_is_no_role() -> None:
    from evals.sources.command_roles import user_role

    # "the first argument the user's code passes to `td_cell.render`" would give `td_cell` away
    assert user_role("td_cell", 'print(td_cell.render("td_cell", row))\n') is None


def test_a_failing_test_is_named_by_the_error_its_section_printed() -> None:
    output = (
        "=================================== FAILURES ===================================\n"
        "____________________________ test_refund_rounds_down ____________________________\n"
        "    def test_refund_rounds_down():\n>       assert refund(499) == 5.0\n"
        "E       AssertionError: refund of 499 cents rounded up\n\n"
        "tests/test_cart.py:41: AssertionError\n"
        "____________________________ test_total_with_coupon _____________________________\n"
        "    def test_total_with_coupon():\n"
        "E       KeyError: 'coupon_code'\n\n"
        "tests/test_cart.py:58: KeyError\n"
        "FAILED tests/test_cart.py::test_refund_rounds_down - AssertionError...\n"
        "FAILED tests/test_cart.py::test_total_with_coupon - Key...\n"
    )
    asked = _question("test_refund_rounds_down", ("pytest tests", output),
                      "pytest tests/test_cart.py::test_refund_rounds_down -x")  # fmt: skip
    assert asked == "What is the test whose failure `pytest tests` printed with " \
        "`AssertionError: refund of 499 cents rounded up`?"  # fmt: skip
