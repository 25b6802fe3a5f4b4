"""A probed value's shape and role as regexes: what the simulated reader recognises a value
by when a probe names it by role (a scenario file's `role`: its search terms and shape), and
what a retrieval greps saved files and history with: the role's first term and the value's
shape on one line, never the question's words or step numbers (evals/README.md, "Retrieval
by role")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evals.simulated.plan import Cue

# The shapes a role may name; anything else is matched as one run of non-space characters.
SHAPES: dict[str, str] = {
    "id": r"[A-Za-z0-9][A-Za-z0-9_.:\-]*[0-9][A-Za-z0-9_.:\-]*",
    "number": r"-?[0-9][0-9,]*(?:\.[0-9]+)?",
    "line": r"[0-9]+",
    "money": r"\$?[0-9][0-9,]*(?:\.[0-9]+)?",
    "date": r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9:]+)?",
    "path": r"[A-Za-z0-9_.\-]*/[A-Za-z0-9_./\-]+",
    "hash": r"[0-9a-f]{7,64}",
    "email": r"[A-Za-z0-9_.+\-]+@[A-Za-z0-9\-]+\.[A-Za-z0-9.\-]+",
    # The shapes an import names (evals/sources/values.py, `shape_of`): a name or id of two
    # characters or more, not all digits (that is a `number`: a grep's line number is no
    # name), and a path or a file name.
    "identifier": r"(?=[\w.\-$#@]*[A-Za-z_])[\w$#@][\w.\-$#@]*\w",
    "file path": r"(?:[\w.\-]*/[\w./\-]*\w|[\w\-]+\.[A-Za-z]\w{0,5})",
}
_ANY = r"[^\s\"',;:()\[\]{}]+"
# How far apart, on one line, a role's term and its value may stand.
_GAP = 80


def shape_pattern(shape: str) -> str:
    """The regex of values of `shape` (no group)."""
    return SHAPES.get(shape.strip().lower(), _ANY)


def role_cue(terms: Sequence[str], shape: str) -> Cue:
    """A cue for a value named by role: the first term (the key name, symbol or column), then
    a separator (`: `, `=`, `|`, quotes) and a value of `shape` (a JSON key, a table cell, a
    setting); or a value of `shape` that opens a line (after a `file:` prefix) on which the term
    follows within `_GAP` characters (a grep -n hit, a line-numbered listing). The question's
    own words never match: a role is stated in prose, not as `key: value`."""
    value = shape_pattern(shape)
    if not terms:
        return Cue((rf"(?<![\w.\-])({value})(?![\w\-])",))
    term = re.escape(terms[0])
    after = rf"{term}[\"'`]?[ \t]*[:=|,\t][ \t]*[\"'`]?({value})(?![\w\-])"
    before = rf"^(?:[^\s:]+:)?[ \t]*({value})[:\t][^\n]{{0,{_GAP}}}?{term}"
    return Cue((after, before))


def search_terms(kind: str, terms: Sequence[str]) -> tuple[str, ...]:
    """A role's terms in the order a search uses them: a JSON value's own key first (the
    import lists the entry's path from the top, then the key, then the tool: `payment_methods`,
    `source`, `certificate`, `amount`, `get_user_details`), since the key stands on the value's
    line and the outer names do not; other roles keep their order."""
    if kind == "json_key" and len(terms) >= 2:
        return (terms[-2], *terms[:-2], terms[-1])
    return tuple(terms)


def role_query(terms: Sequence[str], shape: str, round_: int) -> str | None:
    """The grep pattern of retrieval round `round_` for a value named by role: round 0, the
    first term on a line with a value of the shape; round 1, the second term alone (the
    entity or file, when the key's own line did not match). None when nothing is left."""
    if not terms:
        return None
    value = shape_pattern(shape)
    if round_ == 0:
        term = re.escape(terms[0])
        return f"{term}.*{value}|{value}.*{term}"
    if round_ == 1 and len(terms) >= 2:
        return re.escape(terms[1])
    return None
