"""Finding and starting the long-lived local Prefect server."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest

from flows.server import ServerInfo, api_url_for, find_server, is_healthy, stop_server


def test_a_users_api_url_wins_without_probing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "https://prefect.example/api/")
    assert find_server() == ServerInfo(api_url="https://prefect.example/api")


def test_nothing_listening_is_not_healthy() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert not is_healthy(api_url_for(port), timeout=0.5)


def test_stop_without_a_started_server_does_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    assert stop_server() is None


def test_the_started_server_is_found_again_and_serves_its_ui(
    prefect_server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert prefect_server.log_path is not None
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("PREFECT_HOME", str(Path(prefect_server.log_path).parent))
    found = find_server()  # from the state file ctxlab wrote when it started the server
    assert found is not None and found.api_url == prefect_server.api_url
    assert found.pid == prefect_server.pid
    with urllib.request.urlopen(found.ui_url, timeout=10) as page:
        assert page.status == 200 and b"<html" in page.read().lower()
    assert found.flow_run_url("abc") == f"{found.ui_url}/runs/flow-run/abc"
