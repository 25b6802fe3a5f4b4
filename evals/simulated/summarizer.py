"""The simulated summarizer: extractive, lossy by budget and salience, and led by its prompt.

It keeps what fits its budget, the most salient lines first: the user's and the agent's own
lines that carry a fact of a kind its instructions ask it to keep, then their other lines,
then the heads of tool results; within a rank, the newest first, so the oldest details fade
cycle after cycle. A tighter budget or an earlier trigger (more cycles, each re-summarizing
the last summary) loses facts, as with a real summarizer.

It follows its prompt (the summarizer's system prompt) as a model would, read by
`instructions`: a kind of fact (figures, paths and files, names and identifiers) ranks first
only when the prompt asks for it, and a length the prompt sets ("in two sentences", "in 100
words", "briefly") caps the summary. The default prompt (harness/middleware/summarizer.py)
asks for all three kinds and sets no length; "Briefly summarize in two sentences" keeps the
two newest lines of the agent's own words, which is what the gate must see fail.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.memo import Memo
from harness.messages import Message
from harness.middleware.summarizer import DEFAULT_PROMPT
from harness.tokens import TokenCounter

SUMMARY_MARKER = "<summary-request>"
SUMMARY_HEADER = "Summary of the earlier conversation, extractive"
_HEADING = re.compile(r"^#{2,4} ([A-Za-z]+)[^\n]*$", re.MULTILINE)
_CALL = re.compile(r"^-> calls (\S+) \(id [^)]*\) with (.*)$")
_TAGGED = re.compile(r"^\[(user|assistant|tool)\] (.*)$")
# Each kind of fact a prompt may ask for: the words that ask for it, the lines that carry it.
_KINDS = {
    "figures": (r"\b(?:figures?|numbers?|amounts?|measurements?|values?)\b", r"\d"),
    "paths": (r"\b(?:paths?|files?|artifacts?)\b", r"/[a-z_]+/"),
    "names": (r"\b(?:names?|identifiers?|ids?)\b", r"\b[A-Z][a-z]+ [A-Z][a-z]+"),
}
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
_COUNT = r"(\d+|" + "|".join(_COUNTS) + r")"
_LINES = re.compile(rf"(?i)\b{_COUNT} (?:short )?(?:sentences?|lines?|bullets?|bullet points?)\b")
_WORDS = re.compile(rf"(?i)\b{_COUNT} words?\b")
_BRIEF = re.compile(r"(?i)\b(?:brief(?:ly)?|short|concise(?:ly)?|terse(?:ly)?|succinct(?:ly)?)\b")
# Asked to be brief without a count, a model writes about a paragraph: a quarter of the page.
BRIEF_SHARE = 0.25
WORD_TOKENS = 1.3  # tokens per English word


@dataclass(frozen=True)
class Instructions:
    """What a summarizer prompt asks for, as the simulated summarizer follows it.

    salient: the line patterns that rank first (the kinds of fact the prompt asks to keep).
    max_lines: the most lines the summary may have, when the prompt counts sentences or lines.
    max_tokens: a cap the prompt sets in words; share: the part of the budget it allows."""

    salient: re.Pattern[str] | None
    max_lines: int | None = None
    max_tokens: int | None = None
    share: float = 1.0

    def budget(self, budget: int) -> int:
        capped = int(budget * self.share)
        return min(capped, self.max_tokens) if self.max_tokens is not None else capped


@functools.lru_cache(maxsize=64)
def instructions(prompt: str) -> Instructions:
    """How the simulated summarizer reads `prompt`: the kinds of fact it is asked to keep and
    the length it is allowed (see the module doc). Read once per prompt: every summary of a
    run is asked for under the same one."""
    asked = [line for words, line in _KINDS.values() if re.search(words, prompt, re.IGNORECASE)]
    salient = re.compile("|".join(asked)) if asked else None
    lines = _LINES.search(prompt)
    words = _WORDS.search(prompt)
    return Instructions(
        salient,
        max_lines=_count(lines.group(1)) if lines else None,
        max_tokens=round(_count(words.group(1)) * WORD_TOKENS) if words else None,
        share=BRIEF_SHARE if _BRIEF.search(prompt) and not (lines or words) else 1.0,
    )


def _count(text: str) -> int:
    return _COUNTS.get(text.lower()) or int(text)


# The harness's default prompt: what every summary of the evals is written under.
DEFAULT = instructions(DEFAULT_PROMPT)
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
          "tool": "tool", "summary": "summary", "previous": "summary"}  # fmt: skip


def is_summary_request(system_prompt: str, messages: Sequence[Message]) -> bool:
    return SUMMARY_MARKER in system_prompt or any(
        SUMMARY_MARKER in m.content for m in messages[-2:]
    )


def salience(role: str, line: str, asked: Instructions = DEFAULT) -> int:
    """0 (kept first) to 2: own words with a fact of a kind `asked` for, other own words,
    tool-result heads."""
    if role == "tool":
        return 2
    return 0 if asked.salient is not None and asked.salient.search(line) else 1


def extractive_summary(
    units: Sequence[tuple[str, str]],
    budget: int,
    counter: TokenCounter,
    *,
    head_lines: int = 2,
    asked: Instructions = DEFAULT,
) -> str:
    """Keep the most salient lines of `units` ((role, text), oldest first, the previous
    summary's lines included) within `budget` tokens and what the prompt, read into `asked`,
    allows; kept lines come out in their order."""
    key = (tuple(units), budget, head_lines, asked, counter.encoding_name)
    known = _SUMMARIES.get(key)  # one look-up: a replay in another thread may evict it meanwhile
    if known is not None:
        return known
    return _SUMMARIES.put(key, _extractive(units, budget, counter, head_lines, asked))


# Summaries written, by what they were written from, kept while those texts hold at most this
# many characters in all: a trace's two cells (fallible and ideal reader) mostly ask for the
# same summaries, and a summary is a function of its units, budget, prompt and tokenizer.
SUMMARY_CHARS = 4_000_000
_SummaryKey = tuple[tuple[tuple[str, str], ...], int, int, Instructions, str]
_SUMMARIES: Memo[_SummaryKey, str] = Memo(
    SUMMARY_CHARS, lambda key: sum(len(text) for _, text in key[0])
)


def _extractive(
    units: Sequence[tuple[str, str]],
    budget: int,
    counter: TokenCounter,
    head_lines: int,
    asked: Instructions,
) -> str:
    candidates: list[tuple[int, int, str]] = []  # (salience, order, line)
    for role, text in units:
        stripped = (s for ln in text.splitlines() if (s := ln.strip()))
        if role == "tool":
            # Only a result's head is kept: the lines past it are not stripped at all.
            lines = [ln[:240] for ln in itertools.islice(stripped, head_lines)]
        else:
            lines = list(stripped)
        candidates += [
            (salience(role, ln, asked), len(candidates) + k, f"[{role}] {ln}")
            for k, ln in enumerate(lines)
        ]
    kept: list[tuple[int, str]] = []
    used = 0
    budget = asked.budget(budget)
    for _, order, line in sorted(candidates, key=lambda c: (c[0], -c[1])):
        if asked.max_lines is not None and len(kept) >= asked.max_lines:
            break
        cost = counter.count_text(line) + 1
        if used + cost > budget:
            continue
        kept.append((order, line))
        used += cost
    body = "\n".join(line for _, line in sorted(kept))
    return f"{SUMMARY_HEADER} ({used} tokens):\n{body}"


def summary_units(messages: Sequence[Message], *, previous: bool = True) -> list[tuple[str, str]]:
    """What a summarization request asks to condense, as (role, text) units, oldest first.

    The request renders the conversation as markdown blocks, one per message, each under a
    heading naming its role ("### User", "### Assistant", "### Tool ...", "### Summary" for the
    previous summary). A tool call becomes a line naming the call, or the file it wrote.
    `previous=False` leaves the previous summaries out (they were withheld)."""
    text = "\n".join(m.content for m in messages if SUMMARY_MARKER in m.content)
    known = _UNITS.get((text, previous))  # one look-up: another thread may evict it meanwhile
    if known is None:
        known = _UNITS.put((text, previous), tuple(_units(text, previous)))
    return list(known)


# A request's units, by its text, kept while those texts hold at most this many characters.
_UNITS: Memo[tuple[str, bool], tuple[tuple[str, str], ...]] = Memo(
    SUMMARY_CHARS, lambda key: len(key[0])
)


def _units(text: str, previous: bool) -> list[tuple[str, str]]:
    earlier = _between(text, "<previous-summary>", "</previous-summary>") if previous else ""
    units = _summary_lines(earlier) if earlier else []
    heads = [h for h in _HEADING.finditer(text) if h.group(1).lower() in _ROLES]
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        body = text[head.end() : end]
        body = body.split("</conversation>")[0].split("</summary-request>")[0].strip("\n")
        role = _ROLES[head.group(1).lower()]
        if role == "summary":
            units += _summary_lines(body) if previous else []
            continue
        lines = [ln for ln in body.splitlines() if not ln.startswith("(result of ")]
        if role == "assistant":
            lines = [_call_line(ln) for ln in lines]
        units.append((role, "\n".join(lines)))
    return units


def _summary_lines(text: str) -> list[tuple[str, str]]:
    """A previous (extractive) summary back into units: its lines carry their roles."""
    units = []
    for line in text.splitlines():
        m = _TAGGED.match(line.strip())
        if m:
            units.append((m.group(1), m.group(2)))
        elif line.strip() and not line.startswith(SUMMARY_HEADER):
            units.append(("assistant", line.strip()))
    return units


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.rfind(end)
    return text[i + len(start) : j].strip("\n") if i >= 0 and j > i else ""


def _call_line(line: str) -> str:
    """A rendered tool call as a summarizer would keep it: only files written matter."""
    m = _CALL.match(line)
    if not m:
        return line
    name, raw = m.groups()
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        args = {}
    path = args.get("file_path") if isinstance(args, dict) else None
    if name in ("write_file", "edit_file") and path:
        return f"{'Wrote' if name == 'write_file' else 'Edited'} {path}."
    return ""  # the call itself is process, not content; its result has its own block


# -- memory consolidation (harness/middleware/memory.py, policy `consolidate`) ---------------

MEMORY_REQUEST = re.compile(
    r'<memory-consolidation path="[^"]*" budget_tokens="(\d+)">\n(.*?)\n?</memory-consolidation>',
    re.DOTALL,
)
_SUBJECT = re.compile(r"^- \[([^\]]+)\]")
_LABELLED = re.compile(r"^- ([A-Za-z][A-Za-z ]{0,30}): ")
# How often the consolidator resolves a contradiction the wrong way: it keeps the first
# wording of a subject instead of the newest, as a real rewrite sometimes does.
MISSED_CONTRADICTION = 0.04


def memory_request(messages: Sequence[Message]) -> tuple[int, str] | None:
    """(token budget, file text) of a memory-consolidation request, or None."""
    for m in reversed(messages[-2:]):
        found = MEMORY_REQUEST.search(m.content)
        if found:
            return int(found.group(1)), found.group(2)
    return None


def consolidate_memory(text: str, budget: int, counter: TokenCounter, seed: int = 0) -> str:
    """A plausible, fallible rewrite of a memory file within `budget` tokens.

    Entries about the same subject (`- [subject] ...`, or a `- Label: ...` line) collapse into
    one, the newest winning; now and then (`MISSED_CONTRADICTION`, drawn per subject) the
    first wording wins instead. Entries without a subject (logs of past weeks) are kept newest
    first while they fit; then subjects last updated longest ago are dropped. Headings stay."""
    headings: list[str] = []
    subjects: dict[str, list[tuple[int, str]]] = {}
    logs: list[tuple[int, str]] = []
    for order, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line not in headings:
                headings.append(line)
            continue
        m = _SUBJECT.match(line) or _LABELLED.match(line)
        if m:
            subjects.setdefault(m.group(1).strip().lower(), []).append((order, line))
        else:
            logs.append((order, line))
    chosen: list[tuple[int, int, str]] = []  # (order of first mention, last update, line)
    for key, lines in subjects.items():
        pick = lines[-1]
        distinct = {ln for _, ln in lines}
        if len(distinct) > 1 and _draw(seed, key, lines[-1][1]) < MISSED_CONTRADICTION:
            pick = lines[0]
        chosen.append((lines[0][0], lines[-1][0], pick[1]))
    used = sum(counter.count_text(h) + 1 for h in headings)
    kept: list[tuple[int, str]] = []
    for first, _updated, line in sorted(chosen, key=lambda c: -c[1]):  # newest updates first
        cost = counter.count_text(line) + 1
        if used + cost <= budget:
            kept.append((first, line))
            used += cost
    for order, line in reversed(logs):
        cost = counter.count_text(line) + 1
        if used + cost <= budget:
            kept.append((order, line))
            used += cost
    body = [line for _, line in sorted(kept)]
    return "\n".join([*headings, *([""] if headings else []), *body])


def _draw(*parts: object) -> float:
    import hashlib

    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
