"""What the command-line tests check after a mistake: one line on stderr, no work started."""

from __future__ import annotations

from typing import Any

import pytest


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the command wrote on stderr (fails on more lines or a traceback)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def no_work(*_args: Any, **_kwargs: Any) -> Any:
    """Patched over the code that does the work: a mistake must be reported before it."""
    raise AssertionError("the command started work before checking its options and store")
