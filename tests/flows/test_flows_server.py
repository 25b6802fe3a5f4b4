"""Finding and starting the long-lived local Prefect server."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port

from flows.server import (
    ServerInfo,
    api_url_for,
    find_server,
    is_healthy,
    recorded_servers,
    start_server,
    stop_server,
)


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


def test_stop_leaves_a_process_that_is_no_longer_the_recorded_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)  # reused the server's pid
    try:
        record = {"api_url": api_url_for(4999), "port": 4999, "pid": other.pid,
                  "identity": "12345 python -m prefect server start --port 4999"}  # fmt: skip
        (tmp_path / "ctxlab-server-4999.json").write_text(json.dumps(record))
        assert stop_server(4999) is None
        assert other.poll() is None  # not signalled
        assert not (tmp_path / "ctxlab-server-4999.json").exists()
    finally:
        other.kill()
        other.wait()


def test_two_servers_on_two_ports_stop_one_and_the_other_still_answers(
    prefect_server: ServerInfo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import main

    assert prefect_server.log_path is not None
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("PREFECT_HOME", str(Path(prefect_server.log_path).parent))
    port = free_port()
    second = start_server(port, timeout=180)
    try:
        with urllib.request.urlopen(f"{second.ui_url}/ui-settings", timeout=10) as page:
            assert json.loads(page.read())["api_url"] == api_url_for(port)  # not 4200's
        assert {s.api_url for s in recorded_servers()} == {prefect_server.api_url, second.api_url}
        assert main(["server", "stop"]) == 1  # which one? ctxlab does not guess
        assert "give --port" in capsys.readouterr().err
        assert main(["server", "stop", "--port", str(port)]) == 0
        assert second.api_url in capsys.readouterr().out
        assert not is_healthy(second.api_url)
        assert is_healthy(prefect_server.api_url)
        assert find_server() == ServerInfo(
            prefect_server.api_url, pid=prefect_server.pid, log_path=prefect_server.log_path
        )
    finally:
        stop_server(port)
