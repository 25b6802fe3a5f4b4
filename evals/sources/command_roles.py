"""Roles a command's output gives a value that the line-by-line roles of text_roles.py miss,
found on real coding trajectories (evals/README.md "Roles, hygiene and carried values"): a
numbered line that says nothing (a blank, `)`, `else:`) or stands twice, by its neighbour
("the line number of the `else:` right after `if shape != other:` in `fits/diff.py`"); a
failing test, by its file; the value a JSON, YAML or dict line gives a quoted key; a `git
log` hash, by its subject; a value after a label inside a line ("total price is 305"). In
code the user pasted, a frame's line number and a dict literal's value have roles too
(`user_role`). Each is tried only where no role of text_roles.py names the value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from evals.sources.command_names import printed_by
from evals.sources.cues import shape, spans
from evals.sources.key_roles import key_role
from evals.sources.readout import MESSAGE_CHARS, Readout, readout
from evals.sources.text_roles import (
    GREP_LINE,
    NUMBERED_LINE,
    command_of,
    file_of,
    role,
    what_line_says,
)

# `grep -n PATTERN FILE` on one file prints `LINE:TEXT`, with no file before the number.
_GREP_N_COMMAND = re.compile(r"^(?:grep|rg)\b[^|]*\s-\w*n")
_GREP_N = re.compile(r"^(?P<line>\d+)[:\-](?P<text>.*)$")
# `ls -l`: mode, links, owner, group, size, date, name.
_LS_LONG = re.compile(r"^[\-dlbcps][rwxsStT\-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+)\s+"
                      r"\w{3}\s+\d+\s+[\d:]+\s+(?P<name>\S.*)$")  # fmt: skip
_COMMIT = re.compile(r"^commit (?P<hash>[0-9a-f]{7,40})\b")
_ONELINE = re.compile(r"^(?P<hash>[0-9a-f]{7,40}) (?:\([^)]*\) )?(?P<subject>\S.*)$")
_KEYED = (
    r"(?P<q>[\"'])(?P<key>[^\"'\n]{{1,40}})(?P=q)\s*:\s*[\"']?(?P<prefix>[\^~]|[<>=]=?)?"
    r"{value}[\"']?\s*(?:[,}}\]]|$)"
)
# A quoted key given a value: what every `_KEYED` match starts with.
_ANY_KEY = re.compile(r"([\"'])[^\"'\n]{1,40}\1\s*:")
# Patterns built for a value, compiled once each (`re`'s own cache holds 512).
_compiled = lru_cache(maxsize=4096)(re.compile)
# A label inside a line: up to three words before `:` or "is"/"was" (not `=`: in code, `x = f()`
# gives `x` what `f` returns); pytest's `E` and `>` markers start a line without being part of it.
_INLINE = re.compile(r"(?P<label>[A-Za-z][\w\-]*(?: [A-Za-z][\w\-]*){0,2})\s*(?::|\bis|\bwas)\s*$")
# Commands that print a file (a listing of code), not what a program did.
_READS = re.compile(r"^(?:cat|nl|sed|head|tail|grep|rg|less|more|awk)\b")
_MARKER = re.compile(r"^\s*(?:[E>]\s+)?")
# Words that do not name a value: they run on in prose or start a line of code.
_NOT_LABELS = frozenset(
    ("is", "was", "are", "at", "in", "on", "of", "to", "the", "a", "an", "and", "or", "for",
     "from", "with", "by", "as", "line", "than", "be", "then", "it", "this", "that", "if",
     "elif", "else", "while", "return", "assert", "def", "class", "not")
)  # fmt: skip
# A frame of a traceback a user pasted; where the path runs through a home folder or an
# environment, the part a reader knows the file by is what follows `site-packages/`.
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<fn>[\w<>.]+))?')
_IPYTHON_LINE = re.compile(r"^\s*(?:-*>\s*)?(?P<line>\d+)\s{2,}(?P<text>\S.*)$")
_PLACES = ("first", "second", "third", "fourth")
NUMBER = r"(\d+)"
NUMBER_FORM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"


class Named(NamedTuple):
    """A role found here, and a cue for the simulated reader: a regex whose first group is
    the value, built from what names it (the key, the label, the line next to it), never
    from the value or its neighbours in a list."""

    kind: str
    phrase: str
    terms: list[str]
    cue: str


def command_role(value: str, text: str, tool: str, arguments: dict[str, Any], result: str) -> \
        dict[str, Any] | None:  # fmt: skip
    """The role `value` has in the output `text` of a `tool` call with `arguments` under one
    of this module's rules, or None; `result` names that output when no command ran."""
    command = command_of(arguments)
    file = file_of(arguments, command)
    printed = printed_by(arguments, result, value)
    if printed is None:
        return None  # a heredoc that says nothing of what it ran (command_names.py)
    read = readout(text)
    clean = read.clean
    listing = bool(file) and (not command or _READS.match(command) is not None)
    found = (
        _grep_n(value, clean, command, file)
        or _neighbour(value, read, file)
        or _ls_size(value, clean, printed)
        or _failed_test(value, read, printed, alone=True)
        or _failure_section(value, read, printed)
        or _failed_test(value, read, printed, alone=False)
        or _keyed(value, clean, f"`{file}`" if file else f"the output of {printed}")
        or _commit(value, clean, printed)
        or (None if listing else _labelled(value, clean, printed))
        or (None if listing else _setting(value, clean, printed))
    )
    if found is None:
        return None
    found = _checked(found, clean, value)
    if found is None:
        return None
    named = role(found.kind, found.phrase, [*found.terms, *([file] if file else [])], value)
    named["cue"] = found.cue  # taken off by trace_probes.py: a RoleSpec has no cue
    return named


