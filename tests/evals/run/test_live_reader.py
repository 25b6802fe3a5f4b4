"""The reader against a real model, measured: a provider double behind the official SDK (a
local HTTP server) plays the model, answering each probe from the request by its role, and
the judge; `ctxlab eval --model ... --judge ...` on a suite runs the live path end to end
within its spending cap and reports how often the simulated reader agrees with the model."""

import argparse
import json
import re

import pytest
from helpers.fake_provider import FakeProvider, RecordedRequest, Reply, final
from role_scenario import role_scenario

from evals.scoring.answers import mentions, normalize
from flows.cli import add_eval_commands

MODEL = "openai:gpt-6.2-sol"
ROLE = re.compile(r"(?i)what is the (\w+) of ")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _tag(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.S)
    return found.group(1) if found else ""


def model_double(request: RecordedRequest) -> Reply:
    """A model that reads: a judge call is graded on the value; a probe is answered with the
    value its role (the key the question names) has in the request, or "I don't know"."""
    texts = _strings(request.body.get("input", []))
    joined = "\n".join(texts)
    if "You are grading one answer" in joined:
        expected, answer = _tag(joined, "reference"), _tag(joined, "answer")
        right = mentions(normalize(answer), expected)
        return final(f"VERDICT: {'right' if right else 'wrong'}\nCompared the values.")
    asked = [m for t in texts for m in ROLE.finditer(t)]
    if not asked:
        return final("Done.")
    key = asked[-1].group(1)
    value = re.findall(rf'"{key}": "([^"]+)"', joined)
    return final(f"It is {value[-1]}." if value else "I don't know.")


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch):
    with FakeProvider() as fake:
        fake.responder = model_double
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-live")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        yield fake


def test_a_real_model_reads_the_window_by_role_and_agreement_is_reported(
    live: FakeProvider, tmp_path, capsys
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    role_scenario(suite)
    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    args = parser.parse_args(
        ["eval", "--scenario", str(suite), "--strategy", "none-unbounded", "--strategy",
         "offload", "--window", "16000", "--model", MODEL, "--judge", MODEL, "--max-usd", "0.5",
         "--json", "--no-save", "--probes"]
    )  # fmt: skip
    assert args.handler(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    runs = {r["strategy"]: r for r in lines if "trace" in r}
    summary = lines[-1]
    kept, offloaded = runs["none-unbounded"], runs["offload"]
    # The model answers from the window: the whole record in view, right; offloaded (the
    # double reads no files), "I don't know", and the judge agrees with the scorer.

    assert kept["accuracy"] == 1.0 and offloaded["accuracy"] == 0.0
    verdicts = {p["id"]: p["judge_verdict"] for p in offloaded["probe_results"]}
    assert verdicts["pay"] == "wrong" and offloaded["one_read"] == 1.0
    assert {p["judge_verdict"] for p in kept["probe_results"]} == {"right"}
    assert 0 < kept["live_cost_usd"] <= 0.5
    arms = {a["strategy"]: a for a in summary["arms"]}
    # The simulated reader retrieves the offloaded value; the double does not: they disagree
    # on both uncarried probes there, and agree where the record is in view.
    assert arms["none-unbounded"]["reader_agreement"] == 1.0
    assert arms["offload"]["reader_agreement"] == 0.0
    assert arms["offload"]["reader_agreement_probes"] == 2
