"""Stops the temporary Prefect server of an `--ephemeral` command that was killed.

Prefect's ephemeral mode runs its server as a child process (uvicorn on
`prefect.server.api.server:create_app`) and stops it from an `atexit` hook. A SIGKILL (an
OOM kill) skips the hook, and the server (~220 MB, listening) lived on under PID 1. The
watchdog is a small process started beside the command: it notes the command's children that
run the server and, once the command is gone, stops them (SIGTERM, SIGKILL after 5 s). It runs
in a session of its own, so a Ctrl-C in the terminal reaches only the command, and it reads
only the standard library (`python -I` on this file). Linux only (it reads /proc); elsewhere
nothing is started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SERVER_MARKER = "prefect.server.api.server:create_app"
POLL_S = 0.5
TERM_GRACE_S = 5.0


def guard_children(marker: str = SERVER_MARKER) -> subprocess.Popen[bytes] | None:
    """Start a watchdog that stops this process's children whose command line contains
    `marker` once this process is gone, however it ended."""
    if not Path("/proc/self/stat").is_file():
        return None
    return subprocess.Popen(
        [sys.executable, "-I", __file__, str(os.getpid()), marker],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stat(pid: int) -> tuple[int, str] | None:
    """Parent pid and start time of `pid` (together with the pid they name one process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[19]


def _children(parent: int, marker: str) -> dict[int, str]:
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == os.getpid():  # the marker is on this watchdog's own command line
            continue
        stat = _stat(pid)
        if stat is None or stat[0] != parent:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in command:
            found[pid] = stat[1]
    return found


def _is_still(pid: int, started: str) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[1] == started


def watch(parent: int, marker: str) -> None:
    """Until `parent` is gone (this process is then re-parented), remember its children that
    run `marker`; then stop the ones still alive."""
    seen: dict[int, str] = {}
    while os.getppid() == parent:
        seen.update(_children(parent, marker))
        time.sleep(POLL_S)
    alive = {pid: started for pid, started in seen.items() if _is_still(pid, started)}
    for pid in alive:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {pid: started for pid, started in alive.items() if _is_still(pid, started)}
    for pid in alive:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
        os.kill(pid, sig)


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2])
