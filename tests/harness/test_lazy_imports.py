"""`import harness` stays light: the heavy libraries load when first used."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("polars", "pyarrow", "duckdb", "openai", "anthropic", "pydantic", "bpe_openai")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_import_harness_loads_none_of_the_heavy_libraries() -> None:
    assert _loaded_after("import harness").isdisjoint(HEAVY)


def test_building_an_agent_loads_neither_polars_pyarrow_nor_the_sdks() -> None:
    loaded = _loaded_after(
        "from harness import Store, create_agent\n"
        "from harness.models import ScriptedModel\n"
        "create_agent(ScriptedModel(['hi']), store=Store(':memory:')).run_sync('hello')"
    )
    assert loaded.isdisjoint({"polars", "pyarrow", "openai", "anthropic"})
    # Nor what only skills (yaml) and searches (regex) need: ~7 MB of every run's memory.
    assert loaded.isdisjoint({"yaml", "regex"})


def test_lazy_names_resolve_and_unknown_names_fail_clearly() -> None:
    import harness
    import harness.middleware

    assert harness.create_agent.__name__ == "create_agent"
    assert harness.middleware.OffloadLargeResults.name == "offload"
    assert set(harness.__all__) <= set(dir(harness))
    with pytest.raises(AttributeError, match="nope"):
        harness.nope  # noqa: B018


def test_ctxlab_help_imports_neither_the_eval_package_nor_prefect() -> None:
    probe = (
        "import contextlib, io\nfrom flows.cli import main\n"
        "for argv in (['--help'], ['eval', '--help'], ['sweep', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(argv)"
    )
    out = subprocess.run(
        [sys.executable, "-c", f"{probe}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    loaded = set(out.stdout.split())
    assert {name.split(".")[0] for name in loaded}.isdisjoint({*HEAVY, "prefect", "rich"})
    assert loaded.isdisjoint(
        {"evals.analysis.metrics", "evals.scenarios", "evals.run.cell", "flows.server"}
    )


def test_import_evals_still_registers_the_simulated_model() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import evals\nfrom harness.models import resolve_model\n"
         "print(type(resolve_model('simulated')).__name__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "SimulatedModel"
