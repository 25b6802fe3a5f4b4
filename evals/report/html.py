"""One HTML page per eval, sweep or suite (`--out DIR`): `index.html` beside its figures, the
tables and figures of the markdown report, and per setting the probes it lost (the question,
the expected value, what each seed answered, and the request's size when it was asked): what
a reviewer reads before trusting a number. One file plus its figures; no script, no style
sheet or font fetched from anywhere. Every string that came from a scenario or a trace is
escaped: the markdown is rendered with raw HTML off and no link outside the folder, and the
lost probes are escaped field by field."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from evals.scoring.records import ProbeResult
from evals.scoring.results import EvalResult

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; display: block;
        overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
th { background: #f3f3f3; }
td { font-variant-numeric: tabular-nums; white-space: nowrap; }
.lost td { white-space: normal; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 3px; }
details { margin: 0.4em 0; }
summary { cursor: pointer; font-weight: 600; }
.lost td:nth-child(2), .lost td:nth-child(3) { max-width: 28em; }
"""


def markdown_html(text: str) -> str:
    """Markdown (tables, headings, images, emphasis) as HTML, raw HTML in it shown as text,
    links and images only to files beside the page."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    # No scheme, no other host: a name from a trace cannot fetch or run anything.
    md.validateLink = lambda url: ":" not in url and not url.startswith(("/", "\\"))  # type: ignore[method-assign]
    return md.render(text)


def lost_probes(results: Sequence[EvalResult]) -> str:
    """Per setting, the probes it got wrong on some seed: question, expected value, each
    seed's answer and outcome, and the tokens in the request when the probe was asked."""
    by_setting: dict[str, list[EvalResult]] = {}
    for r in results:
        by_setting.setdefault(_label(r), []).append(r)
    parts = ["<h2>Probes lost, per setting</h2>",
             "<p>Each probe a setting got wrong on at least one seed. <em>window tokens</em>: "
             "the request's size when the probe was asked (0: never reached, or scored from a "
             "file). The window's text around each value is not recorded yet.</p>"]  # fmt: skip
    for label, runs in by_setting.items():
        lost: dict[str, list[tuple[int, ProbeResult]]] = {}
        for r in sorted(runs, key=lambda r: r.seed):
            for p in r.probe_results:
                if not p.correct:
                    lost.setdefault(p.id, []).append((r.seed, p))
        total = sum(len(r.probe_results) for r in runs)
        missed = sum(len(v) for v in lost.values())
        parts.append(f"<details><summary>{_e(label)}: {missed} of {total} probe answers lost "
                     f"({len(lost)} probes)</summary>")  # fmt: skip
        if not lost:
            parts.append("<p>None lost.</p></details>")
            continue
        parts.append('<table class="lost"><tr><th>probe</th><th>question</th><th>expected</th>'
                     "<th>seed: answer (outcome, window tokens, retrievals)</th></tr>")  # fmt: skip
        for pid, seen in lost.items():
            first = seen[0][1]
            answers = "<br>".join(
                f"{seed}: {_e(p.answer or '-')} ({_e(p.outcome)}, {p.window_tokens:,}, "
                f"{p.retrieval_calls})"
                for seed, p in seen
            )
            parts.append(
                f"<tr><td>{_e(pid)}<br><small>{_e(first.kind)}, {_e(first.source)}</small></td>"
                f"<td>{_e(first.question)}</td><td>{_e(first.expected)}</td>"
                f"<td>{answers}</td></tr>"
            )
        parts.append("</table></details>")
    return "\n".join(parts)


def _label(r: EvalResult) -> str:
    if not r.params:
        return f"{r.strategy} ({r.reader} reader)" if r.reader != "fallible" else r.strategy
    settings = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    return f"{r.strategy} [{settings}]"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    """A whole HTML document: `title` (escaped) and `body` (already HTML)."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def write_page(out_dir: str | Path, title: str, markdown: str,
               results: Sequence[EvalResult] = ()) -> Path:  # fmt: skip
    """`<out>/index.html`: the markdown report as HTML, then the probes each setting lost."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    body = markdown_html(markdown) + (lost_probes(results) if results else "")
    path = out / "index.html"
    path.write_text(page(title, body), encoding="utf-8")
    return path


def write_eval_html(
    results: Sequence[EvalResult], out_dir: str | Path, *, title: str
) -> list[Path]:
    """An eval's or a sweep's page: `index.html`, and beside it the markdown report and its
    figures (evals/report/markdown.py). Returns the page first."""
    from evals.report.markdown import write_report

    written = write_report(results, out_dir)
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in written if p.suffix == ".md")
    return [write_page(out_dir, title, text, results), *written]


def write_suite_html(
    summary: dict, results: Sequence[EvalResult], out_dir: str | Path, name: str
) -> list[Path]:
    """A suite's page: `index.html` beside `<name>.md` and its recall figure
    (evals/report/suite.py). Returns the page first."""
    from evals.report.suite import write_suite_report

    written = write_suite_report(summary, out_dir, name)
    text = written[0].read_text(encoding="utf-8")
    return [write_page(out_dir, f"Suite {name}", text, results), *written]
