"""The flagship scenario: the articles' weekly competitive-analysis agent.

Session 1 (Monday), for each company: a broad export query (thousands of rows: the company,
its look-alikes, every quarter, region, segment and metric), two narrow queries, a news search,
two articles, an analyst sweep by the `market-researcher` subagent, notes. Then the report
from the `qbr-report` skill, feedback ("use bullets, not paragraphs": worth remembering), a
revision, formatting, publishing. Session 2, a week later on a new thread and the same store:
a quick update and a new report, which must follow the remembered preference.

What each planted fact tests, asked right away or several turns later:
- `export`: a figure the agent notes (recall): survives anything keeping the agent's words;
- `broad`: a figure only the broad export shows (recall): verbatim, or fetched from a file;
- `closure`: an article detail nobody notes (recall): summaries and masking drop it;
- `supplier`: what the subagent's sweep returned (recall);
- `decision`: why a figure was set aside; `notes`: where the notes went (artifact);
- `next`: what comes next (continuation); the reports' content and format (artifact, files).
"""

from __future__ import annotations

import re
from pathlib import Path

from evals.scenarios.base import (
    FileCheck,
    Probe,
    Scenario,
    Script,
    act,
    call,
    datasets_dir,
    generation,
)
from evals.scenarios.competitive_probes import (
    NAME,
    NUMBER,
    company_probes,
    cues,
    revenue_label,
    row_cue,
)
from evals.scenarios.market import LATEST, WEEK_1, Company, World, make_tools
from evals.scenarios.weekly import build_weeks, check_weeks
from evals.simulated.plan import Compose, Cue, Fact, ReadSkill, Remember, ReportFindings, Step
from evals.simulated.reader import template_sections
from harness.middleware.subagents import SubAgent

WEEK_2 = "2026-01-19"
REPORT_1 = f"/reports/weekly-{WEEK_1}.md"
REPORT_2 = f"/reports/weekly-{WEEK_2}.md"
TITLE = "Weekly competitive analysis"
# What the agent looks for in the skills menu: words of the qbr-report skill's description and
# not of its name, so the skill is found only while the menu shows what it is for.
SKILL_TOPIC = "competitive report"

SYSTEM_PROMPT = """\
You are the team's competitive-analysis agent. Every Monday you study the companies the user \
names: their market-data exports, the news and the analyst coverage. Verify figures against \
the export (exact company names only: exports carry look-alike firms), note what you find, and \
write the weekly report in the team's format. Delegate broad sweeps of coverage to the \
market-researcher subagent. Keep notes in /notes/ and reports in /reports/."""

RESEARCHER_PROMPT = """\
You are a market researcher. Sweep the coverage you are asked about with search_news and \
read_article, then reply with at most three key findings, one per line, each a single \
sentence with names and figures. Nothing else."""


# -- how the agent writes things down (the cues in competitive_probes.py match these forms) --
# The notes name what the agent read as `{{slot}}`s: the replay fills them from the request.


def export_note(c: Company) -> str:
    return (
        f"Export check, {c.name}, {LATEST} {c.region} {c.segment} revenue_musd = {{{{revenue}}}}; "
        f"market_share_pct = {{{{share}}}}. Rows of {', '.join(c.lookalikes)} set aside "
        "(other firms)."
    )


def decision_note(c: Company) -> str:
    return (
        f"Decision on {c.name} revenue: keep the export figure ({{{{revenue}}}}) over the "
        f"article's {{{{claimed}}}}; reason: the article's number is given {{{{qualifier}}}}."
    )


# -- the recorded run ----------------------------------------------------------------------


