"""What drifts in the recurring family (weekly.py): each subject's history, week by week
(a chief executive from the news, a capacity, price or plant status from the exports, the
user's preferences), and each Monday's own market export that carries the exported ones."""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass

import polars as pl

from evals.scenarios.base import rng
from evals.scenarios.market import METRIC_RANGES, WEEK_1, Company, World, matching_rows
from evals.scenarios.text import person
from evals.simulated.plan import Cue
from harness.tools import Tool, tool

FORMATS = ("bullets", "a table", "a numbered list", "short paragraphs")
SECTIONS = ("risks", "outlook", "pricing", "hiring", "supply chain")
WRONG_SOURCE, SOURCE = "the news articles", "the market export"

# What each Monday's export carries per firm and region: the three facts memory must keep
# current for each company (metric, its name in memory, plausible range and decimals), and
# weekly shipments, a figure that only drifts.
EXPORT_FACTS = {
    "capacity_units_k": ("plant capacity", (120.0, 900.0, 1)),
    "list_price_usd": ("list price", (8.0, 420.0, 2)),
    "plant_status": ("plant status", None),
}

EXPORT_METRICS = (*EXPORT_FACTS, "units_k")

STATUSES = ("operating", "idled", "closed", "reopened", "expanding")

EXPORT_COLUMNS = ("date", "company", "region", "metric", "value")


def monday(week: int) -> str:
    """The date of week `week` (1 = the flagship's first Monday)."""
    return (dt.date.fromisoformat(WEEK_1) + dt.timedelta(weeks=week - 1)).isoformat()


@dataclass(frozen=True)
class Subject:
    """Something memory must keep current: its values, each from the week it took effect."""

    key: str  # the memory entry's `[subject]`
    family: str  # pref, fact or decision
    question: str  # what a probe asks ({date} is filled in)
    history: tuple[tuple[int, str], ...]

    def value(self, week: int) -> str:
        """The value in force once week `week` is over."""
        return [v for w, v in self.history if w <= week][-1]

    def earlier(self, week: int) -> tuple[str, ...]:
        """Values it had before the one in force after `week` (the stale answers)."""
        current = self.value(week)
        return tuple(dict.fromkeys(v for w, v in self.history if w <= week and v != current))

    def changed(self, week: int) -> int:
        """The week its value in force after `week` took effect."""
        return [w for w, _ in self.history if w <= week][-1]

    def cue(self) -> Cue:
        return Cue(patterns=(rf"\[{re.escape(self.key)}\] ([^(\n]+?) \(",))


def _history(r, weeks: int, first: str, pool: tuple[str, ...] | list[str], every: tuple[int, int],
             start: int = 1) -> tuple[tuple[int, str], ...]:  # fmt: skip
    """`first` from week `start`, then a new value from `pool` every `every` weeks or so."""
    out = [(start, first)]
    week = start + r.randint(*every)
    while week <= weeks:
        value = r.choice([v for v in pool if v != out[-1][1]])
        out.append((week, value))
        week += r.randint(*every)
    return tuple(out)


def subjects(world: World, weeks: int) -> list[Subject]:
    """Every subject's history over `weeks`, drawn from the seed (feedback lands on weeks 2+)."""
    r = rng(world.seed, "weekly", "drift")
    names = [c.name for c in world.companies]
    out = [
        Subject("format", "pref", "how should the report be formatted now?",
                _history(r, weeks, "bullets", FORMATS, (5, 11))),
        Subject("sections", "decision", "what did we decide about the report's extra section?",
                _history(r, weeks, r.choice(SECTIONS), SECTIONS, (7, 15))),
        Subject("lead competitor", "decision",
                "what did we decide about which competitor leads the report?",
                _history(r, weeks, names[0], names, (9, 18))),
    ]  # fmt: skip
    # The agent's own wrong lesson of week 1, corrected by the user once, early.
    fix = r.randint(3, 6)
    source = ((1, WRONG_SOURCE), (fix, SOURCE)) if fix <= weeks else ((1, WRONG_SOURCE),)
    out.append(
        Subject(
            "lesson: revenue source",
            "decision",
            "what did we decide about where the revenue figures come from?",
            source,
        )
    )
    pool = [person(r) for _ in range(40)]
    for name in names:
        out.append(Subject(f"fact: {name} CEO", "fact",
                           f"who is {name}'s chief executive now, as far as our notes go?",
                           _history(r, weeks, r.choice(pool), pool, (6, 16))))  # fmt: skip
    # A stream of its own, so the subjects above keep the histories they had before.
    r = rng(world.seed, "weekly", "export drift")
    for c in world.companies:
        for metric, (label, spec) in EXPORT_FACTS.items():
            values = list(STATUSES) if spec is None else _figures(r, spec, 12)
            first = "operating" if spec is None else r.choice(values)
            out.append(Subject(export_key(c, metric), "fact",
                               f"what {label} does the market export give for {c.name} in "
                               f"{c.region} now, as far as our notes go?",
                               _history(r, weeks, first, values, (6, 16))))  # fmt: skip
    return out