def user_role(value: str, text: str) -> Named | None:
    """The role of `value` in a traceback or code the user pasted: a frame's line number or
    function, a numbered line of an IPython traceback, or the value a dict literal gives a
    key."""
    for line in text.splitlines():
        if not spans(value, line):
            continue
        if (m := _FRAME.search(line)) and value == m["fn"]:
            return _frame_function(value, text, m["file"], m["line"])
        if (m := _FRAME.search(line)) and value == m["line"] and m["fn"]:
            file = _known_as(m["file"])
            cue = rf'{re.escape(file)}", line {NUMBER}, in {re.escape(m["fn"])}\b'
            phrase = f"the line number in `{m['fn']}` of `{file}` in the traceback the user gave"
            return _checked(Named("user_text", phrase, [m["fn"], file.rsplit("/", 1)[-1]], cue),
                            text, value)  # fmt: skip
        if "Traceback" in text and (m := _IPYTHON_LINE.match(line)) and value == m["line"]:
            said = what_line_says(m["text"], value)
            if said and text.count(said) == 1:
                cue = rf"(?m)^\s*(?:-*>\s*)?{NUMBER}\s+{re.escape(said)}"
                phrase = f"the line number of `{said}` in the traceback the user gave"
                return _checked(Named("user_text", phrase, [said], cue), text, value)
    found = _keyed(value, text, "the user's code") or _passed(value, text)
    return _checked(found._replace(kind="user_text"), text, value) if found else None


def _frame_function(value: str, text: str, path: str, line: str) -> Named | None:
    """The function of a frame of a traceback the user pasted, named by its file and line,
    when no other frame is in that function or at that place."""
    frames = [(m["file"], m["line"], m["fn"]) for m in _FRAME.finditer(text)]
    if [fn for _, _, fn in frames].count(value) != 1 or \
            [(f, n) for f, n, _ in frames].count((path, line)) != 1:  # fmt: skip
        return None
    file = _known_as(path)
    cue = rf'{re.escape(file)}", line {line}, in ([\w<>.]+)'
    phrase = f"the function at line {line} of `{file}` in the traceback the user gave"
    named = Named("user_text", phrase, [file.rsplit("/", 1)[-1]], cue)
    return _checked(named, text, value)


