"""Filler prose from the sentence templates in `datasets/`: enough realistic text around the
planted facts that finding them takes reading, and summaries of it lose detail."""

from __future__ import annotations

import random
from collections.abc import Sequence

from evals.scenarios.base import load_data


def people() -> tuple[list[str], list[str]]:
    data = load_data("names/places.yaml")["people"]
    return data["first"], data["last"]


def person(r: random.Random) -> str:
    first, last = people()
    return f"{r.choice(first)} {r.choice(last)}"


def news_sentence(r: random.Random, company: str, others: Sequence[str], region: str) -> str:
    places = load_data("names/places.yaml")
    template = r.choice(load_data("text/news.yaml")["filler"])
    return template.format(
        company=company,
        other=r.choice(list(others)),
        city=r.choice(places["cities"]),
        product=r.choice(places["products"]),
        pct=r.randint(3, 19),
        num=r.randint(120, 4_800),
        quarter=f"Q{r.randint(1, 4)}",
        person=person(r),
        month=r.choice(places["months"]),
        region=region,
    )


def news_paragraph(
    r: random.Random, company: str, others: Sequence[str], region: str, sentences: int = 5
) -> str:
    return " ".join(news_sentence(r, company, others, region) for _ in range(sentences))


def weave(r: random.Random, paragraphs: list[str], planted: Sequence[str]) -> list[str]:
    """Put each planted sentence inside a paragraph away from the start and the end, where a
    skim (a preview, a summary of the head) misses it."""
    out = list(paragraphs)
    for sentence in planted:
        lo, hi = (1, len(out) - 2) if len(out) > 2 else (0, len(out) - 1)
        i = r.randint(lo, max(lo, hi))
        words = out[i].split(". ")
        at = r.randint(1, max(1, len(words) - 1))
        out[i] = ". ".join([*words[:at], sentence.rstrip("."), *words[at:]])
    return out
