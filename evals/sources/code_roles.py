"""What a value is in a piece of code someone was shown (evals/sources/text_roles.py, roles.py):
the module an import line takes a name from, the name an import line takes, the value a line
assigns to a name or passes as a keyword, or the one function a numbered line calls; in code
the user pasted, also the function or class it defines and the exception it raises
(`pasted_role`).

Code stands in an issue the user pasted ("`ds.PhotometricInterpretation = 'MONOCHROME2'`"), in
a file a command printed, and in a script's output; these roles name a value by the code
around it, the way a person points at it ("the value the user's code assigns to `ds.Rows`"),
and only where that code names one value in the whole text: an assignment made twice to the
same name, or two imports from one module, name no one value.
"""

from __future__ import annotations

import re
from functools import lru_cache

# `from a.b import c, d` and `import a.b as c`; a parenthesised list may run over lines.
_FROM = re.compile(r"^\s*from\s+(?P<module>[\w.]+)\s+import\s+\(?(?P<names>[\w\s,]+)\)?\s*$")
_IMPORT = re.compile(r"^\s*import\s+(?P<module>[\w.]+)(?:\s+as\s+(?P<alias>\w+))?\s*$")
# What can be assigned to or passed by keyword: `x`, `self.x`, `obj["k"]`.
_TARGET = r"[A-Za-z_][\w.]*(?:\[[\"']?[\w.\-]+[\"']?\])?"
# `name =` (or `name ==`): what any assignment `assigned_role` reads starts with.
_ASSIGNING = re.compile(rf"(?<![\w.]){_TARGET}\s*=")
# Patterns built for a value, compiled once each: `re`'s own cache of 512 is too small for the
# values a replay names.
_compiled = lru_cache(maxsize=4096)(re.compile)
# Words that are followed by `(` in code without being a call of a function someone wrote.
_NOT_CALLS = frozenset(
    ("if", "elif", "while", "for", "return", "print", "not", "and", "or", "in", "is", "assert",
     "with", "lambda", "yield", "await", "super", "isinstance", "len", "str", "int", "list",
     "dict", "set", "tuple", "range", "type", "def", "class", "except", "raise")
)  # fmt: skip


def import_role(value: str, line: str, where: str) -> tuple[str, list[str]] | None:
    """The role of `value` on an import `line` of the code `where` names ("`a.py`", "the
    user's code"): the module it takes a name from, or the one name it takes."""
    if value.replace(".", "/") in where:
        return None  # `django.contrib.auth` in `django/contrib/auth/forms.py`: a guess, not recall
    if m := _FROM.match(line):
        names = [n for n in re.split(r"[\s,]+", m["names"]) if n and n != "as"]
        if value == m["module"] and names:
            return f"the module that {where} imports `{names[0]}` from", [names[0]]
        if len(names) == 1 and value == names[0]:
            return f"the name that {where} imports from `{m['module']}`", [m["module"]]
    if (m := _IMPORT.match(line)) and m["alias"] and value == m["module"]:
        return f"the module that {where} imports as `{m['alias']}`", [m["alias"]]
    return None


def assigned_role(value: str, line: str, text: str, where: str) -> tuple[str, list[str]] | None:
    """The role of `value` when `line` assigns it to a name or passes it by keyword
    (`ds.Rows = 5`, `timedelta(milliseconds=345)`), and that name is given a value nowhere
    else in `text`: "the value {where} assigns to `ds.Rows`"."""
    equals = line.find("=")
    if equals < 0 or line.find(value, equals + 1) < 0 or not _ASSIGNING.search(line):
        return None  # no `name =` with the value after it: no pattern to compile
    # Not `x = f()`: there `f` is what is called, not what `x` is given.
    quoted = rf"(?P<q>['\"]?){re.escape(value)}(?P=q)(?![\w.(])"
    m = _compiled(rf"(?<![\w.])(?P<name>{_TARGET})\s*=\s*{quoted}").search(line)
    if not m or "==" in line[m.start() : m.end()]:
        return None
    name = m["name"]
    given = re.findall(rf"(?<![\w.]){re.escape(name)}\s*=(?!=)", text)
    if len(given) != 1:
        return None  # assigned twice (or once as `name == x` too): which value is meant?
    keyword = "(" in line[: m.start()] and line[: m.start()].rstrip().endswith((",", "("))
    verb = "passes as" if keyword else "assigns to"
    return f"the value {where} {verb} `{name}`", [name]


def call_role(value: str, line: str, where: str) -> tuple[str, list[str]] | None:
    """The role of `value` when it is the one function `line` calls (`val = f.get()`):
    "the function {where} calls"; a line calling two functions names neither."""
    calls = {
        c
        for c in re.findall(r"(?<![\w.])([A-Za-z_][\w.]*)\s*\(", line)
        if c.rsplit(".", 1)[-1] not in _NOT_CALLS
    }
    return (f"the function {where} calls", []) if calls == {value} else None


def code_role(value: str, line: str, text: str, where: str) -> tuple[str, list[str]] | None:
    """The first role `value` has on `line` of code (within `text`, read as `where`)."""
    return import_role(value, line, where) or assigned_role(value, line, text, where)


# In code a user pasted: a `def` or `class` line (after a `>>>` or `...` prompt), a `raise` of
# an exception built with one literal message.
_DEFINES = re.compile(r"^\s*(?:(?:>>>|\.\.\.)\s+)?(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)", re.M)
_RAISES = re.compile(r"^\s*(?:>>>\s+)?raise\s+([A-Za-z_][\w.]*)\((?P<message>[^()\n]*)\)", re.M)
_ORDINALS = ("first", "second", "third", "fourth", "fifth")
MESSAGE_CHARS = 60


def pasted_role(value: str, text: str) -> tuple[str, list[str]] | None:
    """The role of the name `value` in code the user pasted (`text`, their message): the
    function or class it defines (by its place among those it defines, when it defines more),
    or the exception it raises with a literal message no other `raise` gives (a traceback
    frame's function: command_roles.user_role). None when the name is defined more than
    once: the question would name no one value."""
    defined = _DEFINES.findall(text)
    if [name for _, name in defined].count(value) == 1:
        kind = next(k for k, name in defined if name == value)
        same = [name for k, name in defined if k == kind]
        noun = "function" if kind == "def" else "class"
        place = same.index(value)
        if len(same) == 1:
            return f"the {noun} the user's code defines", [kind]
        if place < len(_ORDINALS):
            return f"the {_ORDINALS[place]} {noun} the user's code defines", [kind]
        return None
    raised = [(m[1], m["message"].strip()) for m in _RAISES.finditer(text)]
    said = [message for _, message in raised]
    for message in (message for name, message in raised if name == value):
        # A literal message no other `raise` gives (`msg`, a variable, tells nothing).
        if message[:1] in "'\"" and 3 <= len(message) <= MESSAGE_CHARS and \
                said.count(message) == 1 and value not in message:  # fmt: skip
            return f"the exception the user's code raises with `{message}`", ["raise"]
    return None
