"""Whether a reader that never misses can answer a probe from its source: the import names a
value's role by its rules (roles.py), and the simulated reader finds a value by the same rules
in the sources in view (evals/simulated/sightings.py); a question the reader cannot answer with
its source in view measures nothing. Two ways it cannot: the source shows another value under
the very role the question states ("the path of `libx.so` that `find` listed", of
`lib/arm64/libx.so` and `lib/x86_64/libx.so`), or the value is no whole word, path or id of
the text (`ObjPtr<mirror`, a search query of five words): the question has no one answer
there."""

from __future__ import annotations

from typing import Any

from evals.simulated.sightings import Role, sightings
from evals.sources.role_rules import IMPORT_RULES
from evals.sources.roles import Call
from harness.messages import Message, ToolCall


def unreadable(value: str, text: str, call: Call | None, role: dict[str, Any]) -> str | None:
    """Why the reader could not read `value` off the source `text` (a tool's result from
    `call`, else a user's message) under `role`: `ambiguous` (another value stands there under
    it), `unread` (the value is not read there at all); None when it reads `value` alone.

    A user's message is held to the value being read only: which of two ids "the
    `reservation_id` the user gave" means, the replay's reader tells by what the agent passed
    (sightings.py), which no single message shows."""
    asked = Role(role["kind"], role["phrase"], tuple(role.get("terms", ())), role.get("shape", ""))
    if call is None:
        messages = [Message(role="user", content=text)]
    else:
        made = ToolCall(id="source", name=call.tool, arguments=dict(call.arguments))
        messages = [
            Message(role="assistant", content="", tool_calls=(made,)),
            Message(role="tool", content=text, tool_call_id="source"),
        ]
    read = {s.value for s in sightings(IMPORT_RULES, asked, messages)}
    if value not in read:
        return "unread"
    if call is not None and len(read) > 1:
        return "ambiguous"
    return None