def company_steps(c: Company) -> tuple[Step, ...]:
    notes_path = f"/notes/{c.slug}.md"
    note, decision = export_note(c), decision_note(c)
    notes = f"# {c.name}, week of {WEEK_1}\n\n- {note}\n- {decision}\n"
    query = "query_market_export"
    cue = cues(c)
    read = (("revenue", cue["export"]), ("share", cue["share"]))
    decided = (("revenue", cue["export"]), ("claimed", cue["claimed"]),
               ("qualifier", cue["decision"]))  # fmt: skip
    return (
        act(f"Pulling the {c.name} market export for 2025.",
            call(query, company=c.first_word, quarter=c.broad_quarter)),
        act(f"The export mixes {c.name} with look-alike names; narrowing to exact-name rows "
            f"for {LATEST} revenue and market share.",
            call(query, company=c.name, quarter=LATEST, metric="revenue_musd"),
            call(query, company=c.name, quarter=LATEST, metric="market_share_pct")),
        act(note, call("search_news", query=f"{c.name} news"), slots=read),
        act(f"Reading the {c.articles} most relevant articles.",
            *(call("read_article", article_id=f"a-{c.slug}-{k + 1}") for k in range(c.articles))),
        act(decision, call("task", description=sweep_prompt(c), subagent_type="market-researcher"),
            slots=decided),
        act(f"Saving the {c.name} notes to {notes_path}.",
            call("write_file", file_path=notes_path, content=notes),
            slots=(*read, *decided[1:])),
    )  # fmt: skip


def sweep_prompt(c: Company) -> str:
    return (
        f"Sweep the analyst coverage of {c.name} from the last quarter: search widely, read what "
        "looks relevant, and reply with at most three key findings, one per line."
    )


def sweep_steps(world: World, c: Company) -> tuple[Step, ...]:
    """The subagent's noisy work: searches, then the pages, then its findings."""
    topics = ["analyst note", "supplier", "guidance", "margins", "outlook", "contracts"]
    queries = [f"Analyst note {c.name} {t}" for t in topics[: world.sizes["sweep_searches"]]]
    pages = [f"n-{c.slug}-{k + 1}" for k in range(world.sizes["sweep_pages"])]
    steps: list[Step] = [
        act("Searching the coverage.", *(call("search_news", query=q) for q in queries[k : k + 3]))
        for k in range(0, len(queries), 3)
    ]
    steps += [
        act("Reading the notes that look relevant.",
            *(call("read_article", article_id=p) for p in pages[k : k + 2]))
        for k in range(0, len(pages), 2)
    ]  # fmt: skip
    return (*steps, ReportFindings(limit=3))


def report_facts(world: World) -> tuple[Fact, ...]:
    """What the report is drafted from: whatever of these the context still holds."""
    facts = [Fact("Headline", "Companies covered", Cue(patterns=(r"study ([^:\n]+?) this week",)))]
    for section, label, key in (
        ("Market figures", revenue_label, "export"),
        ("News and signals", lambda c: f"{c.name} plant closing in", "closure"),
        ("Decisions", lambda c: f"{c.name} article figure set aside as", "decision"),
    ):
        facts += [Fact(section, label(c), cues(c)[key]) for c in world.companies]
    return tuple(facts)


def skill_dir() -> Path:
    """The team's report template, a real Agent Skills folder."""
    return datasets_dir() / "skills" / "qbr-report"


