"""The HTML report: one page beside its figures with the tables, the figures and the probes
each setting lost; every string from a scenario or trace escaped, no link leaving the folder."""

from dataclasses import replace

from helpers.evals import result

from evals.report.html import markdown_html, write_eval_html
from evals.scoring.records import ProbeResult

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def probe(pid: str, ok: bool, answer: str = "42") -> ProbeResult:
    return ProbeResult(id=pid, kind="recall", session=1, question=f"What is {HOSTILE}?",
                       expected="42", answer=answer, correct=ok, status="answered",
                       outcome="right" if ok else "wrong", window_tokens=12_345)  # fmt: skip


def test_the_page_has_tables_figures_and_the_probes_each_setting_lost(tmp_path) -> None:
    runs = [
        *(result("full", s, accuracy=0.9, probe_results=(probe("p1", True), probe("p2", True)))
          for s in range(2)),
        *(result("mask", s, accuracy=0.5, cost_usd=0.01,
                 probe_results=(probe("p1", True), probe("p2", False, HOSTILE)))
          for s in range(2)),
    ]  # fmt: skip
    written = write_eval_html(runs, tmp_path / "out", title=f"eval {HOSTILE}")
    page = written[0]
    assert page.name == "index.html"
    names = {p.name for p in written}
    assert {"competitive-analysis.md", "competitive-analysis.png",
            "competitive-analysis.svg"} <= names  # fmt: skip
    text = page.read_text()
    assert text.count("<table") >= 2  # the settings, and mask's lost probes
    assert '<img src="competitive-analysis.png"' in text
    assert "mask: 2 of 4 probe answers lost (1 probes)" in text
    assert "full: 0 of 4 probe answers lost" in text
    assert "12,345" in text  # the window's size when the probe was asked
    assert "<script" not in text and "onerror=alert" not in text.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;" in text


def test_markdown_from_traces_cannot_inject_or_fetch() -> None:
    out = markdown_html(
        "# name <b>bold</b>\n\n![a](http://evil.example/x.png) ![b](fig.png) "
        "[c](javascript:alert(1)) [d](//evil.example)\n\n| a |\n|---|\n| <i>x</i> |"
    )
    assert "&lt;b&gt;" in out and "<b>" not in out and "&lt;i&gt;" in out
    assert 'src="http' not in out and 'href="javascript' not in out and 'href="//' not in out
    assert '<img src="fig.png"' in out


def test_a_lone_unreached_probe_is_shown_as_not_reached(tmp_path) -> None:
    lost = replace(probe("p9", False, ""), outcome="not_reached", window_tokens=0)
    runs = [result("none", 0, probe_results=(lost,)), result("full", 0)]
    text = write_eval_html(runs, tmp_path, title="t")[0].read_text()
    assert "0: - (not_reached, 0, 0)" in text
