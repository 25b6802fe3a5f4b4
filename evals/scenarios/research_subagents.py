"""Noisy research through subagents.

For each topic the main agent hands a sweep to the `researcher` subagent, which runs dozens of
searches and reads dozens of pages in its own context; a few pages hold a notable finding
among the noise. Only the subagent's answer reaches the main context, so what survives is
decided by the subagent's own compaction (the strategy applies to it too) and by its answer.
"""

from __future__ import annotations

import re

from evals.scenarios.base import Probe, Scenario, act, call, generation, load_data, rng
from evals.scenarios.text import news_sentence
from evals.simulated.plan import Cue, ReportFindings, Step
from harness.middleware.subagents import SubAgent
from harness.tools import Tool, tool

NAME = "research-subagents"
BRIEF = "/briefs/research.md"
MARKER = "Key finding:"
NEXT = Cue(patterns=(r"Next step: ([^.\n]+)",))
SYSTEM_PROMPT = """\
You are a research lead. Hand broad research to the researcher subagent, one topic per task, \
and keep only what it reports: the notable, specific findings."""
RESEARCHER_PROMPT = """\
You are a researcher. Search widely with search_web, read the pages that look relevant with \
read_page, and reply with the notable findings only (at most five, one per line, each with \
names and figures)."""


class Corpus:
    """Pages and search results per topic, with the planted findings."""

    def __init__(self, seed: int, sizes: dict) -> None:
        data = load_data("text/research.yaml")
        names = load_data("names/companies.yaml")
        places = load_data("names/places.yaml")
        r = rng(seed, NAME, "topics")
        self.seed = seed
        self.sizes = sizes
        self.topics = r.sample(data["topics"], sizes["topics"])
        firms = r.sample(names["targets"] + names["others"], 3 * len(self.topics))
        self.firms = tuple(firms)
        self.findings: dict[
            str, list[tuple[str, str, str]]
        ] = {}  # slug -> (text, question, answer)
        self.pages: dict[str, str] = {}
        for t, topic in enumerate(self.topics):
            planted = []
            for k, template in enumerate(data["findings"]):
                slots = {
                    "company": firms[3 * t + k], "pct": str(r.randint(7, 38)),
                    "city": r.choice(places["cities"]), "supplier": r.choice(places["suppliers"]),
                    "month": r.choice(places["months"]),
                }  # fmt: skip
                finding, question = (template[k].format(**slots) for k in ("finding", "question"))
                planted.append((finding, question, slots[template["answer"]]))
            self.findings[topic["slug"]] = planted
            self._pages(seed, topic, [p[0] for p in planted], data["noise"], firms)

    def _pages(
        self, seed: int, topic: dict, findings: list[str], noise: list[str], firms: list[str]
    ) -> None:
        r = rng(seed, NAME, "pages", topic["slug"])
        n = self.sizes["pages"]
        spots = dict(zip(r.sample(range(n), len(findings)), findings, strict=True))
        for k in range(n):
            paragraphs = []
            for _ in range(self.sizes["page_paragraphs"]):
                sentences = [r.choice(noise).format(topic=topic["name"], area=topic["area"])]
                sentences += [news_sentence(r, r.choice(firms), firms, "EMEA") for _ in range(3)]
                paragraphs.append(" ".join(sentences))
            if k in spots:
                at = r.randrange(1, len(paragraphs)) if len(paragraphs) > 1 else 0
                paragraphs[at] += f" {MARKER} {spots[k]}"
            title = f"{topic['name'].capitalize()}: notes from the field, part {k + 1}"
            self.pages[page_id(topic, k)] = f"{title}\n\n" + "\n\n".join(paragraphs)

    def search(self, query: str) -> str:
        words = set(re.findall(r"[a-z]+", query.lower()))
        topic = next((t for t in self.topics if words & set(t["name"].split())), None)
        if topic is None:
            return f"No results for {query!r}."
        r = rng(self.seed, NAME, "search", query)
        ids = r.sample(range(self.sizes["pages"]), min(8, self.sizes["pages"]))
        lines = [f"Results for {query!r}:"]
        for k in ids:
            pid = page_id(topic, k)
            first = self.pages[pid].split("\n\n")[1].split(". ")[0]
            lines.append(f"- {pid}: {self.pages[pid].splitlines()[0]}\n  {first}.")
        return "\n".join(lines)


def page_id(topic: dict, k: int) -> str:
    return f"p-{topic['slug']}-{k + 1:02d}"


