"""The conversation-history file: where summarized messages stay readable, word for word.

Each thread has one markdown file, `/conversation_history/{thread}.md`. Every summary cycle adds
one section, a `## Cycle N` heading followed by the messages it took out of the window, which
the model can page through with `read_file`. Writing a cycle's section is idempotent: a second
attempt at the same cycle (a failed summarizer call, a resumed run) replaces the section the
first one left instead of adding another.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from harness.files.filesystem import FileSystem
from harness.files.paths import FileError, safe_segment
from harness.messages import Message
from harness.store import now

if TYPE_CHECKING:
    from harness.state import RunState

HISTORY_DIR = "/conversation_history"


def history_path(history_dir: str, thread_id: str) -> str:
    """The thread's history file under `history_dir`."""
    return f"{history_dir.rstrip('/')}/{safe_segment(thread_id)}.md"


def render_message(m: Message) -> str:
    """A message as markdown, for the history file and the summarizer: a `### Role` line, the
    text, then the tool calls or, for a tool result, which call it answers."""
    return "\n".join(rendered_lines(m))


def rendered_lines(m: Message) -> list[str]:
    """What `render_message` joins with newlines: the summarizer counts a rendered message
    from them (`TokenCounter.count_joined`), its text already counted."""
    parts = [f"### {m.role.capitalize()}"]
    if m.content:
        parts.append(m.content)
    parts.extend(
        f"-> calls {c.name} (id {c.id}) with {json.dumps(c.arguments, ensure_ascii=False)}"
        for c in m.tool_calls
    )
    notes = [f"result of {m.name or 'a tool'}, call {m.tool_call_id}"] if m.role == "tool" else []
    notes += ["error"] if m.is_error else []
    notes += [m.kind] if m.kind not in ("message", "summary") else []
    if notes:
        parts.append(f"({', '.join(notes)})")
    return parts


def write_cycle(
    state: RunState, path: str, cycle: int, messages: list[Message], reason: str
) -> tuple[int | None, int | None]:
    """Put cycle `cycle`'s section, holding `messages`, in the history file at `path`.
    Returns the transcript range (first and last `seq`) the messages came from."""
    first_seq, last_seq = _seq_range(state, messages)
    section = _section(state, cycle, messages, first_seq, last_seq, reason)
    _put_section(state.files, path, cycle, section)
    return first_seq, last_seq


def _section(
    state: RunState,
    cycle: int,
    messages: list[Message],
    first_seq: int | None,
    last_seq: int | None,
    reason: str,
) -> str:
    stamp = now().strftime("%Y-%m-%d %H:%M:%S UTC")
    where = f"transcript seq {first_seq}-{last_seq}, " if first_seq is not None else ""
    head = (
        f"## Cycle {cycle}: {len(messages)} messages summarized at {stamp}\n\n"
        f"_Run {state.run_id}, step {state.step}, {where}trigger: {reason}._\n\n"
    )
    return head + "\n\n".join(render_message(m) for m in messages) + "\n\n"


def _put_section(files: FileSystem, path: str, cycle: int, section: str) -> None:
    """Append `cycle`'s section to the history file, or replace the one an earlier attempt at
    the same cycle left there: a run killed after the append but before its step committed
    and then resumed, or a summarizer call that failed after it. Cycle `cycle` is the newest
    one, so everything from its heading on is that earlier attempt's."""
    try:  # one lookup, not a check for the file and then its read
        existing = files.read_text(path)
    except FileNotFoundError:
        existing = ""
    except FileError:
        if files.exists(path):
            raise  # a binary file
        existing = ""  # a directory: the write below names the clash
    # The heading's fixed text first: a plain find over a long file, the pattern only if found.
    earlier = _cycle_heading(cycle).search(existing) if f"## Cycle {cycle}: " in existing else None
    if earlier is not None:
        existing = existing[: earlier.start()]
    files.write(path, existing + section)


def _cycle_heading(cycle: int) -> re.Pattern[str]:
    # The heading and the line under it, as `_section` writes them: a message that merely
    # quotes "## Cycle N" does not match.
    return re.compile(
        rf"^## Cycle {cycle}: \d+ messages summarized at [^\n]*\n\n_Run ", re.MULTILINE
    )


def _seq_range(state: RunState, messages: list[Message]) -> tuple[int | None, int | None]:
    return state.store.messages.seq_range(state.thread_id, [m.id for m in messages])
