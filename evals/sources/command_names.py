"""How a question names the command whose output showed a value (text_roles.py,
command_roles.py): by what the command does, so that a reader can tell which run is meant.

A command is named by its first line, unless that line says nothing of it: a comment
(`# fetch the mirror first`) gives way to the first line that is none; a heredoc opener
(`python - <<'PY'`, the same for every script a run fed to Python) gives way to the file the
command writes (`cat > check.py <<'EOF'`: "the command that writes `check.py`") or else to the
script's defining line, its first that is no comment or import ("the `python` script with the
line `print(conf.lang())`"). A heredoc with neither, or a name holding a backtick (a question's
quotes would not balance), names nothing: None, and the value is not asked by that command.
"""

from __future__ import annotations

import re
from typing import Any

COMMAND_CHARS = 70
COMMAND_ARGS = ("command", "cmd", "script", "code")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<end>\w+)\1")
_WRITES = re.compile(r"(?:(?<![\d&])>>?|\btee(?:\s+-a)?)\s*['\"]?(?P<file>(?!/dev/)[\w./\-~]+)")
_SETUP = re.compile(r"(?:import\s|from\s+\S+\s+import\s|#|set\s+-|sys\.path\b)")


def printed_by(arguments: dict[str, Any], result: str, value: str = "") -> str | None:
    """The noun phrase naming the command of a call with `arguments` ("`ls -l src`"), or
    `result` ("the `fetch` result") when it ran none; None when nothing names it, or when the
    heredoc line it would be named by holds `value` (the question would give it away)."""
    texts = (arguments.get(key) for key in COMMAND_ARGS)
    command = next((t for t in texts if isinstance(t, str) and t.strip()), "")
    if not command:
        return result
    lines = command.strip().splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()
                  and not line.lstrip().startswith("#")), None)  # fmt: skip
    if first is None:
        return None
    line = lines[first].strip()
    opener = _HEREDOC.search(line)
    if opener is None:
        return _quoted(line)
    if written := _WRITES.search(line[opener.end() :]) or _WRITES.search(line[: opener.start()]):
        file = _quoted(written["file"])
        return f"the command that writes {file}" if file else None
    body = []
    for text in lines[first + 1 :]:
        if text.strip() == opener["end"]:
            break
        body.append(text.strip())
    defining = _quoted(next((t for t in body if t and not _SETUP.match(t)), ""))
    # the program the heredoc feeds: the first word of the last command before the opener
    program = re.split(r"&&|\|\||[;|]", line[: opener.start()])[-1].split()
    if not defining or not program or value and value in defining:
        return None
    return f"the `{program[0]}` script with the line {defining}"


def _quoted(text: str) -> str | None:
    """`text` in backticks, shortened to `COMMAND_CHARS`; None when it is empty or holds a
    backtick (the question's quotes would not balance)."""
    if not text or "`" in text:
        return None
    short = text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"
    return f"`{short}`"
