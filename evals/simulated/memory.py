"""The simulated model's memory steps: `Remember` saves the user's latest preference to the
memory file, `Memorize` appends lines after the file's last line (reading its end first)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evals.simulated.cursor import Cursor
from evals.simulated.plan import UNKNOWN, Memorize, Remember, fill
from evals.simulated.reader import RequestReader, preference, strip_line_numbers
from evals.simulated.request import is_error
from harness.messages import Message, ModelResponse

_TOTAL_LINES = re.compile(r"of (\d+) total\)")


def remember(cursor: Cursor, step: Remember, messages: Sequence[Message]) -> ModelResponse | None:
    """Read the memory file, then write it back with the user's latest preference added.
    None when there is nothing (more) to do: the step is then finished."""
    stated = preference([m.content for m in messages if m.role == "user"])
    if stated is None:
        cursor.step += 1
        return None
    if cursor.pending is None:
        response = cursor.read("Checking what memory already holds.", step.path)
        cursor.pending = response.tool_calls[0].id
        return response
    result = next((m for m in messages if m.tool_call_id == cursor.pending), None)
    cursor.pending = None
    cursor.step += 1
    existing = "" if result is None or is_error(result) else strip_line_numbers(result.content)
    existing = "\n".join(ln for ln in existing.splitlines() if not ln.startswith("[Read "))
    if stated in existing.lower():
        return None
    content = f"{existing.rstrip() or '# Agent memory'}\n\n- Reports: {stated}.\n"
    return cursor.write("Saving this preference to memory.", step.path, content)


def memorize(
    cursor: Cursor, step: Memorize, messages: Sequence[Message], reader: RequestReader
) -> ModelResponse:
    """Append `step.lines` after the memory file's last line (see `Memorize`)."""
    result = next((m for m in messages if m.tool_call_id == cursor.pending), None)
    text = "" if result is None else result.content
    if cursor.phase == 0:
        cursor.phase = 1
        response = cursor.call(
            "Checking what memory already holds.",
            [("read_file", {"file_path": step.path, "offset": 0, "limit": 1})],
        )
        cursor.pending = response.tool_calls[0].id
        return response
    values = {
        slot: reader.read(cue, f"{cursor.ids}:{cursor.step}:{slot}").value or UNKNOWN
        for slot, cue in step.slots
    }
    lines = "\n".join(fill(line, values) for line in step.lines)
    total = _TOTAL_LINES.search(text)
    if cursor.phase == 1 and result is not None and not is_error(result) and total:
        cursor.phase = 2
        last = int(total.group(1)) - 1
        response = cursor.call(
            "Reading the end of the memory file.",
            [("read_file", {"file_path": step.path, "offset": last, "limit": 1})],
        )
        cursor.pending = response.tool_calls[0].id
        return response
    cursor.phase, cursor.pending = 0, None
    cursor.step += 1
    if result is None or is_error(result):
        return cursor.write(step.note, step.path, f"# Agent memory\n\n{lines}\n")
    shown = [ln for ln in strip_line_numbers(text).splitlines() if ln.strip()]
    anchor = next((ln for ln in shown if not ln.startswith("[Read ")), "")
    edit = {"file_path": step.path, "old_string": anchor, "new_string": f"{anchor}\n{lines}"}
    return cursor.call(step.note, [("edit_file", edit)])
