"""The tools and calls of the benchmark trajectory, and how its peak RSS is read, shared by
`trajectory.py` (ctxlab) and `deepagents_trajectory.py` (which runs in an interpreter without
ctxlab): nothing here imports beyond the standard library, so both sides replay exactly the
same texts and are measured alike."""

from __future__ import annotations

import random
import re
import resource
from collections.abc import Callable, Iterator
from functools import cache

REGIONS = ["EMEA", "APAC", "NA", "LATAM"]
PRODUCTS = ["widgets", "gadgets", "sprockets", "gizmos", "doohickeys"]


def export_text(company: str, rows: int) -> str:
    """A CSV market export, ~32 characters a row (~97k characters at 3,000 rows). The rows are
    made once per size: the benchmark times the harness, not the tool."""
    return f"company,{company}\n{_export_rows(rows)}"


@cache
def _export_rows(rows: int) -> str:
    rng = random.Random(rows)
    lines = ["date,region,product,units,revenue"]
    for i in range(rows):
        lines.append(
            f"2025-{1 + i % 12:02d}-{1 + i % 28:02d},{rng.choice(REGIONS)},"
            f"{rng.choice(PRODUCTS)},{rng.randint(1, 99)},{rng.randint(1_000, 9_999)}"
        )
    return "\n".join(lines)


def news_text(company: str) -> str:
    """A short news page (~1.5k characters), small enough to stay in the window."""
    rng = random.Random("news" + company)
    words = ["revenue", "growth", "market", "share", "launch", "quarter", "guidance", "margin"]
    body = " ".join(rng.choice(words) for _ in range(220))
    return f"# {company} news\n\n{body}"


def tool_functions(rows: int) -> list[Callable[[str], str]]:
    """The trajectory's two tools as plain functions, for each side's own `tool` decorator
    (their docstrings are the descriptions the model sees)."""

    def market_export(company: str) -> str:
        """Download the market export of a company."""
        return export_text(company, rows)

    def news(company: str) -> str:
        """Fetch the latest news page of a company."""
        return news_text(company)

    return [market_export, news]


def tool_calls(companies: int) -> Iterator[tuple[str, str, str]]:
    """(call id, tool, company) of every call the scripted model makes, in order: per company
    its market export, then its news page."""
    for c in range(companies):
        name = f"company-{c}"
        yield f"x{c}", "market_export", name
        yield f"n{c}", "news", name


def peak_rss_mb() -> float:
    """This process's peak RSS: Linux's VmHWM, which starts afresh at exec, where a child's
    `ru_maxrss` starts at its parent's high-water mark (pytest's, hundreds of MB after the
    import benchmarks)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_by_mapping(top: int = 8) -> dict[str, float]:
    """Where this process's resident memory is now, in MB, largest first: by shared library
    (its file-backed pages: code and data such as a bundled vocabulary), `[anon]` (native
    allocations: DuckDB's tables and buffers, the tokenizer's tables) and `[heap]` (mostly
    Python objects). Linux only; empty elsewhere."""
    sizes: dict[str, int] = {}
    where = "[anon]"
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                if _MAPPING.match(line):
                    parts = line.split()
                    where = parts[5] if len(parts) > 5 else "[anon]"
                    if "site-packages/" in where:  # a package: its top folder or file
                        where = where.split("site-packages/")[1].split("/")[0]
                    elif where.startswith("/"):
                        where = where.rsplit("/", 1)[1]
                elif line.startswith("Rss:"):
                    sizes[where] = sizes.get(where, 0) + int(line.split()[1])
    except OSError:
        return {}
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:top]
    return {name: round(kb / 1024, 1) for name, kb in largest}


_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
