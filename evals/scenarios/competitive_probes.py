"""The flagship scenario's planted facts (evals/scenarios/competitive_analysis.py): how each
is recognised in every form the agent writes it (`cues`) and what is asked about it, when
(`company_probes`)."""

from __future__ import annotations

import re

from evals.scenarios.base import Probe, rng
from evals.scenarios.market import EARLIER, LATEST, Company, World
from evals.simulated.plan import Cue

NAME = "competitive-analysis"
NEXT = Cue(patterns=(r"Next step: ([^.\n]+)",))
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def revenue_label(c: Company) -> str:
    return f"{c.name} {LATEST} revenue ({c.region}, {c.segment}, USD M)"


def _row(quarter: str, firm: str, region: str, segment: str, metric: str) -> str:
    return re.escape(f"{quarter},{firm},{region},{segment},{metric},") + NUMBER


def _others(c: Company) -> str:
    return "(?:" + "|".join(re.escape(x) for x in c.lookalikes) + ")"


def row_cue(c: Company, metric: str, quarter: str = LATEST, region: str = "",
            segment: str = "", *forms: str) -> Cue:  # fmt: skip
    """A figure of `c` in its export rows (and in the `forms` the agent writes it in); the
    look-alike firms' rows of the same cell are its distractors."""
    cell = (region or c.region, segment or c.segment, metric)
    look = rf"{re.escape(quarter)},{_others(c)},{re.escape(','.join(cell))}," + NUMBER
    return Cue(patterns=(_row(quarter, c.name, *cell), *forms), lookalikes=(look,))


def cues(c: Company) -> dict[str, Cue]:
    """How to recognise each planted fact about `c`, in every form it is written."""
    n = re.escape(c.name)
    note = f"Export check, {c.name}, {LATEST} {c.region} {c.segment} revenue_musd = "
    qualifier = (
        rf"{n} posted revenue of [0-9.]+ million dollars in the third quarter, ([^.\n]+)\.",
        rf"Decision on {n} revenue: [^;]*; reason: the article's number is given ([^.\n]+)\.",
        re.escape(f"{c.name} article figure set aside as") + ": ([^.\n]+)",
    )
    return {
        "export": row_cue(c, "revenue_musd", LATEST, "", "", re.escape(note) + NUMBER,
                          re.escape(revenue_label(c)) + ": " + NUMBER),
        "share": row_cue(c, "market_share_pct"),
        "claimed": Cue(patterns=(rf"{n} posted revenue of ([0-9.]+) million",)),
        "broad": row_cue(c, "units_k", EARLIER, c.x_region, c.x_segment),
        "closure": Cue(
            patterns=(
                n + r" confirmed that its (\w+) plant will close",
                re.escape(f"{c.name} plant closing in") + r": (\w+)",
            ),
            lookalikes=(_others(c) + r" confirmed that its (\w+) plant will close",),
        ),
        # The look-alike is the company's own look-alike firms' sentence, never any firm's:
        # a misreading returns a phrase of another firm, which the probe scores wrong.
        "decision": Cue(patterns=qualifier, lookalikes=(
            _others(c) + r" posted revenue of [0-9.]+ million dollars in the third quarter, "
            r"([^.\n]+)\.",)),
        "supplier": Cue(
            patterns=(n + r" signed a multi-year supply agreement with ([A-Z]\w+(?: [A-Z]\w+)*)",),
            lookalikes=(_others(c) + r" signed a multi-year supply agreement with "
                        r"([A-Z]\w+(?: [A-Z]\w+)*)",),
        ),
        "notes": Cue(patterns=(rf"Saving the {n} notes to (/\S+\.md)",)),
    }  # fmt: skip


def company_probes(world: World, i: int, c: Company) -> list[tuple[int, Probe]]:
    """Probes on company `i`, each with the turn after which it is asked: soon for some,
    several turns later for others, so early facts are also asked about late."""
    cue = cues(c)
    later = world.companies[i + 1].name if i + 1 < len(world.companies) else None
    # How long after the company each probe comes varies with the seed (longer runs, longer
    # delays, so early facts are also asked late); the order of the kinds stays.
    r = rng(world.seed, NAME, "delays", c.name)
    step = max(2, len(world.companies) // 3)
    delay = [0, 0]
    for _ in range(4):
        delay.append(delay[-1] + r.randint(0, step))
    n = len(world.companies)
    delay.append(max(delay[-1] + 1, r.randint(n // 2, n + 1)))  # the broad figure: late
    qualifiers = {x.qualifier for x in world.companies} | {c.decoy_qualifier}
    qualifiers.discard(c.qualifier)

    def probe(key: str, kind: str, question: str, answer: str, *, cue_: Cue | None = None,
              distractors: tuple[str, ...] = (), source: str = "tool") -> Probe:  # fmt: skip
        return Probe(
            f"{key}-{c.slug}",
            kind,
            question,
            answer,
            cue_ or cue[key],  # type: ignore[arg-type]
            planted=c.name,
            distractors=distractors,
            source=source,
        )  # type: ignore[arg-type]

    return [
        (i, probe("export", "recall",
                  f"What {LATEST} revenue (USD M) did the export give for {c.name} itself in "
                  f"{c.region}, {c.segment} segment?", world.value(c, "revenue_musd"),
                  distractors=world.lookalike_values(c, "revenue_musd"))),
        (i, probe("next", "continuation",
                  f"Check-in after {c.name}: before you go on, what is your next step?",
                  f"research {later}" if later else "draft the weekly report", cue_=NEXT,
                  source="agent")),
        (i + delay[2], probe("supplier", "recall",
                      f"Per the analyst sweep, which supplier did {c.name} sign a multi-year "
                      "deal with?", c.supplier, distractors=(c.decoy_supplier,))),
        (i + delay[3], probe("closure", "recall",
                      f"Which of {c.name}'s sites is being shut down, according to the coverage?",
                      c.city, distractors=(c.decoy_city,))),
        (i + delay[4], probe("notes", "artifact",
                             f"Which file did you put your notes on {c.name} in?",
                             f"/notes/{c.slug}.md", source="agent")),
        (i + delay[5], probe("decision", "decision",
                      f"Why did we set aside the article's revenue figure for {c.name}?",
                      c.qualifier, distractors=tuple(sorted(qualifiers)))),
        (i + delay[6], probe("broad", "recall",
                      f"In the {c.name} export, what were units_k for {c.name} in {c.x_region}, "
                      f"{c.x_segment} segment, {EARLIER}?",
                      world.value(c, "units_k", EARLIER, region=c.x_region, segment=c.x_segment),
                      distractors=world.lookalike_values(c, "units_k", EARLIER, region=c.x_region,
                                                         segment=c.x_segment))),
    ]  # fmt: skip
