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

import re

from evals.scenarios.base import Probe, Script, act, call, rng, slug
from evals.scenarios.drift import (
    EXPORT_FACTS,
    WRONG_SOURCE,
    Subject,
    WeeklyExports,
    export_key,
    monday,
    subjects,
)
from evals.scenarios.market import Article, Company, World
from evals.scenarios.text import news_paragraph, person
from evals.simulated.plan import Cue, Memorize

MAX_WEEKS = 260  # five years of Mondays
FAMILIES = ("pref", "fact", "decision", "stale")
NAME_RE = r"([A-Z][a-z]+ [A-Z][a-z]+)"


def check_weeks(weeks: object) -> int:
    """`weeks` as a number of weekly sessions, or a ValueError naming the range."""
    if isinstance(weeks, bool) or not isinstance(weeks, int) or not 1 <= weeks <= MAX_WEEKS:
        raise ValueError(f"weeks must be a whole number from 1 to {MAX_WEEKS}, got {weeks!r}")
    return weeks


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