def _passed(value: str, text: str) -> Named | None:
    """A literal the user's code passes to a function by position (`Table.read('test.qdp')`,
    `minversion('numpy', '1.14dev')`), when every call of that function in `text` passes the
    same value there: "the second argument the user's code passes to `minversion`"."""
    # A literal: a quoted string or a number, not a name (a variable is code, not a value).
    quote = "['\"]?" if re.fullmatch(NUMBER_FORM, value) else "['\"]"
    literal = rf"(?P<q>{quote}){re.escape(value)}(?P=q)"
    # The arguments before it hold no bracket or `=`: a comma in a list is no argument's.
    for m in re.finditer(rf"(?<![\w.])(?<!def )(?<!class )(?P<fn>[A-Za-z_][\w.]*)\("
                         rf"(?P<before>[^()\[\]{{}}=\n]*?){literal}\s*[,)]", text):  # fmt: skip
        before = m["before"]
        if before and not before.rstrip().endswith(","):
            continue  # inside another argument, not one of its own
        place = len(re.findall(r",", before))
        if place >= len(_PLACES):
            continue
        fn = m["fn"]
        given = set()
        for call in re.finditer(rf"(?<![\w.]){re.escape(fn)}\(([^()\n]*)\)", text):
            args = [a.strip() for a in call[1].split(",")]
            given.add(args[place].strip("'\"") if place < len(args) else "")
        if given != {value}:
            return None  # called with other values there too: which is meant?
        cue = rf"(?<![\w.]){re.escape(fn)}\((?:[^,()\n]*,\s*){{{place}}}['\"]?({_shape(value)})"
        return Named("user_text", f"the {_PLACES[place]} argument the user's code passes to "
                     f"`{fn}`", [fn], cue)  # fmt: skip
    return None


def _shape(value: str) -> str:
    """The regex of values of `value`'s form; a number's, unlike cues.shape's, ends on a
    digit: "total price is 305, but" gives `305`, not `305,`."""
    return NUMBER_FORM if re.fullmatch(NUMBER_FORM, value) else shape(value)


def _checked(named: Named, text: str, value: str) -> Named | None:
    """`named`, without its cue unless the cue's first match in `text` is `value`; None when
    its phrase holds the value even inside a name (`td_field` in "passes to
    `td_field.serialize`"): the question would give the answer away."""
    if value in named.phrase:
        return None
    m = re.search(named.cue, text)
    return named if m and m.group(1).strip() == value else named._replace(cue="")


def _known_as(path: str) -> str:
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    return path if not path.startswith(("/Users/", "/home/", "~")) else path.rsplit("/", 1)[-1]


def _grep_n(value: str, text: str, command: str, file: str) -> Named | None:
    """The line number `grep -n PATTERN FILE` printed before a line of the one file it read:
    named by what that line says, when it says it once."""
    if not file or not _GREP_N_COMMAND.match(command):
        return None
    for line in text.splitlines():
        m = _GREP_N.match(line)
        if m and m["line"] == value:
            said = what_line_says(m["text"], value)
            if said and text.count(said) == 1:
                cue = rf"(?m)^{NUMBER}[:\-]\s*{re.escape(said)}"
                return Named("listing", f"the line number of `{said}` in `{file}`", [said, file],
                             cue)  # fmt: skip
            return None
    return None


