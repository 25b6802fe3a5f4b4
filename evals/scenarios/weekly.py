"""A year of Mondays: the competitive-analysis agent over N weekly sessions (`weeks=N`).

Each week is a session on a new thread and the same store, so only `/memories/` carries over.
The world drifts, drawn from the seed: each week's news brief is new, the companies' chief
executives change now and then, each Monday has its own market export (`WeeklyExports`: every
figure drifts week to week, and each company's plant capacity, list price and plant status are
superseded now and then, in the export only), and on some weeks the user gives feedback that
replaces an earlier one (the report's format, its extra section, which competitor leads it) or
corrects a lesson the agent drew itself in week 1 (where the revenue figures come from). The
agent keeps a log line of every week in memory, as peers' agents do, so memory grows week after
week, and notes what the week's export superseded.

Every week from the second opens with probes on what memory must hold by then, before the
week's own news or feedback: the current format preference (`pref`), the latest value of two
drifting facts (`fact`: a chief executive, from the news, and a capacity, price or plant status,
from the exports), "what did we decide about X" (`decision`), and wrong-if-stale probes on the
subject that changed most recently in the news or the user's feedback and on the one that
changed most recently in the exports (`stale`: its earlier values are distractors, so repeating
one is wrong). A probe's id starts with its family and ends with its week.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass

import polars as pl

from evals.scenarios.base import Probe, Script, act, call, rng, slug
from evals.scenarios.market import METRIC_RANGES, WEEK_1, Article, Company, World
from evals.scenarios.text import news_paragraph, person
from evals.simulated.plan import Cue, Memorize
from harness.tools import Tool, tool

MAX_WEEKS = 260  # five years of Mondays
FAMILIES = ("pref", "fact", "decision", "stale")
FORMATS = ("bullets", "a table", "a numbered list", "short paragraphs")
SECTIONS = ("risks", "outlook", "pricing", "hiring", "supply chain")
WRONG_SOURCE, SOURCE = "the news articles", "the market export"
NAME_RE = r"([A-Z][a-z]+ [A-Z][a-z]+)"
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


def check_weeks(weeks: object) -> int:
    """`weeks` as a number of weekly sessions, or a ValueError naming the range."""
    if isinstance(weeks, bool) or not isinstance(weeks, int) or not 1 <= weeks <= MAX_WEEKS:
        raise ValueError(f"weeks must be a whole number from 1 to {MAX_WEEKS}, got {weeks!r}")
    return weeks


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
            df = self.frame(target, dates[date]).filter(
                pl.col("company").str.to_lowercase().str.contains(company.lower(), literal=True)
            )
            if metric:
                df = df.filter(pl.col("metric") == metric)
            if region:
                df = df.filter(pl.col("region") == region)
            if df.is_empty():
                return f"No rows in the {target.name} export of {date} match these filters."
            return f"{target.name} export, {date}: {df.height} rows match.\n" + df.write_csv()

        return query_market_export


# -- what the user says, and how the agent recognises it -------------------------------------

FEEDBACK = {
    "format": ("from now on, format the report as {value}.", r"format the report as ([a-z ]+?)\."),
    "sections": ("the extra section is now {value}.", r"the extra section is now ([a-z ]+?)\."),
    "lead competitor": ("lead the report with {value} from now on.",
                        r"lead the report with (.+?) from now on\."),
    "lesson: revenue source": ("correction: the revenue figures come from {value}, not the "
                               "news; that lesson was wrong.",
                               r"revenue figures come from (the [a-z ]+?), not"),
}  # fmt: skip


def _brief(world: World, subjects_: list[Subject], week: int) -> Article:
    """Week `week`'s news brief: each company's chief executive news, among filler."""
    r = rng(world.seed, "weekly", "brief", week)
    paragraphs = []
    for c in world.companies:
        ceo = next(s for s in subjects_ if s.key == f"fact: {c.name} CEO")
        now, before = ceo.value(week), ceo.value(week - 1) if week > 1 else None
        lead = (f"{c.name} named {now} chief executive, succeeding {before}."
                if before is not None and before != now
                else f"{c.name} chief executive {now} spoke at an industry event.")  # fmt: skip
        others = [*c.lookalikes, *world.others]
        paragraphs.append(f"{lead} {news_paragraph(r, c.name, others, c.region, 3)}")
    date = monday(week)
    return Article(id=f"brief-{date}", title=f"Weekly brief, {date}", date=date,
                   byline=person(r), paragraphs=tuple(paragraphs), about="brief")  # fmt: skip


def _log_line(world: World, week: int) -> str:
    """The agent's journal of the week, as peers' agents keep one in memory (~800 chars)."""
    r = rng(world.seed, "weekly", "log", week)
    c = world.companies[week % len(world.companies)]
    notes = news_paragraph(r, c.name, [*c.lookalikes, *world.others], c.region, 6)
    notes = re.sub(r"\s+", " ", notes)[:700].rsplit(" ", 1)[0]
    date = monday(week)
    return f"- Week of {date}: read brief-{date}; report /reports/weekly-{date}.md; notes: {notes}"


def build_weeks(
    script: Script, world: World, weeks: int
) -> tuple[dict[str, Article], WeeklyExports]:
    """Add the `weeks` sessions to `script`; returns the briefs (article id -> article) and
    the weekly exports."""
    subs = subjects(world, weeks)
    briefs: dict[str, Article] = {}
    for week in range(1, weeks + 1):
        brief = _brief(world, subs, week)
        briefs[brief.id] = brief
        script.session(f"week-{week}")
        if week > 1:
            _probes(script, subs, week)
        _update(script, world, subs, week, brief)
    return briefs, WeeklyExports(world, subs, weeks)


def _export_cue(world: World, c: Company, metric: str, date: str) -> Cue:
    """The company's own row of `metric` in its noted region of the week's export; the
    look-alike firms' rows of the same cell are its distractors."""
    value = r"([^,\n]+)"
    others = "(?:" + "|".join(re.escape(x) for x in c.lookalikes) + ")"
    own = re.escape(f"{date},{c.name},{c.region},{metric},") + value
    look = re.escape(f"{date},") + others + re.escape(f",{c.region},{metric},") + value
    return Cue(patterns=(own,), lookalikes=(look,))


