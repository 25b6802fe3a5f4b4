"""The name of a setting a command printed with its value (command_roles.py): an environment
variable of `env` or `export` (`ANDROID_AVD_HOME=/srv/avd`), a property of `getprop`
(`[sys.boot_completed]: [1]`), a key of `sysctl` or a config dump (`kernel.core_pattern =
core`, `core_pattern: core`). A person names such a key by the value the output gave it ("the
variable `env | grep AVD` printed set to `/srv/avd`"), and only when no other key of that
output has the same value: `1` set twice names neither key.
"""

from __future__ import annotations

import re

# A whole line that sets one key: `NAME=value` (`export NAME=value`), `[key]: [value]`,
# `key.name = value`, `key_name: value` (a bare word before `:` is a label, command_roles.py).
# Each is (what the key is, the line before the value with the key as its group, the value's
# pattern, what follows it).
_FORMS = (
    ("variable", r"(?:export\s+)?([A-Za-z_][\w.]*)=", r"\S+", ""),
    ("property", r"\[([\w.\-]+)\]:\s*\[", r"[^\]\n]*", r"\]"),
    ("key", r"([A-Za-z_][\w\-]*[._][\w.\-]*)\s*(?:=|:)\s+", r"\S[^\n]*?", ""),
)


def key_role(value: str, text: str, printed: str) -> tuple[str, str, list[str], str] | None:
    """The role of `value` as the key a line of `text` (the output of what `printed` names)
    sets, as (kind, phrase, terms, cue), or None. The cue's first group is the key."""
    for what, before, val_form, after in _FORMS:
        line = re.compile(rf"(?m)^\s*{before}(?P<val>{val_form}){after}\s*$")
        mine = [m for m in line.finditer(text) if m[1] == value]
        if len(mine) != 1:
            continue
        val = mine[0]["val"].strip()
        same = [m for m in line.finditer(text) if m["val"].strip() == val]
        if not val or "`" in val or len(val) > 60 or value in val or len(same) != 1:
            return None  # no value, or one more than one key has: it names no key
        phrase = f"the {what} {printed} printed set to `{val}`"
        return "command_output", phrase, [val], rf"(?m)^\s*{before}{re.escape(val)}{after}\s*$"
    return None
