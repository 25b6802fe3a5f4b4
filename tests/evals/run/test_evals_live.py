"""Live mode against the local fake provider: a capped window compacts a 1M-window model as
the simulated one is, natural answers are scored fairly, and an LLM judge's verdicts and cost
are stored per probe within the spending cap. No test needs a key."""

import argparse
import asyncio
import json

import polars as pl
import pytest
from helpers.fake_provider import FakeProvider, final

from evals.run.cell import run_cell
from evals.run.judge import PROMPT_PATH, Judge, parse_verdict
from evals.run.replay import replay, user_words
from evals.scenarios import get_scenario
from evals.scenarios.base import Cue, Probe
from evals.scoring.answers import is_correct, outcome
from evals.scoring.storage import load_probes, open_store, save_results
from flows.cli import add_eval_commands
from harness import Store, get_profile
from harness.models import FunctionModel
from harness.models.openai import OpenAIResponsesModel

TRIGGER = 0.85  # the summarization middleware's default trigger, a fraction of the window


@pytest.fixture(autouse=True)
def _openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-live")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def live_model(fake: FakeProvider) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-6.2-sol", base_url=fake.openai_base_url)


def summaries(fake: FakeProvider, window: int | None) -> list[dict]:
    fake.script(*[final("I don't know.") for _ in range(200)])
    scenario = get_scenario("competitive-analysis", 0, "small")
    store = Store(":memory:")
    out = asyncio.run(replay(scenario, "summarize", model=live_model(fake), store=store,
                             window=window))  # fmt: skip
    assert out.error is None and out.overflow_turn is None
    return store.summaries.all()


def test_a_capped_window_summarizes_a_live_model_at_the_same_fraction(fake_provider) -> None:
    window = get_scenario("competitive-analysis", 0, "small").profile.context_window
    assert window is not None and window < live_model(fake_provider).profile.context_window
    assert summaries(fake_provider, None) == []  # the model's own 1M window: never compacted
    capped = summaries(fake_provider, window)
    assert capped
    assert all(TRIGGER <= row["tokens_before"] / window < 1 for row in capped)


def test_a_window_must_be_positive() -> None:
    scenario = get_scenario("support-transcript", 0, "small")
    with pytest.raises(ValueError, match="window must be a positive"):
        asyncio.run(replay(scenario, "full", window=0))


def cli(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_commands(parser.add_subparsers())
    return parser.parse_args(argv)


def test_the_window_flag_reaches_the_run(capsys) -> None:
    def run(*extra: str) -> dict:
        args = cli("eval", "--scenario", "support-transcript", "--strategy", "none", "--seed",
                   "0", "--json", "--no-save", *extra)  # fmt: skip
        assert args.handler(args) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    assert not run()["overflowed"]
    squeezed = run("--window", "3000")
    assert squeezed["overflowed"] and squeezed["peak_context_tokens"] <= 3000
    assert squeezed["params"] == {"window": 3000}  # not pooled with uncapped runs
    with pytest.raises(SystemExit):
        cli("eval", "--scenario", "support-transcript", "--window", "-5")
    assert "must be a positive number of tokens" in capsys.readouterr().err


SAID = ("Thanks. Use bullets, not paragraphs, in the report sections, and please remember it.",)


def probe(answer: str, *distractors: str) -> Probe:
    return Probe(id="p", kind="recall", question="?", answer=answer, cue=Cue(("?",)),
                 distractors=distractors)  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "distractors", "answer", "right"),
    [
        # numbers: separators, currency, scale words, surrounding punctuation
        ("$1,234.5M", (), "Revenue was 1234.5 million.", True),
        ("1234.5 million", (), "It came to **$1,234.5M**.", True),
        ("9,474.58", (), "The invoice total is EUR 9474.58", True),
        ("101.8", ("140.8",), "Quarterly revenue: $101.8M (up 4%).", True),
        ("+31 80 149 8330", (), 'Call "+31 80 149 8330."', True),
        # case, markdown, quotes, sentence punctuation
        ("Tilburg", ("Zadar",), "It was **tilburg**, I believe.", True),
        ("/notes/borealis-grid.md", (), "Saved to `/notes/borealis-grid.md`.", True),
        ("FX-52553", ("BY-50789",), "The order is 'FX-52553'.", True),
        # the user's own words quoted back, contrast and all
        ("bullets", ("paragraphs",), 'You asked: "Use bullets, not paragraphs."', True),
        (
            "bullets",
            ("paragraphs",),
            "You told me to use bullets not paragraphs in the report sections.",
            True,
        ),
        # must stay wrong: another number, a look-alike, a scale, a hedge, a partial quote
        ("$1,234.5M", (), "Revenue was 1234.5 billion.", False),
        ("101.8", ("140.8",), "Quarterly revenue: $101.85M.", False),
        ("101.8", ("140.8",), "It was 1,018.", False),
        ("101.8", ("140.8",), "Either 101.8 or 140.8.", False),
        ("9,474.58", (), "The invoice total is 9,474.5", False),
        ("FX-52553", ("BY-50789",), "The order is FX-52558.", False),
        ("Tilburg", ("Zadar",), "Tilburgh", False),
        ("bullets", ("paragraphs",), "Bullets or paragraphs, either is fine.", False),
        ("bullets", ("paragraphs",), "Not paragraphs: bullets.", False),
        ("bullets", ("paragraphs",), "", False),
    ],
)
def test_natural_answers_are_scored_on_their_value(expected, distractors, answer, right) -> None:
    assert is_correct(probe(expected, *distractors), answer, SAID) is right