def _update(script: Script, world: World, subs: list[Subject], week: int, brief: Article) -> None:
    """The week's routine: read the brief, then note the week (and any new chief executive)."""
    date = monday(week)
    names = ", ".join(c.name for c in world.companies)
    lines = [_log_line(world, week)]
    slots: list[tuple[str, Cue]] = []
    for k, c in enumerate(world.companies):
        ceo = next(s for s in subs if s.key == f"fact: {c.name} CEO")
        if week == 1 or ceo.changed(week) == week:
            name = f"ceo_{k}"
            n = re.escape(c.name)
            cue = Cue(patterns=(rf"{n} named {NAME_RE} chief executive",
                                rf"{n} chief executive {NAME_RE} spoke"))  # fmt: skip
            slots.append((name, cue))
            lines.append(f"- [{ceo.key}] {{{{{name}}}}} (as of {date})")
    # What the week's export supersedes, compared with what memory holds (all of it in week 1).
    for k, c in enumerate(world.companies):
        for metric in EXPORT_FACTS:
            fact = next(s for s in subs if s.key == export_key(c, metric))
            if week == 1 or fact.changed(week) == week:
                name = f"export_{k}_{metric}"
                slots.append((name, _export_cue(world, c, metric, date)))
                lines.append(f"- [{fact.key}] {{{{{name}}}}} (as of {date})")
    queries = [call("query_market_export", company=c.name, date=date, region=c.region)
               for c in world.companies]  # fmt: skip
    if week == 1:
        text = (
            f"Monday {date}: the first weekly competitive analysis of {names}. Read this "
            "week's brief, check this week's market exports (capacity, list price, plant "
            "status) and keep in memory what next week needs. The team's format: "
            f"{FEEDBACK['format'][0].format(value='bullets')} Our extra section: "
            f"{FEEDBACK['sections'][0].format(value=_first(subs, 'sections'))} And "
            f"{FEEDBACK['lead competitor'][0].format(value=_first(subs, 'lead competitor'))}"
        )
        for s in subs[:3]:
            name = slug(s.key).replace("-", "_")
            slots.append((name, Cue(patterns=(FEEDBACK[s.key][1],))))
            lines.append(f"- [{s.key}] {{{{{name}}}}} (said {date})")
        # The agent's own (wrong) lesson: it took the articles' figures over the export's.
        lines.append(f"- [lesson: revenue source] {WRONG_SOURCE} (noted {date})")
    else:
        text = (f"Monday {date}: the weekly update on {names}. Read this week's brief, check "
                "this week's market exports and note what changed.")  # fmt: skip
        # Feedback comes with the week's request, as a user adds it to the Monday message.
        changes = [s for s in subs if s.key in FEEDBACK and s.changed(week) == week]
        if changes:
            text += " Feedback: " + " ".join(
                FEEDBACK[s.key][0].format(value=s.value(week)) for s in changes
            )
        for s in changes:
            name = slug(s.key).replace("-", "_")
            slots.append((name, Cue(patterns=(FEEDBACK[s.key][1],))))
            lines.append(f"- [{s.key}] {{{{{name}}}}} (said {date})")
    steps = (act(f"Reading {brief.id} and the exports of {date}.",
                 call("read_article", article_id=brief.id), *queries),
             Memorize(tuple(lines), tuple(slots), note="Noting the week in memory."))  # fmt: skip
    script.turn(text, steps, f"Week of {date} noted. Next step: the report.")


def _first(subs: list[Subject], key: str) -> str:
    return next(s for s in subs if s.key == key).history[0][1]


def _probes(script: Script, subs: list[Subject], week: int) -> None:
    """What memory must hold at the start of `week` (everything up to last week)."""
    last = week - 1
    date = monday(week)
    news = [s for s in subs if s.family == "fact" and not s.key.startswith("export: ")]
    exported = [s for s in subs if s.key.startswith("export: ")]
    decisions = [s for s in subs if s.family == "decision"]
    picked = [
        ("pref", next(s for s in subs if s.family == "pref")),
        ("fact", news[week % len(news)]),
        ("fact", exported[week % len(exported)]),
        ("decision", decisions[week % len(decisions)]),
    ]
    # A wrong-if-stale check on what the news or the user changed last, and one on what the
    # exports changed last: each group's newest change, so both kinds are checked every week.
    for group in ([s for s in subs if s not in exported], exported):
        changed = [s for s in group if s.earlier(last)]
        if changed:
            picked.append(("stale", max(changed, key=lambda s: (s.changed(last), s.key))))
    for family, s in picked:
        prefix = "Stale check" if family == "stale" else "Before we start"
        pid = f"{family}-{slug(s.key.removeprefix('fact: '))}-w{week:03d}"
        script.ask(Probe(
            pid, "decision" if s.family == "decision" else "recall",
            f"{prefix}, week of {date}: {s.question}", s.value(last), s.cue(),
            planted=f"week-{s.changed(last)}", distractors=s.earlier(last), source="memory",
        ))  # fmt: skip


def family(probe_id: str) -> str:
    """The probe family (`pref`, `fact`, `decision`, `stale`) of a weekly probe id."""
    head = probe_id.split("-", 1)[0]
    return head if head in FAMILIES else "other"
