"""An offline `ctxlab eval` loads only what it uses: every process of a suite replay (and each
worker the pool starts) pays for what it imports, ~1 s for the OpenAI SDK alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.traces import write_ledger

from evals.sources.trace_import import import_path

UNUSED = ("openai", "anthropic", "prefect", "polars", "pyarrow", "matplotlib", "dask")


def test_an_offline_suite_eval_imports_no_sdk_prefect_nor_plotting(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    import_path(write_ledger(tmp_path / "ledger.json", accounts=3), suite / "ledger.yaml",
                window=3000, min_probes=1)  # fmt: skip
    argv = ["eval", "--scenario", str(suite), "--strategy", "full", "--seed", "0", "--no-save",
            "--json", "--workers", "1"]  # fmt: skip
    probe = (
        "import contextlib, io, sys\nfrom flows.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in out.stdout.split()}
    assert loaded.isdisjoint(UNUSED), sorted(loaded & set(UNUSED))
