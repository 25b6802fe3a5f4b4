"""SWE-agent's own tools' output as the listings and greps text_roles.py names values in
(evals/sources/roles.py), so a value they showed is asked by its file and line ("the line
number of `def settle_account` in `src/tally/ledger.py`") rather than rejected as shown only
inside other text.

- The windowed viewer (`open`, `goto`, `scroll_up`/`scroll_down`, `create`, `edit`) prints
  `[File: PATH (N lines total)]`, then `(K more lines above)`, numbered lines `N:text` (no
  space after the colon, so outside a window they are no numbered listing) and
  `(K more lines below)`; old versions mark a selection with `<<<<< START CURSOR >>>>>`.
  The window an edit that failed its lint check "would have looked" like holds no fact of the
  file: it is left out, and the original window after it kept.
- `search_file` prints `Found N matches for "TERM" in PATH:` then `Line N:text` lines.
- `search_dir` prints the same header, then `PATH (K matches)` lines; `find_file` the header
  then one path a line (already a path listing).
- Before 1.0 each observation ends with the harness's state, `(Open file: PATH)`,
  `(Current directory: DIR)`, in CTF mode `(Interactive session: ...)`, and the prompt
  `bash-$`: no output of the command.

Each window and search line is rewritten as a grep line `PATH:N:text` of the file it belongs
to (the file as the agent's own call spelled it when the header's path ends with it); other
text is left as it is, and a text with none of these outputs comes back unchanged.

The task SWE-agent's CTF mode (EnIGMA, before 1.0) gives the agent states its facts in fixed
sentences: `Files included in the challenge: ['a.py', 'b.enc']` and `The challenge web
server is running on `HOST` port `PORT``. A value given there is named by that role ("the
port the challenge server runs on", "the `.enc` file included in the challenge": a file by
its extension when no other file of the challenge shares it).
"""

from __future__ import annotations

import re
from typing import Any

from evals.sources.text_roles import role

_HEADER = re.compile(r"^\[File: (?P<path>\S.*?) \(\d+ lines total\)\]\s*$")
_WINDOW_LINE = re.compile(r"^(?P<line>\d+):(?P<text>.*)$")
_MORE = re.compile(r"^\(\d+ more lines (?:above|below)\)\s*$|^<<<<< (?:START|END) CURSOR >>>>>$")
_FOUND = re.compile(r'^Found \d+ matches for ".*" in (?P<where>\S.*?):\s*$')
_SEARCH_LINE = re.compile(r"^Line (?P<line>\d+):(?P<text>.*)$")
_DIR_LINE = re.compile(r"^(?P<path>\S.*?) \(\d+ matches\)\s*$")
_END = re.compile(r'^End of matches for ".*" in \S.*$')
_STATE = re.compile(
    r"\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)"
    r"(?:\n\(Interactive session: [^\n]*\))?\n?(?:bash-\$)?\s*"
)
_FILES = re.compile(r"^Files included in the challenge: \[(?P<files>[^\]\n]*)\]", re.M)
_SERVER = re.compile(r"The challenge (?:web )?server is running on `(?P<host>[^`\n]+)` port "
                     r"`(?P<port>\d+)`")  # fmt: skip
_WOULD_HAVE = "would have looked if applied"
_ORIGINAL = "This is the original code before your edit"


def swe_listing(text: str, arguments: dict[str, Any]) -> str:
    """`text` with SWE-agent's viewer windows and search matches as grep lines of their file
    and its state line left out; `arguments` are the call's (the path the agent gave)."""
    text = _without_state(text)
    if "[File: " not in text and "Found " not in text:
        return text
    out: list[str] = []
    path: str | None = None  # the file the numbered lines being read belong to
    searched: str | None = None  # the `search_file`/`search_dir` header's path
    hypothetical = False  # inside the window a failed edit would have made
    for line in text.splitlines():
        if _WOULD_HAVE in line:
            hypothetical = True
        elif _ORIGINAL in line:
            hypothetical = False
        if m := _HEADER.match(line):
            path = _as_called(m["path"], arguments)
            continue
        if m := _FOUND.match(line):
            searched = _as_called(m["where"], arguments)
            continue
        if path is not None and (m := _WINDOW_LINE.match(line)):
            if not hypothetical:
                out.append(f"{path}:{m['line']}:{m['text']}")
            continue
        if path is not None and _MORE.match(line):
            continue
        if searched is not None:
            if m := _SEARCH_LINE.match(line):
                out.append(f"{searched}:{m['line']}:{m['text']}")
                continue
            if m := _DIR_LINE.match(line):
                out.append(m["path"])
                continue
            if _END.match(line):
                searched = None
                continue
            searched = None  # `find_file`'s paths, or other output: the search has ended
        path = None
        out.append(line)
    return "\n".join(out)


def _without_state(text: str) -> str:
    """`text` without the state line SWE-agent appended to it (found from the end: a regex
    searched from every newline of a long output costs its length squared)."""
    at = text.rfind("(Open file: ")
    if at >= 0 and (at == 0 or text[at - 1] == "\n") and _STATE.fullmatch(text, at):
        return text[:at].rstrip("\r\n")
    return text


def _as_called(path: str, arguments: dict[str, Any]) -> str:
    """`path` as the call spelled it (`src/x.py` for `/repo/src/x.py`) when an argument or a
    word of the command names it with a directory; else `path` as printed."""
    for value in arguments.values():
        if not isinstance(value, str):
            continue
        for word in value.split():
            word = word.strip("'\"")
            if word == path or "/" in word and path.endswith("/" + word.removeprefix("./")):
                return word
    return path


def ctf_task_role(value: str, text: str) -> dict[str, Any] | None:
    """The role of `value` in the task of SWE-agent's CTF mode (a user message), or None."""
    if (m := _SERVER.search(text)) and value in (m["host"], m["port"]):
        what = "host" if value == m["host"] else "port"
        return role("user_text", f"the {what} the challenge server runs on", [what], value)
    files = re.findall(r"'([^'\n]+)'", m["files"]) if (m := _FILES.search(text)) else []
    if value not in files:
        return None
    if len(files) == 1:
        return role("user_text", "the file included in the challenge", ["challenge"], value)
    ext = value.rsplit(".", 1)[-1] if "." in value else ""
    if not ext or sum(f.endswith(f".{ext}") for f in files) != 1:
        return None  # no extension, or another file has it: which file is meant?
    return role("user_text", f"the `.{ext}` file included in the challenge", [f".{ext}"], value)
