"""Fixtures of the harness tests: stored snapshots and the SDK adapters. The network guard, the
fake provider, bare agents and the command-line environment are shared with other packages and
the benchmarks, and live in tests/conftest.py."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.sdk_adapters import ADAPTERS, Adapter, set_keys

from harness import Store
from harness.files.filesystem import FileSystem

# ---- snapshots (middleware) --------------------------------------------------------------

SNAPSHOT_DIR = Path(__file__).parent / "snapshots"


@pytest.fixture
def assert_snapshot() -> Callable[[str, str], None]:
    """`assert_snapshot(name, text)`: `text` must equal tests/harness/snapshots/<name>. Run with
    CTXLAB_UPDATE_SNAPSHOTS=1 to (re)write the stored files after an intended change."""

    def check(name: str, text: str) -> None:
        path = SNAPSHOT_DIR / name
        if os.environ.get("CTXLAB_UPDATE_SNAPSHOTS") == "1" or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if os.environ.get("CTXLAB_UPDATE_SNAPSHOTS") != "1":
                pytest.fail(f"snapshot {name} did not exist; written, check it and rerun")
        assert text == path.read_text(encoding="utf-8"), f"differs from snapshots/{name}"

    return check


# ---- provider adapters ----------------------------------------------------------------------


@pytest.fixture
def sdk_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake API keys for the three SDK adapters (the tests check they never leak)."""
    set_keys(monkeypatch)


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """Each SDK adapter in turn."""
    return ADAPTERS[request.param]


@pytest.fixture
def fs() -> FileSystem:
    """An empty virtual filesystem on thread `t1` of an in-memory store."""
    return FileSystem(Store(":memory:"), "t1")
