"""The competitive-analysis world: market-data exports, news articles, analyst notes, and the
agent's domain tools over them.

Each target company has its own export: its rows among those of look-alike firms ("Arcadia
Foods Ltd", "ARCADIA FOODS GROUP", "Arcadia Holdings"...) and other firms, for every quarter,
region, segment and metric, so the figure that matters hides among near-identical rows. Its
articles carry planted facts next to the same facts about a look-alike.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from evals.scenarios.base import load_data, rng, slug
from evals.scenarios.text import news_paragraph, person, weave
from harness.tools import Tool, ToolContext, tool

WEEK_1 = "2026-01-12"
LATEST = "2025-Q4"
EARLIER = "2025-Q2"
COLUMNS = ("quarter", "company", "region", "segment", "metric", "value")
# Plausible range and decimals per metric.
METRIC_RANGES = {
    "revenue_musd": (12.0, 950.0, 1),
    "market_share_pct": (0.5, 34.0, 1),
    "units_k": (1.0, 900.0, 1),
    "gross_margin_pct": (6.0, 64.0, 1),
    "arpu_usd": (5.0, 420.0, 2),
    "churn_pct": (0.4, 14.0, 2),
    "headcount": (90.0, 42_000.0, 0),
    "capex_musd": (1.0, 210.0, 1),
}


@dataclass(frozen=True)
class Company:
    """A target company and its planted facts."""

    name: str
    slug: str
    lookalikes: tuple[str, ...]
    region: str  # of the export cell the agent notes
    segment: str
    x_region: str  # of the cell only the broad export shows
    x_segment: str
    city: str  # its plant that closes
    month: str
    supplier: str  # its new supplier, found by the analyst sweep
    reason: str  # why its article's revenue figure is set aside
    qualifier: str  # how the article words it: no other company of the seed shares it
    decoy_qualifier: str  # how it words a look-alike's revenue (the next company's, or a spare)
    decoy_city: str  # the same facts about a look-alike
    decoy_month: str
    decoy_supplier: str
    articles: int = 2  # how many articles the agent reads about it
    broad_quarter: str = "2025"  # what its broad export query asks for ("" = every year)

    @property
    def first_word(self) -> str:
        return self.name.split()[0]

    @property
    def revenue_decoy(self) -> str:
        """The look-alike whose revenue an article words with `decoy_qualifier`."""
        return self.lookalikes[1 % len(self.lookalikes)]


@dataclass(frozen=True)
class Article:
    id: str
    title: str
    date: str
    byline: str
    paragraphs: tuple[str, ...]
    about: str

    def text(self) -> str:
        body = "\n\n".join(self.paragraphs)
        return f"{self.title}\nBy {self.byline} | {self.date} | id {self.id}\n\n{body}"

    @property
    def snippet(self) -> str:
        return self.paragraphs[0].split(". ")[0].rstrip(".") + "."


class World:
    """All generated data of one seed and scale."""

    def __init__(self, seed: int, sizes: dict[str, Any]) -> None:
        names = load_data("names/companies.yaml")
        self.seed = seed
        self.sizes = sizes
        self.regions = names["regions"][: sizes["regions"]]
        self.segments = names["segments"][: sizes["segments"]]
        self.metrics = names["metrics"][: sizes["metrics"]]
        self.quarters = [f"{y}-Q{q}" for y in sizes["years"] for q in range(1, 5)]
        r = rng(seed, "market", "companies")
        self.others = r.sample(names["others"], sizes["others"])
        # Seeds vary structure, not only values: how many companies, how many articles each,
        # how long they are, how broad the first query is (a stream of its own, so the
        # values drawn elsewhere stay put).
        self.structure = rng(seed, "market", "structure")
        count = self.structure.randint(sizes["companies"], sizes.get("companies_max", 0) or
                                       sizes["companies"])  # fmt: skip
        targets = r.sample(names["targets"], count)
        self.companies = self._companies(r, targets, names["lookalikes"])
        self.exports = {c.name: self._export(seed, c) for c in self.companies}
        self.articles: dict[str, Article] = {}
        for c in self.companies:
            for a in self._articles(seed, c):
                self.articles[a.id] = a

    def _companies(
        self, r: random.Random, targets: list[str], templates: list[str]
    ) -> list[Company]:
        places = load_data("names/places.yaml")
        pool = load_data("text/news.yaml")["revenue_qualifiers"]
        # One phrase per company and one more, so every phrase belongs to a single firm of the
        # seed: a reader that takes another company's phrase (or the look-alike's, which is
        # the next company's) answers wrong, never right by chance.
        if len(pool) <= len(targets):
            raise ValueError(
                f"datasets/text/news.yaml has {len(pool)} revenue_qualifiers; "
                f"{len(targets)} companies need {len(targets) + 1}"
            )
        qualifiers = r.sample(pool, len(targets) + 1)
        cities = r.sample(places["cities"], 2 * len(targets))
        suppliers = r.sample(places["suppliers"], 2 * len(targets))
        out = []
        for i, name in enumerate(targets):
            first = name.split()[0]
            looks = [t.format(name=name, upper=name.upper(), first=first) for t in templates]
            regions = r.sample(self.regions, min(2, len(self.regions)))
            out.append(
                Company(
                    name=name, slug=slug(name), lookalikes=tuple(looks[: self.sizes["lookalikes"]]),
                    region=regions[0], segment=r.choice(self.segments),
                    x_region=regions[-1], x_segment=r.choice(self.segments),
                    city=cities[2 * i], month=r.choice(places["months"]),
                    supplier=suppliers[2 * i], reason=qualifiers[i]["reason"],
                    qualifier=qualifiers[i]["qualifier"],
                    decoy_qualifier=qualifiers[i + 1]["qualifier"], decoy_city=cities[2 * i + 1],
                    decoy_month=r.choice(places["months"]), decoy_supplier=suppliers[2 * i + 1],
                    articles=self.structure.randint(self.sizes["articles"],
                                                    self.sizes.get("articles_max", 0)
                                                    or self.sizes["articles"]),
                    broad_quarter=""
                    if self.structure.random() < self.sizes.get("broad_all_years", 0.0)
                    else LATEST[:4],
                )
            )  # fmt: skip
        return out

    def _export(self, seed: int, c: Company) -> pl.DataFrame:
        r = rng(seed, "market", "export", c.name)
        # The company sits among its look-alikes, never first or last, so the head and tail
        # of a query (what an offload preview shows) never hold its rows.
        firms = [c.lookalikes[0], c.name, *c.lookalikes[1:], *self.others]
        rows = []
        for firm in firms:
            for q in self.quarters:
                for region in self.regions:
                    for segment in self.segments:
                        for metric in self.metrics:
                            lo, hi, digits = METRIC_RANGES[metric]
                            value = round(r.uniform(lo, hi), digits)
                            text = f"{value:.{digits}f}" if digits else str(int(value))
                            rows.append((q, firm, region, segment, metric, text))
        return pl.DataFrame(rows, schema=list(COLUMNS), orient="row")

    def value(self, c: Company, metric: str, quarter: str = LATEST, *, firm: str = "",
              region: str = "", segment: str = "") -> str:  # fmt: skip
        """The export's value for `firm` (default: the company itself) in the company's
        noted region and segment unless others are given."""
        df = self.exports[c.name].filter(
            (pl.col("company") == (firm or c.name)) & (pl.col("quarter") == quarter)
            & (pl.col("region") == (region or c.region))
            & (pl.col("segment") == (segment or c.segment)) & (pl.col("metric") == metric)
        )  # fmt: skip
        return str(df["value"][0])

    def lookalike_values(
        self, c: Company, metric: str, quarter: str = LATEST, **cell: str
    ) -> tuple[str, ...]:
        return tuple(self.value(c, metric, quarter, firm=f, **cell) for f in c.lookalikes)

    def claimed_revenue(self, c: Company) -> str:
        """The (wrong) revenue figure the company's second article gives."""
        text = self.articles[f"a-{c.slug}-2"].text()
        m = re.search(rf"{re.escape(c.name)} posted revenue of ([0-9.]+) million", text)
        assert m is not None
        return m.group(1)

    def _articles(self, seed: int, c: Company) -> list[Article]:
        r = rng(seed, "market", "articles", c.name)
        news = load_data("text/news.yaml")
        n_par = self.sizes["article_paragraphs"]
        others = [*c.lookalikes, *self.others]
        revenue = float(self.value(c, "revenue_musd"))
        planted = [
            [news["plant_closure"].format(company=c.name, city=c.city, month=c.month),
             news["plant_closure"].format(company=c.lookalikes[0], city=c.decoy_city,
                                          month=c.decoy_month)],
            [news["conflicting_revenue"].format(company=c.name, qualifier=c.qualifier,
                                                value=f"{revenue * r.uniform(1.06, 1.18):.1f}"),
             news["conflicting_revenue"].format(company=c.revenue_decoy,
                                                qualifier=c.decoy_qualifier,
                                                value=f"{revenue * r.uniform(0.8, 1.2):.1f}")],
        ]  # fmt: skip
        out = []
        for k in range(c.articles):
            length = self._length(seed, f"a-{c.slug}-{k + 1}", n_par)
            paragraphs = [news_paragraph(r, c.name, others, c.region) for _ in range(length)]
            out.append(
                Article(
                    id=f"a-{c.slug}-{k + 1}",
                    title=f"{c.name} {r.choice(news['headlines']).format(region=c.region)}",
                    date=f"2026-01-{5 + k:02d}",
                    byline=person(r),
                    paragraphs=tuple(weave(r, paragraphs, planted[k] if k < 2 else [])),
                    about=c.name,
                )
            )
        finding = news["supplier_finding"].format(company=c.name, supplier=c.supplier)
        decoy = news["supplier_finding"].format(company=c.lookalikes[-1], supplier=c.decoy_supplier)
        n_pages = self.sizes["sweep_pages"]
        spots = {r.randrange(n_pages): finding}
        spots.setdefault((max(spots) + 1) % n_pages, decoy)
        for k in range(n_pages):
            paragraphs = [
                news_paragraph(r, c.name, others, c.region, 4) for _ in range(max(2, n_par // 2))
            ]
            headline = r.choice(news["headlines"]).format(region=c.region)
            out.append(
                Article(
                    id=f"n-{c.slug}-{k + 1}",
                    title=f"Analyst note on {c.name}: {headline}",
                    date=f"2025-{10 + k % 3:02d}-{3 + k:02d}",
                    byline=person(r),
                    paragraphs=tuple(weave(r, paragraphs, [spots[k]] if k in spots else [])),
                    about=c.name,
                )
            )
        return out

    def _length(self, seed: int, article: str, scale: int) -> int:
        """Paragraphs of an article: heavy-tailed (Pareto with `article_tail`) at full scale,
        so most articles are short and a few are very long; fixed without a tail."""
        tail = self.sizes.get("article_tail")
        if not tail:
            return scale
        u = rng(seed, "market", "length", article).random()
        cap = self.sizes.get("article_paragraphs_max", 100 * scale)
        return min(int(scale / (1.0 - u) ** (1.0 / tail)), cap)

    def export_for(self, query: str) -> Company | None:
        """The export a company query goes to: the target whose first word it starts with."""
        words = query.lower().split()
        return next((c for c in self.companies if words and c.first_word.lower() == words[0]), None)

    def files(self) -> dict[str, str]:
        """The generated data as files, for `ctxlab scenarios export`."""
        files = {f"exports/{c.slug}.csv": self.exports[c.name].write_csv() for c in self.companies}
        files.update({f"articles/{a.id}.md": a.text() for a in self.articles.values()})
        return files


def matching_rows(
    export: pl.DataFrame, company: str, metric: str, region: str, quarter: str = ""
) -> pl.DataFrame:
    """The rows of an export that a `query_market_export` call asks for (an empty filter
    keeps every row), the flagship's and each drifting week's alike."""
    df = export.filter(
        pl.col("company").str.to_lowercase().str.contains(company.lower(), literal=True)
    )
    if quarter:
        df = df.filter(pl.col("quarter").str.starts_with(quarter))
    if metric:
        df = df.filter(pl.col("metric") == metric)
    if region:
        df = df.filter(pl.col("region") == region)
    return df


def make_tools(world: World) -> tuple[Tool, ...]:
    """The agent's domain tools: export query, news search, article reading, publishing."""

    @tool
    def query_market_export(
        company: str, quarter: str = "", metric: str = "", region: str = ""
    ) -> str:
        """Query this week's market-data export for a company. Returns the matching rows as CSV
        (quarter, company, region, segment, metric, value). The export also carries rows of
        other firms, some with similar names: check the company column.

        Args:
            company: Company name or the start of it, matched case-insensitively.
            quarter: A quarter such as "2025-Q4", a year such as "2025", or empty for all.
            metric: A metric such as "revenue_musd", or empty for all.
            region: A region such as "EMEA", or empty for all.
        """
        target = world.export_for(company)
        if target is None:
            names = ", ".join(c.name for c in world.companies)
            return f"Error: no export for {company!r} this week. Exports: {names}."
        df = matching_rows(world.exports[target.name], company, metric, region, quarter)
        if df.is_empty():
            return f"No rows in the {target.name} export match these filters."
        return f"{target.name} export, {WEEK_1}: {df.height} rows match.\n" + df.write_csv()

    @tool
    def search_news(query: str) -> str:
        """Search news articles and analyst notes. Returns ids, dates, titles and a snippet.

        Args:
            query: Words to look for.
        """
        words = {w for w in re.findall(r"[a-z0-9]+", query.lower()) if len(w) > 2}
        scored = []
        for a in world.articles.values():
            hay = set(re.findall(r"[a-z0-9]+", f"{a.title} {a.snippet} {a.about}".lower()))
            if words & hay:
                scored.append((-len(words & hay), a.id))
        hits = [world.articles[i] for _, i in sorted(scored)[: world.sizes["news_results"]]]
        if not hits:
            return f"No results for {query!r}."
        lines = [f"{len(hits)} results for {query!r}:"]
        lines += [f"[{a.id}] {a.date} | {a.title}\n    {a.snippet}" for a in hits]
        return "\n".join(lines)

    @tool
    def read_article(article_id: str) -> str:
        """Read a news article or analyst note in full.

        Args:
            article_id: The id shown in search results, e.g. "a-arcadia-foods-1".
        """
        article = world.articles.get(article_id)
        if article is None:
            return f"Error: no article with id {article_id!r}; search first."
        return article.text()

    @tool
    def publish_report(file_path: str, ctx: ToolContext) -> str:
        """Publish a finished report to the team channel.

        Args:
            file_path: The report file, e.g. "/reports/weekly-2026-01-12.md".
        """
        text = ctx.state.files.read_text(file_path)
        sections = sum(line.startswith("## ") for line in text.splitlines())
        words = len(text.split())
        return f"Published {file_path} to #competitive-intel ({sections} sections, {words} words)."

    return (query_market_export, search_news, read_article, publish_report)