def export_key(c: Company, metric: str) -> str:
    """The memory entry's subject of an export-derived fact."""
    return f"export: {c.name} {EXPORT_FACTS[metric][0]}"


def _figures(r: random.Random, spec: tuple[float, float, int], n: int) -> list[str]:
    """`n` plausible values of a figure (fewer if some round the same)."""
    lo, hi, digits = spec
    return list(dict.fromkeys(f"{r.uniform(lo, hi):.{digits}f}" for _ in range(n)))


class WeeklyExports:
    """One market export per company per Monday. Every figure drifts from week to week (a
    trend and some noise around a firm's level); the company's own cell of each fact in
    `EXPORT_FACTS` (its noted region) shows that subject's value in force that week, so a
    superseded capacity, price or plant status is in the data, not only in the news."""

    def __init__(self, world: World, subjects_: list[Subject], weeks: int) -> None:
        self.world = world
        self.weeks = weeks
        by_key = {s.key: s for s in subjects_}
        self.facts = {f"{c.name}:{m}": by_key[export_key(c, m)]
                      for c in world.companies for m in EXPORT_FACTS}  # fmt: skip
        self._frames: dict[tuple[str, int], pl.DataFrame] = {}

    def firms(self, c: Company) -> list[str]:
        # As in the flagship's exports: among its look-alikes, never first or last.
        return [c.lookalikes[0], c.name, *c.lookalikes[1:], *self.world.others]

    def frame(self, c: Company, week: int) -> pl.DataFrame:
        key = (c.name, week)
        if key not in self._frames:
            self._frames[key] = self._build(c, week)
        return self._frames[key]

    def _build(self, c: Company, week: int) -> pl.DataFrame:
        level = rng(self.world.seed, "weekly", "export level", c.name)  # same every week
        noise = rng(self.world.seed, "weekly", "export noise", c.name, week)
        date = monday(week)
        rows = []
        for firm in self.firms(c):
            for region in self.world.regions:
                for metric in EXPORT_METRICS:
                    # A cell's level, trend and status period, drawn in the same order each
                    # week; then this week's noise.
                    base, trend = level.random(), level.uniform(-0.004, 0.006)
                    period = level.randint(5, 20)
                    jitter = noise.uniform(-0.03, 0.03)
                    subject = self.facts.get(f"{c.name}:{metric}")
                    if subject is not None and firm == c.name and region == c.region:
                        text = subject.value(week)
                    elif metric == "plant_status":
                        text = STATUSES[(int(base * 100) + week // period) % len(STATUSES)]
                    else:
                        spec = EXPORT_FACTS[metric][1] if metric in EXPORT_FACTS else None
                        lo, hi, digits = spec or METRIC_RANGES[metric]
                        value = (lo + base * (hi - lo)) * (1 + trend * (week - 1)) * (1 + jitter)
                        text = f"{value:.{digits}f}"
                    rows.append((date, firm, region, metric, text))
        return pl.DataFrame(rows, schema=list(EXPORT_COLUMNS), orient="row")

    def files(self) -> dict[str, str]:
        """Every week's exports, for `ctxlab scenarios export`."""
        return {f"exports/{monday(w)}/{c.slug}.csv": self.frame(c, w).write_csv()
                for w in range(1, self.weeks + 1) for c in self.world.companies}  # fmt: skip

    def tool(self) -> Tool:
        """The agent's export query, by Monday: the weekly family's `query_market_export`."""
        world, dates = self.world, {monday(w): w for w in range(1, self.weeks + 1)}

        @tool
        def query_market_export(company: str, date: str, metric: str = "", region: str = "") -> str:
            """Query a Monday's market-data export for a company: each week has its own, and
            its figures change from week to week. Returns the matching rows as CSV (date,
            company, region, metric, value). The export also carries rows of other firms, some
            with similar names: check the company column.

            Args:
                company: Company name or the start of it, matched case-insensitively.
                date: The export's Monday, e.g. "2026-01-12".
                metric: capacity_units_k, list_price_usd, plant_status or units_k; empty for all.
                region: A region such as "EMEA", or empty for all.
            """
            target = world.export_for(company)
            if target is None:
                names = ", ".join(c.name for c in world.companies)
                return f"Error: no export for {company!r}. Exports: {names}."
            if date not in dates:
                return (f"Error: no export dated {date!r}; there is one each Monday from "
                        f"{monday(1)} to {monday(self.weeks)}.")  # fmt: skip
            df = matching_rows(self.frame(target, dates[date]), company, metric, region)
            if df.is_empty():
                return f"No rows in the {target.name} export of {date} match these filters."
            return f"{target.name} export, {date}: {df.height} rows match.\n" + df.write_csv()

        return query_market_export
