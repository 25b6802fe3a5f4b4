"""A SIGKILL of an `--ephemeral` command (as an OOM kill does) no longer leaves its temporary
Prefect server running under PID 1: the watchdog stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import free_port
from helpers.waiting import poll

from flows.server import api_url_for, is_healthy

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="Linux only")
ROOT = Path(__file__).resolve().parents[2]

FAKE_PARENT = """
import subprocess, sys, time
from flows.watchdog import POLL_S, guard_children
marker = sys.argv[1]
watchdog = guard_children(marker)
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
time.sleep(4 * POLL_S + 1)  # the watchdog has started and seen its children
print(watchdog.pid, server.pid, other.pid, flush=True)
time.sleep(600)
"""

EPHEMERAL_PARENT = """
import sys, time
from flows.watchdog import guard_children
guard_children()
from prefect.server.api.server import SubprocessASGIServer
server = SubprocessASGIServer(int(sys.argv[1]))
server.start(timeout=180)
time.sleep(2)  # past the watchdog's poll
print(server.server_process.pid, flush=True)
time.sleep(600)
"""


def gone(pid: int) -> bool:
    """Exited (a zombie that PID 1 has not reaped yet counts as exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def wait_until_gone(pid: int, seconds: float) -> bool:
    return poll(lambda: gone(pid), bool, seconds, 0.1)


def start_parent(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip


def test_a_killed_parent_takes_its_marked_children_with_it() -> None:
    marker = f"ctxlab-watchdog-test-{uuid.uuid4().hex}"
    parent = start_parent(FAKE_PARENT, marker)
    assert parent.stdout is not None
    watchdog, server, other = map(int, parent.stdout.readline().split())
    try:
        assert not gone(server) and not gone(watchdog)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_until_gone(server, 60)
        assert wait_until_gone(watchdog, 60)  # and then the watchdog ends too
        assert not gone(other)  # a child that is not the server is left alone
    finally:
        for pid in (server, other, watchdog):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_killed_ephemeral_command_leaves_no_prefect_server() -> None:
    port = free_port()
    parent = start_parent(EPHEMERAL_PARENT, str(port))
    assert parent.stdout is not None
    line = parent.stdout.readline()
    try:
        server = int(line)
        assert is_healthy(api_url_for(port), timeout=5)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_until_gone(server, 60)
        assert not is_healthy(api_url_for(port), timeout=2)
    finally:
        parent.kill()
        parent.wait()
        if line.strip().isdigit() and not gone(int(line)):
            os.kill(int(line), signal.SIGKILL)