def _ls_size(value: str, text: str, printed: str) -> Named | None:
    """The size `ls -l` printed for a file, named by the file."""
    for line in text.splitlines():
        m = _LS_LONG.match(line.strip())
        if m and m["size"] == value:
            name = m["name"].split(" -> ")[0].strip()
            if len(re.findall(rf"\s{re.escape(name)}$", text, re.M)) != 1:
                return None
            cue = rf"(?m)\s{NUMBER}\s+\w{{3}}\s+\d+\s+[\d:]+\s+{re.escape(name)}$"
            return Named("command_output", f"the size in bytes of `{name}` that {printed} listed",
                         [name], cue)  # fmt: skip
    return None


def _neighbour(value: str, read: Readout, file: str) -> Named | None:
    """A numbered line whose own words do not tell it apart, named by the line right before
    (else right after) it when that one does: the listing shows both with their numbers."""
    text, lines = read.clean, read.lines
    if value not in read.numbered:
        return None
    i, m = read.numbered[value]  # the first line numbered `value`
    at = m.groupdict().get("file") or file
    if not at:
        return None
    own = (m.groupdict().get("text") or "").strip()
    what = f"the `{own[:40]}`" if own else "the blank line"
    number = int(value)
    for j, where in ((i - 1, "after"), (i + 1, "before")):
        said = _numbered_says(lines, j, number + (1 if where == "before" else -1), value)
        if said and text.count(said) == 1:
            cue = rf"{re.escape(said)}[^\n]*\n\s*{NUMBER}\b" if where == "after" else \
                rf"(?m)^\s*{NUMBER}\b[^\n]*\n[^\n]*{re.escape(said)}"  # fmt: skip
            return Named("listing", f"the line number of {what} right {where} `{said}` in "
                         f"`{at}`", [said, at], cue)  # fmt: skip
    return None


def _numbered_says(lines: Sequence[str], j: int, number: int, value: str) -> str:
    """What line `j` of a listing says, when it is the file's line `number`."""
    if not 0 <= j < len(lines):
        return ""
    m = NUMBERED_LINE.match(lines[j]) or GREP_LINE.match(lines[j])
    if not m or int(m["line"]) != number:
        return ""
    return what_line_says(m["text"], value)


def _failed_test(value: str, read: Readout, printed: str, alone: bool) -> Named | None:
    """A test the command reported failing: named by its file when it is that file's one
    failing test, else (unless `alone`) also by its error, when no other failing test of the
    file had it."""
    failed = read.failed  # file, test, message
    mine = [(f, t, msg) for f, t, msg in failed if t == value]
    if not mine or len({f for f, _, _ in mine}) != 1:
        return None
    file = mine[0][0]
    others = [(t, msg) for f, t, msg in failed if f == file and t != value]
    said = f"the test in `{file}` that {printed} reported failing"
    # The file by its base name: its whole path may be another probe's answer (leaks.py).
    cue = rf"FAILED\s+[\w./\-]*{re.escape(file.rsplit('/', 1)[-1])}::(\w+)"
    if not others:
        return Named("command_output", said, [file.rsplit("/", 1)[-1], "FAILED"], cue)
    if alone:
        return None
    messages = {msg for _, _, msg in mine}
    message = messages.pop() if len(messages) == 1 else ""
    # Messages may be cut ("AssertionError..."): one that begins another's tells neither apart.
    cut = any(msg.startswith(message) or message.startswith(msg) for _, msg in others)
    if len(message) >= 12 and not spans(value, message) and not cut:
        cue += rf"(?:\[[^\]]*\])?\s+-\s+{re.escape(message[:MESSAGE_CHARS])}"
        message = message[:MESSAGE_CHARS]
        return Named("command_output", f"{said} with `{message}`",
                     [file.rsplit("/", 1)[-1], message], cue)  # fmt: skip
    return None


