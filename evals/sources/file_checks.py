"""File checks: a file the run wrote with a tool the replay's harness runs itself (a ctxlab
thread's `write_file` and `edit_file`, `native` in to_scenario.py) is checked at the end of
the replay for the probed values the run wrote into it.

Only values that are already probes' answers are checked, so a check obeys the same roles
and hygiene as a question; a file whose writes carry none is not checked. A foreign trace's
file tools are recorded replies (the replay writes no file), so they make no check.
"""

from __future__ import annotations

import re
from typing import Any

from evals.sources.cues import spans
from evals.sources.trace import Trace

# The argument that holds what a native file tool writes.
WRITTEN = {"write_file": "content", "edit_file": "new_string"}
MAX_VALUES = 12


def file_checks(
    trace: Trace, probes: list[dict[str, Any]], native: frozenset[str]
) -> list[dict[str, Any]]:
    """A check probe (asked at the end) for each file the run wrote with a `native` tool whose
    written text holds answers of `probes`."""
    written: dict[str, list[str]] = {}
    for message in trace.messages:
        for call in message.tool_calls:
            key = WRITTEN.get(call.name) if call.name in native else None
            path, text = call.arguments.get("file_path"), call.arguments.get(key or "")
            if key and isinstance(path, str) and path.startswith("/") and isinstance(text, str):
                written.setdefault(path, []).append(text)
    answers = list(dict.fromkeys(str(p["answer"]) for p in probes if p.get("role")))
    out = []
    for path, texts in written.items():
        if path.startswith("/memories/"):
            continue  # memory outlives the replay's thread: its own business, not a check's
        values = [a for a in answers if any(spans(a, t) for t in texts)][:MAX_VALUES]
        if values:
            out.append({
                "id": f"check-{_slug(path)}", "kind": "artifact",
                "question": f"Does {path} still carry the values read for it?", "answer": "yes",
                "after": "end", "source": "tool", "check": {"path": path, "contains": values},
                "provenance": {"from": "trace", "used": f"{len(texts)} writes of {path}"},
            })  # fmt: skip
    return out


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")
