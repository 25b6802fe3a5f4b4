"""What the simulated reader searches for when the request does not hold the fact
(evals/simulated/reader.py, "retrieval"): grep patterns built from the question's own words,
the saved files the request names, and the earlier read-only lookups worth running again."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from evals.simulated.reader import POINTER
from harness.files.tools import FILE_TOOL_NAMES
from harness.memo import Memo

_TERM = re.compile(r"#?[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*")
_NAME = re.compile(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)+)")
_STOP = {"what", "which", "when", "where", "why", "how", "did", "does", "the", "for", "in",
         "about", "according", "after", "before", "give", "given", "their", "there", "these",
         "those", "would", "could", "should", "with", "from", "your", "this", "that"}  # fmt: skip


def query_terms(question: str) -> list[str]:
    """Search terms from the question's own words, the most specific first: identifiers with
    digits or underscores (order numbers, quarters, metric names), then multi-word names,
    then the longest other words."""
    tokens = _TERM.findall(question)
    specific = []
    for k, t in enumerate(tokens):
        if not any(c.isdigit() or c == "_" for c in t):
            continue
        # "batch 2" or "week 1": a bare small number says little without its noun.
        short = t.isdigit() and len(t) < 3 and k > 0
        specific.append(f"{tokens[k - 1]} {t}" if short else t)
    names = [n for n in _NAME.findall(question) if n.split()[0].lower() not in _STOP]
    ranked = sorted(dict.fromkeys(specific), key=lambda t: (-len(t), t))
    named = " ".join(names).lower()
    plain = [
        t for t in tokens if t.isalpha() and len(t) > 4 and t.lower() not in _STOP
        and t.lower() not in named
    ]  # fmt: skip
    rest = sorted(dict.fromkeys(plain), key=lambda t: (-len(t), t))
    return list(dict.fromkeys([*ranked, *names, *rest]))


def grep_query(question: str, round_: int) -> str | None:
    """The grep pattern of retrieval round `round_` (0: the most specific term; 1: the two
    most specific terms on one line), or None when the question gives nothing to search."""
    terms = query_terms(question)
    if round_ == 0 and terms:
        return re.escape(terms[0])
    if round_ == 1 and len(terms) >= 2:
        a, b = re.escape(terms[0]), re.escape(terms[1])
        return f"{a}.*{b}|{b}.*{a}"
    return None


def pointers(texts: Sequence[str], question: str = "") -> list[str]:
    """Offloaded files and saved histories the context names, the likeliest first: by how
    many words of `question` the text naming the file shares, then by how recently."""
    wanted = words(question)
    found: dict[str, tuple[int, int]] = {}
    for age, text in enumerate(reversed(texts)):
        paths, head = _named(text)
        if not paths:
            continue
        overlap = len(wanted & head) if wanted else 0
        for path in paths:
            best, newest = found.get(path, (0, age))
            found[path] = (min(best, -overlap), newest)
    return sorted(found, key=found.__getitem__)


# The paths each text names, and the words of its head (what a question's words are matched
# against), kept while the texts hold at most this many characters in all: a window's texts
# are searched for them at every question of a run.
NAMED_CHARS = 4_000_000
_NAMED: Memo[str, tuple[tuple[str, ...], frozenset[str]]] = Memo(NAMED_CHARS, len)


def _named(text: str) -> tuple[tuple[str, ...], frozenset[str]]:
    known = _NAMED.get(text)  # one look-up: a replay in another thread may evict it meanwhile
    if known is None:
        paths = tuple(p.rstrip(".,;:)") for p in POINTER.findall(text))
        head = frozenset(words(text[:2_000])) if paths else frozenset()
        known = _NAMED.put(text, (paths, head))
    return known


# The agent's own machinery (files, subagents, compaction): not sources of the task's data.
HARNESS_TOOLS = FILE_TOOL_NAMES | {"task", "compact_conversation"}
# A tool whose name starts with one of these reads data: running it again changes nothing.
LOOKUP_VERBS = frozenset(
    {
        "fetch",
        "find",
        "get",
        "glob",
        "grep",
        "list",
        "load",
        "lookup",
        "query",
        "read",
        "retrieve",
        "search",
        "view",
    }  # fmt: skip
)


# A coding agent's shell: a recorded command that only reads (cat, grep, sed -n, ls) may run
# again, and its recorded reply answers.
SHELLS = frozenset({"bash", "shell", "terminal", "run_command", "execute_bash"})
READ_COMMANDS = frozenset(
    {"cat", "grep", "rg", "sed", "head", "tail", "nl", "ls", "find", "wc", "less", "git"}
)
_WRITES = ("sed -i", ">", "tee ", "rm ", "mv ", "git commit", "git apply", "git checkout")


def is_lookup(name: str, arguments: Mapping[str, Any] | None = None) -> bool:
    """Whether `name` is a domain tool that only reads (`read_article`, `query_export`, a
    coding agent's `Read` or `Grep`), or a shell call whose recorded command only reads."""
    if name in HARNESS_TOOLS:
        return False
    if name.lower() in SHELLS:
        command = str((arguments or {}).get("command", "")).strip()
        first = command.split(maxsplit=1)[0] if command else ""
        return first in READ_COMMANDS and not any(w in command for w in _WRITES)
    return name.split("_", 1)[0].lower() in LOOKUP_VERBS


def signature(name: str, arguments: Mapping[str, Any]) -> str:
    """One string per distinct call: the same tool with the same arguments."""
    return json.dumps([name, arguments], sort_keys=True, default=str)


def lookups(
    calls: Sequence[tuple[str, Mapping[str, Any]]], question: str, offered: Collection[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The earlier lookups in `calls` (oldest first) worth running again for `question`, the
    likeliest first. Only tools in `offered` that read (`is_lookup`). A call scores one for
    each of the question's search terms (`query_terms`) its arguments hold, less one for each
    identifier argument the question does not hold (another quarter, metric, order or
    article: likely not where the answer is). Kept: calls about what the question names (a
    term it holds, or the first word of a name: "Arcadia" for "Arcadia Foods") that score at
    least zero; ties go to the call whose tool name and arguments share more words with the
    question, then to the newest. A call made twice counts once."""
    terms = [_spaced(t) for t in query_terms(question)]
    firsts = {t.split()[0] for t in terms if len(t.split()) > 1 and t.split()[0].isalpha()}
    asked, wanted = _spaced(question), words(question)
    ranked: dict[str, tuple[tuple[int, int, int], str, dict[str, Any]]] = {}
    for age, (name, arguments) in enumerate(reversed(calls)):
        key = signature(name, arguments)
        if name not in offered or not is_lookup(name, arguments) or key in ranked:
            continue
        values = [str(v) for v in arguments.values()]
        spaced = _spaced(" ".join(values))
        hits = sum(t in spaced for t in terms)
        if not hits and not firsts & set(spaced.split()):
            continue
        conflicts = sum(
            _IDENTIFIER.search(v) is not None and _spaced(v) not in asked for v in values
        )
        if conflicts > hits:
            continue
        # The tool's name says what it looks up: "the export" points at the export query.
        shared = len(wanted & words(f"{name.replace('_', ' ')} {spaced}"))
        ranked[key] = ((conflicts - hits, -shared, age), name, dict(arguments))
    return [(name, args) for _, name, args in sorted(ranked.values(), key=lambda r: r[0])]


_IDENTIFIER = re.compile(r"[0-9_]")


def _spaced(text: str) -> str:
    """Lower-case words and numbers between single spaces: "2025-Q4" and "2025_q4" match."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}