def week_1(script: Script, world: World) -> None:
    companies = world.companies
    report, feedback = len(companies), len(companies) + 1  # turn indices after the companies
    asked: dict[int, list[Probe]] = {}
    for i, c in enumerate(companies):
        for turn, p in company_probes(world, i, c):
            asked.setdefault(min(turn, feedback), []).append(p)

    names = ", ".join(c.name for c in companies[:-1]) + f" and {companies[-1].name}"
    for i, c in enumerate(companies):
        text = (
            f"Monday competitive analysis: study {names} this week. Start with {c.name}: pull "
            "its market export, check the news and the analyst coverage, and keep notes."
            if i == 0
            else f"Next, {c.name}: the same routine (export, news, analyst coverage, notes)."
        )
        nxt = (
            f"research {companies[i + 1].name}"
            if i + 1 < len(companies)
            else "draft the weekly report"
        )
        done = f"Done with {c.name}: export figures, coverage and notes are in. Next step: {nxt}."
        script.turn(text, company_steps(c), done)
        script.task(sweep_prompt(c), sweep_steps(world, c))
        for p in asked.get(i, []):
            script.ask(p)

    facts = report_facts(world)
    draft = Compose(REPORT_1, TITLE, facts, note=f"Writing the draft to {REPORT_1}.")
    script.turn(
        "Draft this week's competitive report from the team's template; save it under /reports/.",
        (ReadSkill(SKILL_TOPIC), draft),
        f"Draft saved to {REPORT_1}. Next step: wait for your feedback on the draft.",
    )
    saved = Cue(patterns=(r"Draft saved to (/reports/\S+\.md)",))
    question = "Which file holds this week's draft report?"
    script.ask(
        Probe(
            "report-path", "artifact", question, REPORT_1, saved, planted="report", source="agent"
        )
    )
    for p in asked.get(report, []):
        script.ask(p)

    header = f"# {TITLE}\n"
    formatted = f"# {TITLE}\n\n_Week of {WEEK_1} | sources: market exports, news, analyst sweep_\n"
    script.turn(
        "Thanks. Use bullets, not paragraphs, in the report sections, and please remember that "
        "for future reports.",
        (Remember(), Compose(REPORT_1, TITLE, facts, note="Rewriting the sections as bullets."),
         act("Formatting the header.",
             call("edit_file", file_path=REPORT_1, old_string=header, new_string=formatted)),
         act("Publishing the report.", call("publish_report", file_path=REPORT_1))),
        f"Revised {REPORT_1}: the sections now use bullets instead of paragraphs, the header is "
        "formatted, and the report is published.",
    )  # fmt: skip
    script.ask(Probe("revision", "artifact", "What did the revision change in the report sections?",
                     "bullets instead of paragraphs",
                     Cue(patterns=(r"the sections now use ([^,.]+)",)),
                     planted="feedback", source="agent"))  # fmt: skip
    for p in asked.get(feedback, []):
        script.ask(p)
    figures = tuple(f"{revenue_label(c)}: {world.value(c, 'revenue_musd')}" for c in companies)
    check = FileCheck(REPORT_1, contains=figures)
    question = "Does the week-1 report give every company's export revenue?"
    script.check(Probe("report-figures", "artifact", question, "yes", Cue(patterns=()),
                       planted="report", check=check))  # fmt: skip
    # The template's sections reach the draft only through the skill the agent reads, so this
    # is what `full-no-skills` loses.
    template = (skill_dir() / "SKILL.md").read_text(encoding="utf-8")
    headings = tuple(f"## {s}" for s in template_sections([template]))
    question = "Does the week-1 report follow the team template's sections?"
    script.check(Probe("report-sections", "artifact", question, "yes", Cue(patterns=()),
                       planted="skill", check=FileCheck(REPORT_1, contains=headings),
                       source="skill"))  # fmt: skip


