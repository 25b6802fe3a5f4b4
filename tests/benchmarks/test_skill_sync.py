"""What a 400-file skills folder adds to a run start under `ctxlab run`.

Run with `uv run pytest tests/benchmarks/test_skill_sync.py --benchmark-only`.
`ctxlab run` opens the store with `Store(path, hold=False)`, so every transaction opens the
DuckDB file: the cost of a sync is mostly how many transactions and queries it makes. One
round = one whole agent run (an instant scripted model) with the skills middleware over a
generated tree shaped like a public skills repository: 20 skills, each a SKILL.md with
references, scripts, templates and a few assets, 400 files in all. `first_sync` syncs into a
fresh store, `first_no_skills` is its baseline (a fresh store, no middleware); `unchanged` is
every later run start (nothing to write), `no_skills` its baseline.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from harness import Store
from harness.middleware.skills import Skills
from harness.models import ScriptedModel

SKILLS = 20
FILES_PER_SKILL = 20
_rounds = itertools.count()


def skills_tree(root: Path) -> Path:
    """400 files: per skill a SKILL.md, 8 reference docs, 6 scripts, 3 templates, 2 assets."""
    rng = random.Random(7)
    words = ["market", "revenue", "pricing", "churn", "segment", "forecast", "report"]
    for s in range(SKILLS):
        name = f"skill-{s:02d}-{words[s % len(words)]}"
        folder = root / name
        (folder / "references").mkdir(parents=True)
        (folder / "scripts").mkdir()
        (folder / "templates").mkdir()
        (folder / "assets").mkdir()
        body = "\n".join(
            " ".join(rng.choice(words) for _ in range(14)) for _ in range(rng.randint(40, 160))
        )
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Use for {words[s % len(words)]} work; "
            f"reads the references and runs the scripts.\nlicense: MIT\n---\n# {name}\n{body}\n"
        )
        files = [f"references/ref-{i}.md" for i in range(8)]
        files += [f"scripts/step_{i}.py" for i in range(6)]
        files += [f"templates/t{i}.md" for i in range(3)]
        for rel in files:
            lines = rng.randint(20, 300)
            (folder / rel).write_text(
                "\n".join(" ".join(rng.choice(words) for _ in range(10)) for _ in range(lines))
            )
        for i in range(2):
            size = rng.randint(2_000, 40_000)
            (folder / "assets" / f"logo{i}.png").write_bytes(rng.randbytes(size))
        assert sum(1 for p in folder.rglob("*") if p.is_file()) == FILES_PER_SKILL
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return skills_tree(tmp_path_factory.mktemp("bench") / "skills")


def run_once(bare_agent, path: Path, middleware: list) -> None:
    store = Store(path, hold=False)
    agent = bare_agent(ScriptedModel(["ok"]), middleware=middleware, store=store)
    assert agent.run_sync("go", thread_id=f"t{next(_rounds)}").status == "completed"


def test_run_start_first_sync(benchmark, bare_agent, tree: Path, tmp_path: Path) -> None:
    def fresh() -> tuple[tuple[object, ...], dict[str, object]]:
        return (bare_agent, tmp_path / f"first-{next(_rounds)}.duckdb", [Skills([tree])]), {}

    benchmark.pedantic(run_once, setup=fresh, rounds=3)


def test_run_start_unchanged(benchmark, bare_agent, tree: Path, tmp_path: Path) -> None:
    path = tmp_path / "later.duckdb"
    run_once(bare_agent, path, [Skills([tree])])
    benchmark.pedantic(run_once, args=(bare_agent, path, [Skills([tree])]), rounds=5)


def test_run_start_no_skills(benchmark, bare_agent, tmp_path: Path) -> None:
    path = tmp_path / "none.duckdb"
    run_once(bare_agent, path, [])
    benchmark.pedantic(run_once, args=(bare_agent, path, []), rounds=5)


def test_run_start_first_no_skills(benchmark, bare_agent, tmp_path: Path) -> None:
    def fresh() -> tuple[tuple[object, ...], dict[str, object]]:
        return (bare_agent, tmp_path / f"first-{next(_rounds)}.duckdb", []), {}

    benchmark.pedantic(run_once, setup=fresh, rounds=3)