def test_a_quote_only_counts_from_the_users_own_words() -> None:
    bullets = probe("bullets", "paragraphs")
    quoted = 'You asked: "Use bullets, not paragraphs."'
    assert not is_correct(bullets, quoted)  # no user words given: the distractor counts
    assert outcome(bullets, quoted, SAID) == "right"
    assert outcome(bullets, "I don't know.", SAID) == "unknown"
    assert outcome(bullets, "I do not know; maybe paragraphs?", SAID) == "wrong"
    said = user_words(get_scenario("competitive-analysis", 0, "small"))
    assert any("Use bullets, not paragraphs" in s for s in said)
    assert not any("bullets or paragraphs?" in s for s in said)  # the probe's own question


JUDGE_COST = (100 * 2.00 + 10 * 10.00) / 1e6  # the fake's default usage at gpt-6.2-sol prices


def judged_run(fake: FakeProvider, max_usd: float | None = None):
    return run_cell("support-transcript", "full", {}, 0, "small", max_usd=max_usd,
                    judge=live_model(fake))  # fmt: skip


def test_the_judge_grades_every_answer_and_its_verdicts_and_cost_are_stored(
    fake_provider, tmp_path
) -> None:
    probes = get_scenario("support-transcript", 0, "small").probes
    answered = sum(p.check is None for p in probes)  # a file check is not an answer
    replies = ["VERDICT: right\nSame city.", "Verdict: **WRONG**\nAnother number.", "Hmm."]
    fake_provider.script(*[final(replies[i % 3]) for i in range(answered)])
    run = judged_run(fake_provider)
    graded = [p for p in run.probe_results if p.status == "answered"]
    assert len(graded) == answered == fake_provider.request_count
    assert [p.judge_verdict for p in graded] == [
        ("right", "wrong", "unparsed")[i % 3] for i in range(answered)
    ]
    assert all(p.judge_cost_usd == pytest.approx(JUDGE_COST) for p in graded)
    assert all(p.judge_model == "openai:gpt-6.2-sol" for p in graded)
    assert run.live_cost_usd == pytest.approx(JUDGE_COST * answered)
    first = fake_provider.bodies()[0]["input"][0]["content"]
    assert graded[0].question in str(first) and graded[0].expected in str(first)
    db = tmp_path / "e.duckdb"
    save_results(db, [run])
    rows = load_probes(db).filter(pl.col("status") == "answered")
    stored = dict(zip(rows["probe_id"], rows["judge_verdict"], strict=True))
    assert stored == {p.id: p.judge_verdict for p in graded}
    assert rows["judge_cost_usd"].sum() == pytest.approx(JUDGE_COST * answered)


def test_the_spending_cap_stops_the_judge(fake_provider) -> None:
    fake_provider.script(*[final("VERDICT: right") for _ in range(10)])
    run = judged_run(fake_provider, max_usd=JUDGE_COST * 1.5)
    assert fake_provider.request_count == 2  # the second call started under the cap
    assert run.status == "budget_exceeded"
    assert [p.judge_verdict for p in run.probe_results if p.judge_verdict] == ["right"] * 2
    third, *rest = run.probe_results[2:]
    assert third.status == "answered" and third.judge_verdict is None  # kept, ungraded
    assert rest and all(p.status == "not_reached" for p in rest)


def test_an_old_probe_table_gets_the_judge_columns(tmp_path) -> None:
    store = Store(tmp_path / "old.duckdb")
    store.execute("CREATE TABLE eval_probes (run_key VARCHAR NOT NULL, probe_id VARCHAR)")
    open_store(store)
    columns = {
        r["column_name"]
        for r in store.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'eval_probes'"
        )
    }
    assert {"judge_model", "judge_verdict", "judge_cost_usd"} <= columns


def test_the_judge_prompt_comes_from_its_file_and_answers_stay_text() -> None:
    judge = Judge(FunctionModel(lambda m, p: "VERDICT: right", profile=get_profile("test")))
    assert judge.template == PROMPT_PATH.read_text(encoding="utf-8")
    text = judge.render("Which city?", "Tilburg", "The {expected} city")
    assert "The {expected} city" in text and "Tilburg" in text
    with pytest.raises(ValueError, match="lacks {answer}"):
        Judge(judge.model, prompt="{question} {expected}")
    assert parse_verdict("I think VERDICT: Right.") == "right"
    assert parse_verdict("right") == "unparsed"


def test_the_judge_flag_grades_a_cli_run(fake_provider, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_base_url)
    fake_provider.script(*[final("VERDICT: wrong") for _ in range(20)])
    args = cli("eval", "--scenario", "support-transcript", "--strategy", "full", "--seed", "0",
               "--json", "--probes", "--no-save", "--judge", "openai:gpt-6.2-sol")  # fmt: skip
    assert args.handler(args) == 0
    run = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    verdicts = [p["judge_verdict"] for p in run["probe_results"]]
    assert verdicts and set(verdicts) == {"wrong"}
    assert run["live_cost_usd"] == pytest.approx(JUDGE_COST * len(verdicts))