def make_tools(corpus: Corpus) -> tuple[Tool, ...]:
    @tool
    def search_web(query: str) -> str:
        """Search the web. Returns page ids with titles and a first line.

        Args:
            query: What to look for.
        """
        return corpus.search(query)

    @tool
    def read_page(page_id: str) -> str:
        """Read one page in full.

        Args:
            page_id: An id from the search results, e.g. "p-ports-03".
        """
        page = corpus.pages.get(page_id)
        return page if page is not None else f"Error: no page {page_id!r}."

    return (search_web, read_page)


def task_prompt(topic: dict) -> str:
    return (
        f"Research {topic['name']} across {topic['area']}: search widely, read the pages that "
        "look relevant, and report only the notable findings."
    )


def sweep(corpus: Corpus, topic: dict) -> tuple[Step, ...]:
    angles = ["costs", "pilots", "deployments", "suppliers", "regulation", "funding", "sites",
              "contracts", "outlook", "partners"]  # fmt: skip
    queries = [f"{topic['name']} {angles[k % len(angles)]} {k // len(angles) + 1}"
               for k in range(corpus.sizes["searches"])]  # fmt: skip
    pages = [page_id(topic, k) for k in range(corpus.sizes["pages"])]
    steps: list[Step] = [
        act("Searching.", *(call("search_web", query=q) for q in queries[k : k + 3]))
        for k in range(0, len(queries), 3)
    ]
    steps += [
        act("Reading.", *(call("read_page", page_id=p) for p in pages[k : k + 2]))
        for k in range(0, len(pages), 2)
    ]
    return (*steps, ReportFindings(marker=MARKER, limit=5))


def build(seed: int = 0, scale: str = "full") -> Scenario:
    """Generate the scenario for `seed` at `scale` ("small" or "full")."""
    g = generation(NAME, seed, scale)
    corpus = Corpus(seed, g.extra)
    topics = corpus.topics
    script = g.script()
    script.session("research")
    asked: dict[int, list[Probe]] = {}
    for t, topic in enumerate(topics):
        for k, (finding, question, answer) in enumerate(corpus.findings[topic["slug"]]):
            # The words after the finding's opening, whatever they are: never the answer itself.
            head = re.escape(finding.split(answer)[0])
            cue = Cue(patterns=(head + r"([\w-]+(?: [A-Z][\w-]+)*)",))
            probe = Probe(f"finding-{topic['slug']}-{k}", "recall", question, answer, cue,
                          planted=topic["name"])  # fmt: skip
            asked.setdefault(min(t + k, len(topics) - 1), []).append(probe)
    for t, topic in enumerate(topics):
        nxt = f"research {topics[t + 1]['name']}" if t + 1 < len(topics) else "write the brief"
        script.turn(
            f"Research {topic['name']}: hand the sweep to the researcher and keep what matters.",
            (act(f"Handing the {topic['name']} sweep to the researcher.",
                 call("task", description=task_prompt(topic), subagent_type="researcher")),),
            f"The {topic['name']} sweep is back. Next step: {nxt}.",
        )  # fmt: skip
        script.task(task_prompt(topic), sweep(corpus, topic))
        question = f"After the {topic['name']} sweep: what is your next step?"
        script.ask(Probe(f"next-{topic['slug']}", "continuation", question, nxt, NEXT,
                         planted=topic["name"], source="agent"))  # fmt: skip
        for p in asked.get(t, []):
            script.ask(p)
    covered = "\n".join(f"- {t['name']}" for t in topics)
    script.turn(
        f"Write a short brief listing the topics covered to {BRIEF}.",
        (act(f"Writing the brief to {BRIEF}.",
             call("write_file", file_path=BRIEF, content=f"# Research brief\n\n{covered}\n")),),
        f"Brief written to {BRIEF}. Next step: send it to the team.",
    )  # fmt: skip
    script.ask(Probe("brief", "artifact", "Which file holds the research brief?", BRIEF,
                     Cue(patterns=(r"Brief written to (/\S+\.md)",)), planted="brief",
                     source="agent"))  # fmt: skip
    tools = make_tools(corpus)
    researcher = SubAgent(
        name="researcher",
        description="Runs a broad web sweep on one topic and reports the notable findings.",
        system_prompt=RESEARCHER_PROMPT,
        tools=tools,
    )
    return g.scenario(
        script, tools=(), system_prompt=SYSTEM_PROMPT,
        subagents=(researcher,), max_steps=80, entities=corpus.firms,
        data_files=lambda: {f"pages/{pid}.md": text for pid, text in corpus.pages.items()},
    )  # fmt: skip
