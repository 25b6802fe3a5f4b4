"""Fixtures of the flow tests. One real local Prefect server (`prefect server start`, the way
`ctxlab server` starts it) serves the whole session: ephemeral mode would lose task runs, and a
second server (prefect_test_harness) would cost another 20-25 s. It starts only when a flow
test runs."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.server import ServerInfo, start_server, stop_server, using_server
from flows.settings import apply_defaults

apply_defaults()

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:
    home = tmp_path_factory.mktemp("prefect-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_HOME", str(home))
        mp.delenv("PREFECT_API_URL", raising=False)
        info = start_server(free_port(), timeout=180)
        try:
            with using_server(info):
                yield info
        finally:
            stop_server(info.port)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "ctxlab.duckdb")


@pytest.fixture
def subprocess_env(prefect_server: ServerInfo, tmp_path: Path) -> dict[str, str]:
    """Environment for a child process that runs flows against the session's server."""
    pythonpath = os.pathsep.join([str(HERE), *sys.path])
    return {
        **os.environ,
        "PREFECT_API_URL": prefect_server.api_url,
        "PYTHONPATH": pythonpath,
        "CTXLAB_TEST_LOG": str(tmp_path / "calls.log"),
        "CTXLAB_TEST_MARKER": str(tmp_path / "marker"),
    }
