"""The console flows print its tables on (`ctxlab run`, `sql`, `sweep`, `demo`)."""

from __future__ import annotations

from typing import Any


def wide_console() -> Any:
    """Tables keep their full width (run ids and parameters must stay whole); piped, they are
    printed at their natural width, however wide."""
    import shutil

    from rich.console import Console

    console = Console()
    if console.is_terminal:
        return Console(width=max(shutil.get_terminal_size().columns, 140))
    return Console(width=1_000)
