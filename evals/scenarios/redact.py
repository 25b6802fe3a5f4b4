"""Redaction for imported runs: every string a recorded scenario file carries passes through
one `Redactor` before anything is written, so provider keys, bearer tokens and e-mail
addresses never reach the file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Key shapes first: an `sk-ant-...` key must not be half-matched by the shorter `sk-...` form.
DEFAULT_PATTERNS: tuple[str, ...] = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*",
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}\b",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}\b",
    r"\bAIza[0-9A-Za-z_\-]{30,}\b",
    r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}",
)
MASK = "[REDACTED]"


class Redactor:
    """Replaces every match of the default patterns and `extra` ones with `[REDACTED]`, and
    counts what it replaced."""

    def __init__(self, extra: Iterable[str] = (), *, defaults: bool = True) -> None:
        sources = [*(DEFAULT_PATTERNS if defaults else ()), *extra]
        compiled = []
        for pattern in sources:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"--redact {pattern!r} is not a valid regex: {exc}") from None
        self.patterns = compiled
        self.count = 0

    def text(self, value: str) -> str:
        for pattern in self.patterns:
            value, n = pattern.subn(MASK, value)
            self.count += n
        return value

    def value(self, value: Any) -> Any:
        """`value` (a string, or JSON-like data) with every string in it redacted, keys
        included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value