def week_2(script: Script, world: World) -> None:
    focus = world.companies[:2]

    def margin_note(c: Company) -> str:
        return f"Margin check, {c.name}, {LATEST} {c.region} {c.segment} gross_margin_pct = "

    def label(c: Company) -> str:
        return f"{c.name} {LATEST} gross margin ({c.region}, {c.segment}, %)"

    def query(c: Company) -> tuple[str, dict]:
        return call("query_market_export", company=c.name, quarter=LATEST,
                    metric="gross_margin_pct", region=c.region)  # fmt: skip

    # Each margin is noted once its query has answered, alongside the next call.
    slots = [(f"margin_{k}", row_cue(c, "gross_margin_pct")) for k, c in enumerate(focus)]
    notes = [
        margin_note(c) + "{{" + name + "}}." for c, (name, _) in zip(focus, slots, strict=True)
    ]
    steps = [
        act(f"Checking the {focus[0].name} margin.", query(focus[0])),
        act(notes[0], query(focus[1]), slots=slots[:1]),
        act(notes[1], call("write_file", file_path=f"/notes/margins-{WEEK_2}.md",
                           content="\n".join(f"- {n}" for n in notes) + "\n"),
            slots=tuple(slots)),
    ]  # fmt: skip
    facts = tuple(
        Fact("Market figures", label(c),
             Cue((re.escape(margin_note(c)) + NUMBER, re.escape(label(c)) + ": " + NUMBER)))
        for c in focus
    )  # fmt: skip
    script.turn(
        f"Monday again: a quick update on {focus[0].name} and {focus[1].name}, then the report.",
        (
            ReadSkill(SKILL_TOPIC),
            *steps,
            Compose(REPORT_2, TITLE, facts, note=f"Writing {REPORT_2}."),
        ),
        f"Report saved to {REPORT_2}. Next step: share it with the team.",
    )
    script.ask(Probe("memory-format", "recall",
                     "How does the team want the report sections formatted: bullets or paragraphs?",
                     "bullets", Cue(patterns=(r"(?i)\buse ([a-z]+), not [a-z]+",)),
                     planted="memory", distractors=("paragraphs",), source="memory"))  # fmt: skip
    c = focus[0]
    script.ask(Probe("margin-week-2", "recall",
                     f"What {LATEST} gross margin did the export give for {c.name} in {c.region}, "
                     f"{c.segment}?", world.value(c, "gross_margin_pct"),
                     row_cue(c, "gross_margin_pct", LATEST, "", "",
                             re.escape(margin_note(c)) + NUMBER), planted="week-2",
                     distractors=world.lookalike_values(c, "gross_margin_pct")))  # fmt: skip
    script.check(Probe("report-bullets", "artifact",
                       "Does the week-2 report use bullets, as remembered?", "yes",
                       Cue(patterns=()),
                       planted="memory", check=FileCheck(REPORT_2, bullets=True),
                       source="memory"))  # fmt: skip


# Scenario parameters (`--set weeks=52`) and their checks: without `weeks`, the two-week
# flagship.
PARAMS = {"weeks": check_weeks}


def build(seed: int = 0, scale: str = "full", weeks: int | None = None) -> Scenario:
    """Generate the scenario for `seed` at `scale` ("small" or "full"); with `weeks`, the
    recurring family over that many weekly sessions (evals/scenarios/weekly.py)."""
    g = generation(NAME, seed, scale)
    world = World(seed, g.extra)
    script = g.script()
    if weeks is None:
        script.session("week-1")
        week_1(script, world)
        script.session("week-2")
        week_2(script, world)
    else:
        briefs, exports = build_weeks(script, world, check_weeks(weeks))
        world.articles.update(briefs)
    tools = make_tools(world)
    data_files = world.files
    if weeks is not None:
        # Each Monday's own export, queried by date, in place of the flagship's one.
        tools = (exports.tool(), *tools[1:])

        def data_files() -> dict[str, str]:
            files = {k: v for k, v in world.files().items() if not k.startswith("exports/")}
            return {**files, **exports.files()}

    researcher = SubAgent(
        name="market-researcher",
        description="Sweeps news and analyst coverage of one company; returns key findings.",
        system_prompt=RESEARCHER_PROMPT,
        tools=tools[1:3],  # search_news, read_article
    )
    return g.scenario(
        script, tools=tools, system_prompt=SYSTEM_PROMPT,
        skills_dir=skill_dir(), subagents=(researcher,),
        max_steps=60, data_files=data_files, recurring=weeks is not None,
        # The companies first, so each is swapped with another company (its rows, articles
        # and supplier then answer for the other), then their look-alikes.
        entities=(*(c.name for c in world.companies),
                  *(x for c in world.companies for x in c.lookalikes)),
    )  # fmt: skip