def _failure_section(value: str, read: Readout, printed: str) -> Named | None:
    """A test named by the first `E` line of the section pytest printed for its failure
    (`____ test_x ____` ... `E   ValueError: ...`), when no other test's section has it."""
    sections = read.sections  # (test, its first `E` line)
    errors = {error for test, error in sections if test == value}
    if len(errors) != 1:
        return None
    error = errors.pop()
    cut = any(e.startswith(error) or error.startswith(e) for t, e in sections if t != value)
    if len(error) < 12 or spans(value, error) or cut:
        return None
    cue = rf"_{{3,}} (\w+)(?:\[[^\]\n]*\])? _{{3,}}\n(?:(?!_{{3,}} ).*\n)*?E\s+{re.escape(error)}"
    return Named("command_output", f"the test whose failure {printed} printed with `{error}`",
                 ["FAILED", error], cue)  # fmt: skip


def _keyed(value: str, text: str, where: str) -> Named | None:
    """The value a quoted key is given on a line (`"winston": "^3.17.0"`, `'CDELT3': 0.055,`),
    when the text gives that key a value once."""
    if not _ANY_KEY.search(text):
        return None  # no quoted key with a value: no pattern to compile
    pattern = _compiled(_KEYED.format(value=re.escape(value)))
    for line in text.splitlines():
        body = NUMBERED_LINE.match(line)
        m = pattern.search(body["text"] if body else line)
        if not m or spans(value, m["key"]):
            continue
        key = m["key"]
        given = re.findall(rf"[\"']{re.escape(key)}[\"']\s*:", text)
        if len(given) != 1:
            return None
        what = "the version" if m["prefix"] in ("^", "~") else "the value"
        cue = rf"[\"']{re.escape(key)}[\"']\s*:\s*[\"']?[\^~<>=]*({_shape(value)})"
        return Named("listing", f"{what} {where} gives `{key}`", [key], cue)
    return None


def _commit(value: str, text: str, printed: str) -> Named | None:
    """A commit hash `git log` printed, named by the commit's subject (its first line)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := _COMMIT.match(line):
            form = r"commit ([0-9a-f]{7,40})\b[^\n]*\n(?:[^\n]*\n){0,6}?\s{4}"
            subject = next((s.strip() for s in lines[i + 1 : i + 8]
                            if s.startswith("    ") and s.strip()), "")  # fmt: skip
        elif (m := _ONELINE.match(line)) and "git log" in printed:
            subject = m["subject"].strip()
            form = r"(?m)^([0-9a-f]{7,40}) (?:\([^)]*\) )?"
        else:
            continue
        if m["hash"] != value or not subject:
            continue
        subject = subject[:MESSAGE_CHARS]
        if text.count(subject) != 1:
            return None
        return Named("command_output", f"the hash {printed} printed for the commit `{subject}`",
                     [subject], form + re.escape(subject))  # fmt: skip
    return None


def _setting(value: str, text: str, printed: str) -> Named | None:
    """The name of a variable, property or key a line of the output sets (key_roles.py)."""
    found = key_role(value, text, printed)
    return Named(*found) if found else None


def _labelled(value: str, text: str, printed: str) -> Named | None:
    """A value after a label inside a line, when the label stands once in `text`; not in a
    listing of a file, whose `label:` is code (a type, a dict key), not what a run printed."""
    for line in text.splitlines():
        for start in spans(value, line):
            before = re.split(r"[,;(\[{]", _MARKER.sub("", line[:start], count=1))[-1]
            m = _INLINE.search(before)
            if not m:
                continue
            words = m["label"].split()
            while words and words[0].lower() in _NOT_LABELS:
                words.pop(0)
            label = " ".join(words)
            if len(label) < 3 or words[-1].lower() in _NOT_LABELS or spans(value, label):
                continue
            said = rf"(?<![\w\-]){re.escape(label)}\s*(?::|\bis\b|\bwas\b)"
            if len(re.findall(said, text)) != 1:
                continue  # a label that stands twice names no one value
            cue = rf"(?<![\w\-]){re.escape(label)}\s*(?::|\bis\b|\bwas\b)\s*({_shape(value)})"
            return Named("command_output", f"the `{label}` {printed} printed", [label], cue)
    return None
