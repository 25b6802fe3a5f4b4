"""What the simulated model writes from what it reads (evals/simulated/model.py): a document
drafted for a `Compose` step, a subagent's notable findings for `ReportFindings`."""

from __future__ import annotations

from evals.simulated.plan import Compose, ReportFindings
from evals.simulated.reader import RequestReader, preference, template_sections


def findings(step: ReportFindings, texts: list[str]) -> str:
    found: dict[str, None] = {}
    for text in texts[1:]:
        for line in text.splitlines():
            at = line.find(step.marker)
            if at >= 0:
                sentence = line[at + len(step.marker) :].strip().split(". ")[0]
                found.setdefault(sentence.rstrip(".") + ".", None)
    if not found:
        return "No notable findings."
    return "\n".join(f"- {f}" for f in list(found)[: step.limit])


def compose(step: Compose, reader: RequestReader, key: str) -> str:
    sections = template_sections(reader.texts) or list(step.fallback_sections)
    bullets = "bullet" in (preference(reader.texts) or "").split(", not")[0]
    by_section: dict[str, list[str]] = {s: [] for s in sections}
    for k, fact in enumerate(step.facts):
        value = reader.read(fact.cue, f"{key}:{k}").value
        line = f"{fact.label}: {value}{fact.unit}" if value else f"{fact.label} (not at hand)"
        target = fact.section if fact.section in by_section else sections[-1]
        by_section[target].append(line)
    out = [f"# {step.title}", ""]
    for section in sections:
        out.append(f"## {section}")
        items = by_section[section] or ["Nothing to report."]
        if bullets:
            out.extend(f"- {item}" for item in items)
        else:
            out.append(" ".join(item.rstrip(".") + "." for item in items))
        out.append("")
    return "\n".join(out)
