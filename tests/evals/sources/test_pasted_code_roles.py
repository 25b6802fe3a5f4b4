"""Roles of names in code the user pasted into the task (evals/sources/code_roles.py,
`pasted_role`): the function or class it defines, the exception it raises, the function of a
frame of its traceback; each only where one name answers the question."""

from __future__ import annotations

from evals.sources.roles import role_of

ISSUE = """The printer is missing two methods. Something like:

    def _emit_upper(self, expr):
        return "upper({})".format(expr)

    def _emit_lower(self, expr):
        return "lower({})".format(expr)

Calling it fails:

    raise LookupFailure('no printer for Upper')

Traceback (most recent call last):
  File "/srv/app/printing/core.py", line 88, in render_node
    return self.dispatch(node)
  File "/srv/app/printing/core.py", line 140, in dispatch
    raise LookupFailure(msg)
"""


def _phrase(value: str, text: str = ISSUE) -> str | None:
    found = role_of(value, text, "user", None, None)
    return found["phrase"] if found else None


def test_a_function_the_pasted_code_defines_is_named_by_its_place() -> None:
    assert _phrase("_emit_upper") == "the first function the user's code defines"
    assert _phrase("_emit_lower") == "the second function the user's code defines"
    one = "Add this:\n\nclass TallyWriter(BaseWriter):\n    pass\n"
    assert _phrase("TallyWriter", one) == "the class the user's code defines"


def test_the_exception_the_pasted_code_raises_is_named_by_its_message() -> None:
    assert _phrase("LookupFailure") == (
        "the exception the user's code raises with `'no printer for Upper'`"
    )


def test_the_function_of_a_pasted_traceback_frame_is_named_by_its_file_and_line() -> None:
    assert _phrase("render_node") == (
        "the function at line 88 of `/srv/app/printing/core.py` in the traceback the user gave"
    )


def test_a_name_defined_or_raised_twice_names_no_role() -> None:
    twice = "def rebuild(a):\n    pass\n\ndef rebuild(b):\n    pass\n"
    assert _phrase("rebuild", twice) is None
    raised = "raise KeyMiss('gone')\nraise KeyError('gone')\n"  # the message names neither
    assert _phrase("KeyMiss", raised) is None


def test_a_frame_in_an_environment_is_named_by_the_path_after_site_packages() -> None:
    tb = (
        'Traceback (most recent call last):\n  File "/home/ana/.tox/py310/lib/python3.10/'
        'site-packages/tabio/registry.py", line 313, in pick_reader\n    raise OSError\n'
    )
    assert _phrase("pick_reader", tb) == (
        "the function at line 313 of `tabio/registry.py` in the traceback the user gave"
    )
