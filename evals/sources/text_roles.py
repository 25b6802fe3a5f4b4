"""What a value is in a tool's text result (evals/sources/roles.py): a line of a grep or of a
line-numbered listing (the file and what the line says, or the name the line defines), a
traceback frame, a `label: value` line, a path a listing printed, or the one value of its
shape the command printed. A listing printed without numbers by `cat F` or `sed -n 'A,Bp' F`
has its lines named by the file's line numbers, which the command fixes.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate
from typing import Any

from evals.sources.bounds import keyword_of, whole_token
from evals.sources.code_roles import call_role, code_role, import_role
from evals.sources.command_names import COMMAND_ARGS, COMMAND_CHARS, printed_by
from evals.sources.cues import spans
from evals.sources.hygiene import path_shaped, shape_refusal
from evals.sources.values import shape_of
from harness.memo import Memo

GREP_LINE = re.compile(r"^(?P<file>[\w./\-]+\.\w+)[:\-](?P<line>\d+)[:\-](?P<text>.*)$")
_GREP_FILE = re.compile(r"^(?P<file>[\w./\-]+\.\w+):(?P<text>.*)$")
NUMBERED_LINE = re.compile(r"^\s*(?P<line>\d+)(?:\t|→| {1,2}\||:\s| {2})(?P<text>.*)$")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<fn>[\w<>.]+))?')
# `key: value` output (pip show, git config, a status line): a label of at most three words.
_LABEL = re.compile(r"^\s*(?:[-*]\s+)?(?P<label>[A-Za-z_][\w.\-]*(?: [A-Za-z][\w.\-]*){0,2}):\s+"
                    r"(?P<rest>\S.*)$")  # fmt: skip
# Words that start a line of code, not a label.
_KEYWORDS = frozenset(
    ("if", "elif", "else", "for", "while", "try", "except", "finally", "with", "return", "see",
     "note", "def", "class", "raise", "assert", "lambda", "case")
)  # fmt: skip
# Words that run on into a value in prose, not labels of it.
_PROSE = frozenset(
    ("is", "was", "are", "at", "in", "on", "of", "to", "the", "a", "an", "and", "or", "for",
     "from", "with", "by", "as", "line", "than", "be", "then", "ok", "got", "says", "all")
)  # fmt: skip
_SYMBOL = re.compile(r"^\s*(?:async\s+)?(def|class|function|fn|func|defp?|module)\s+([\w.]+)")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*[:=]")
_NUMBER_TOKEN = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_FILE_ARGS = ("file_path", "path", "filename", "file", "notebook_path")
_PATHLIKE = re.compile(r"[\w.\-]*/[\w./\-]*\.\w+|[\w\-]+\.(?:py|js|ts|rs|go|java|rb|ex|exs|c|h"
                       r"|cpp|md|txt|json|ya?ml|toml|cfg|ini|html|css|rst)\b")  # fmt: skip


def text_role(value: str, text: str, tool: str, arguments: dict[str, Any], result: str) -> \
        dict[str, Any] | None:  # fmt: skip
    """The role `value` has in the text result of a `tool` call with `arguments`, or None;
    `result` names that result when the call ran no command ("the `fetch` result")."""
    command = command_of(arguments)
    file = file_of(arguments, command)
    printed = printed_by(arguments, result, value)
    if printed is None:
        return None  # a heredoc that says nothing of what it ran (command_names.py)
    first = _first_line(command, file)
    for n, line in lines_holding(value, text):
        if not spans(value, line):
            continue
        found = _line_role(value, line, file, printed, text)
        if found is None and first is not None:
            found = _code_role(value, line, first + n, file)
        if found is None and first is None:
            code = code_role(value, line, text, f"the code {printed} printed")
            found = ("listing", *code) if code else None
        if found is not None:
            kind, phrase, terms = found
            return role(kind, phrase, [*terms, *([file] if file else [])], value)
    if only_of_shape(value, text) and shape_refusal(value, user=False) is None:
        return role(
            "command_output", f"the {noun(value)} {printed} printed", [command or tool], value
        )
    label = _inline_label(value, text)
    if label:
        return role("command_output", f"the `{label}` {printed} printed", [label], value)
    return _called(value, text, file, first)


def _called(value: str, text: str, file: str, first: int | None) -> dict[str, Any] | None:
    """The role of `value` as the one function a line of a listing calls (the weakest role
    a listing gives, so tried last: a line that defines or assigns a name says more)."""
    for n, line in lines_holding(value, text):
        if not spans(value, line):
            continue
        if m := GREP_LINE.match(line) or NUMBERED_LINE.match(line):
            at, number, code = m.groupdict().get("file") or file, int(m["line"]), m["text"]
        elif first is not None:
            at, number, code = file, first + n, line
        else:
            continue
        if at and (found := call_role(value, code, f"line {number} of `{at}`")):
            return role("listing", found[0], [*found[1], at], value)
    return None


# A text's lines and the offset each starts at, kept while the texts hold at most this many
# characters in all: a replay asks the role of every value a source shows, and splitting the
# text and testing each of its lines again for each value was most of a value's cost.
LINES_CHARS = 16_000_000
_LINES: Memo[str, tuple[list[str], list[int]]] = Memo(LINES_CHARS, len)
# What `str.splitlines` ends a line at.
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def lines_holding(value: str, text: str) -> list[tuple[int, str]]:
    """(index, line) of each line of `text.splitlines()` holding `value`, in order: found by
    where `value` stands in `text` rather than by testing every line."""
    known = _LINES.get(text)  # one look-up: another thread may evict it meanwhile
    if known is None:
        lines = text.splitlines(keepends=True)
        starts = list(accumulate((len(line) for line in lines), initial=0))
        known = _LINES.put(text, (text.splitlines(), starts))
    lines, starts = known
    if not value or not _BREAKS.isdisjoint(value):
        return [(n, line) for n, line in enumerate(lines) if value in line]
    out: list[tuple[int, str]] = []
    at = text.find(value)
    while at >= 0:
        n = bisect_right(starts, at) - 1  # a value without a break stands inside one line
        out.append((n, lines[n]))
        at = text.find(value, starts[n + 1])  # the next line's, if any
    return out


def _inline_label(value: str, text: str) -> str:
    """The word just before `value` (`balance 50.25`, `id=ACC-7`, `status: open`) when it is a
    label: letters only, no common word of prose, and standing once in `text`."""
    found = spans(value, text)
    if not found:  # the reader asks of values its source shows outside the part roles read
        return ""
    start = found[0]
    # On the value's own line: the last word of the line before is no label of it.
    before = text[:start]
    m = _LABEL_BEFORE.search(before, _label_from(before))
    if not m or m[1].lower() in _PROSE or not whole_token(value, text[max(0, start - 1) :]):
        return ""
    return m[1] if len(re.findall(rf"\b{m[1]}\b", text)) == 1 else ""


_LABEL_BEFORE = re.compile(r"(?<![\w.\-])([A-Za-z][A-Za-z_]{1,30})(?::[ \t]*|=|[ \t]+)$")


def _label_from(before: str) -> int:
    """Where a match of `_LABEL_BEFORE` in `before` can start at the earliest: it ends at the
    end (or before a final newline), its word of at most 31 letters before a `:` or `=` and
    blanks: searching from there finds what searching the whole text finds (the look-behind
    still sees the character before), without trying every position of a long text."""
    end = before[:-1] if before.endswith("\n") else before
    return max(0, len(end.rstrip(" \t")) - 32)


@lru_cache(maxsize=4096)
def _first_line(command: str, file: str) -> int | None:
    """The file line a listing without numbers starts at, when its command prints a file from
    a known line (`cat F`, `sed -n 'A,Bp' F`, `head F`): its lines can then be named."""
    if not file or "|" in command or file not in command or \
            not command.startswith(("cat", "head", "sed -n ")):  # fmt: skip
        return None  # neither pattern can match: none compiled for the file
    if re.fullmatch(rf"(?:cat|head(?: -n ?\d+)?)\s+['\"]?{re.escape(file)}['\"]?", command):
        return 1
    m = re.fullmatch(rf"sed -n ['\"]?(\d+),\s*\d+p['\"]?\s+['\"]?{re.escape(file)}['\"]?", command)
    return int(m[1]) if m else None


def _line_role(value: str, line: str, file: str, printed: str, text: str) -> \
        tuple[str, str, list[str]] | None:  # fmt: skip
    if m := _FRAME.search(line):
        where = f" in `{m['fn']}`" if m["fn"] else ""
        if value == m["line"]:
            return "listing", f"the line number{where} of `{m['file']}` in the traceback " \
                f"{printed} printed", [m["file"], m["fn"] or ""]  # fmt: skip
        if value == m["file"] and m["fn"]:
            return "listing", f"the file of `{m['fn']}` in the traceback {printed} printed", \
                [m["fn"]]  # fmt: skip
        return None
    if (m := GREP_LINE.match(line)) or (m := NUMBERED_LINE.match(line)):
        at = m.groupdict().get("file") or file
        if not at:
            return None
        if value == m["line"]:
            said = what_line_says(m["text"], value)
            if said and said == m["text"].strip()[:60] and text.count(said) > 1:
                return None  # the same line stands twice in the listing: which is meant?
            return ("listing", f"the line number of `{said}` in `{at}`", [said, at]) if said \
                else None  # fmt: skip
        if value == at:
            said = what_line_says(m["text"], value)
            return ("listing", f"the file that holds `{said}` (as {printed} listed it)",
                    [said]) if said else None  # fmt: skip
        return _code_role(value, m["text"], int(m["line"]), at)
    if (m := _GREP_FILE.match(line)) and value == m["file"]:
        said = what_line_says(m["text"], value)
        return ("listing", f"the file in which {printed} found `{said}`", [said]) if said \
            else None  # fmt: skip
    if line.strip().strip("./") == value.strip("./") and path_shaped(value):
        base = value.rstrip("/").rsplit("/", 1)[-1]
        if base != value:
            return "listing", f"the path of `{base}` that {printed} listed", [base]
    if (m := _LABEL.match(line)) and m["label"].split()[0].lower() not in _KEYWORDS and \
            whole_token(value, m["rest"]) and only_of_shape(value, m["rest"]) and \
            not spans(value, m["label"]):  # fmt: skip
        label = m["label"].strip()
        return "command_output", f"the `{label}` {printed} printed", [label]
    return None


def _code_role(value: str, text: str, line: int, file: str) -> tuple[str, str, list[str]] | None:
    """A name on line `line` of `file`: the one the line defines, the value of a keyword it
    passes, the one value of its shape on the line, or the module or name it imports."""
    where = f"line {line} of `{file}`"
    stripped = text.strip()
    m = _SYMBOL.match(stripped) or _ASSIGNED.match(stripped)
    if m and m.group(m.lastindex or 0) == value:
        return "listing", f"the name that {where} defines", [file]
    # `x = f()` gives `x` what `f` returns, not `f`: a call is no value of `x`.
    if k := keyword_of(value, stripped):
        return "listing", f"the value of `{k}` on {where}", [k, file]
    if only_of_shape(value, stripped):
        return "listing", f"the {noun(value)} on {where}", [file]
    found = import_role(value, stripped, where)
    return ("listing", found[0], [*found[1], file]) if found else None


def what_line_says(text: str, value: str) -> str:
    """A line of code as a person names it: the symbol it defines or assigns, else its text
    (without the value), short."""
    stripped = text.strip()
    if m := _SYMBOL.match(stripped):
        said = f"{m[1]} {m[2]}"
    elif (m := _ASSIGNED.match(stripped)) and len(re.findall(r"\w", m[1])) >= 6:
        said = m[1]
    else:
        said = stripped[:60]  # a short name (`val = f()`) says less than the whole line
    if len(re.findall(r"\w", said)) < 6 or spans(value, said) or "`" in said:
        return ""  # `if (`, `)`: says nothing a person would name it by; a quote, unquotable
    return said


def noun(value: str) -> str:
    named = "id" if any(c.isdigit() for c in value) else "name"
    return {"file path": "path", "date": "date", "number": "number"}.get(shape_of(value), named)


def only_of_shape(value: str, text: str) -> bool:
    """`value` is the one value of its shape in `text`, standing there as a word of its own."""
    if not whole_token(value, text):
        return False
    shape = shape_of(value)
    kind = shape if shape in ("number", "file path", "date") else "identifier"
    return _of_shape(text, kind) <= {value}


# The values of each shape a text shows, found once while the texts held hold at most this many
# characters in all: a replay asks it of every value a source shows.
SHAPED_CHARS = 16_000_000
_SHAPED: Memo[tuple[str, str], frozenset[str]] = Memo(SHAPED_CHARS, lambda key: len(key[0]))


def _of_shape(text: str, shape: str) -> frozenset[str]:
    """The tokens of `text` (without a `.` or `:` at either end) that are values of `shape`
    ("identifier": a name with a digit or `_`)."""
    key = (text, shape)
    known = _SHAPED.get(key)  # one look-up: a replay in another thread may evict it meanwhile
    if known is not None:
        return known
    tokens = set(re.findall(r"[\w./\-:]+", text))
    if shape == "number":
        found = {t.strip(".:") for t in tokens if _NUMBER_TOKEN.fullmatch(t.strip(".:"))}
    elif shape in ("file path", "date"):
        found = {t.strip(".:") for t in tokens if shape_of(t.strip(".:")) == shape}
    else:
        found = {t.strip(".:") for t in tokens
                 if shape_of(t) == "identifier" and re.search(r"\d|_", t)}  # fmt: skip
    return _SHAPED.put(key, frozenset(found))


def command_of(arguments: dict[str, Any]) -> str:
    """The first line of the command a call ran (shortened), or "" when it ran none."""
    for key in COMMAND_ARGS:
        text = arguments.get(key)
        if isinstance(text, str) and text.strip():
            first = text.strip().splitlines()[0]
            return first if len(first) <= COMMAND_CHARS else first[: COMMAND_CHARS - 1] + "…"
    return ""


def file_of(arguments: dict[str, Any], command: str) -> str:
    """The one file a call read: its file argument, else the one path its command names."""
    for key in _FILE_ARGS:
        text = arguments.get(key)
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text.strip()
    found = _PATHLIKE.findall(command)
    return found[-1] if len(set(found)) == 1 else ""


def role(kind: str, phrase: str, terms: list[str], value: str) -> dict[str, Any]:
    """A `RoleSpec` dict; search terms that hold the value itself are left out."""
    terms = [t for t in dict.fromkeys(terms) if t and not spans(value, t)]
    return {"kind": kind, "phrase": phrase, "terms": terms, "shape": shape_of(value)}
