"""A long-lived local Prefect server for ctxlab runs.

Prefect's ephemeral mode starts a temporary server inside the process and stops it at exit,
mid-flush: most task runs of a flow never reach its database. Runs that must stay observable
report to a real server instead. `ctxlab server` starts one in the background (or finds the one
already running) and remembers it in `$PREFECT_HOME/ctxlab-server.json`; `ctxlab run`, `sweep`,
`serve` and `demo` find it the same way, starting it when needed.

A `PREFECT_API_URL` set by the user (another server, Prefect Cloud) always wins.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from flows.settings import LEAN_SERVER_ENV, QUIET_ENV

DEFAULT_PORT = 4200
STATE_FILE = "ctxlab-server.json"


class ServerError(RuntimeError):
    """The Prefect server could not be started or reached."""


@dataclass(frozen=True)
class ServerInfo:
    api_url: str
    pid: int | None = None
    log_path: str | None = None
    started_now: bool = False
    start_seconds: float = 0.0

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/").removesuffix("/api")

    def flow_run_url(self, flow_run_id: str) -> str:
        return f"{self.ui_url}/runs/flow-run/{flow_run_id}"


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()


def api_url_for(port: int, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}/api"


def is_healthy(api_url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _state_path() -> Path:
    return prefect_home() / STATE_FILE


def _read_state() -> ServerInfo | None:
    try:
        data = json.loads(_state_path().read_text())
        return ServerInfo(data["api_url"], pid=data.get("pid"), log_path=data.get("log_path"))
    except (OSError, ValueError, KeyError):
        return None


def find_server(port: int | None = None) -> ServerInfo | None:
    """The server runs should report to: the user's `PREFECT_API_URL`, the server ctxlab
    started, or a healthy server on `port` (default 4200)."""
    configured = os.environ.get("PREFECT_API_URL")
    if configured:
        return ServerInfo(api_url=configured.rstrip("/"))
    known = _read_state()
    wanted = known is not None and (port is None or known.api_url == api_url_for(port))
    if known is not None and wanted and is_healthy(known.api_url):
        return known
    candidate = api_url_for(port or DEFAULT_PORT)
    if is_healthy(candidate):
        return ServerInfo(api_url=candidate)
    return None


def _server_env(lean: bool) -> dict[str, str]:
    env = {**QUIET_ENV, **(LEAN_SERVER_ENV if lean else {}), **os.environ}
    env["PREFECT_SERVER_LOGGING_LEVEL"] = os.environ.get("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
    env.pop("PREFECT_API_URL", None)
    return env


def _command(port: int) -> list[str]:
    return [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
            "--port", str(port)]  # fmt: skip


def run_foreground(port: int = DEFAULT_PORT, *, lean: bool = True) -> int:
    """Replace this process with `prefect server start` (Ctrl-C stops it)."""
    os.execve(sys.executable, _command(port), _server_env(lean))
    return 0  # not reached: execve does not return


def start_server(
    port: int = DEFAULT_PORT, *, lean: bool = True, timeout: float = 120.0
) -> ServerInfo:
    """Start `prefect server start` in the background (it outlives this process) and wait
    until it answers. `lean` turns off the automations and event-feed services, which ctxlab
    does not use and which double the server's CPU per task run."""
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / "ctxlab-server.log"
    api_url = api_url_for(port)
    if is_healthy(api_url):
        raise ServerError(f"a server already answers at {api_url}; use it or pick another --port")
    start = time.perf_counter()
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            _command(port), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=_server_env(lean), start_new_session=True,  # outlives the command
        )  # fmt: skip
    info = ServerInfo(api_url=api_url, pid=process.pid, log_path=str(log_path), started_now=True)
    while not is_healthy(api_url):
        if process.poll() is not None:
            raise ServerError(
                f"the Prefect server exited with code {process.returncode}; "
                f"last lines of {log_path}:\n{_tail(log_path)}"
            )
        if time.perf_counter() - start > timeout:
            process.kill()
            raise ServerError(f"the Prefect server did not answer within {timeout:.0f} s")
        time.sleep(0.25)
    info = ServerInfo(**{**asdict(info), "start_seconds": time.perf_counter() - start})
    _state_path().write_text(
        json.dumps({"api_url": api_url, "pid": process.pid, "log_path": str(log_path)})
    )
    return info


def ensure_server(port: int | None = None, *, lean: bool = True) -> ServerInfo:
    """Find a running server or start one."""
    return find_server(port) or start_server(port or DEFAULT_PORT, lean=lean)


def stop_server() -> ServerInfo | None:
    """Stop the server ctxlab started (only that one); returns what was stopped."""
    info = _read_state()
    if info is None or info.pid is None:
        return None
    if not (is_healthy(info.api_url) or _runs_prefect(info.pid)):
        _state_path().unlink(missing_ok=True)  # gone already; its pid may belong to another
        return None
    try:
        os.killpg(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _alive(info.pid):
            time.sleep(0.2)
        if _alive(info.pid):
            os.killpg(info.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _state_path().unlink(missing_ok=True)
    return info


def _runs_prefect(pid: int) -> bool:
    try:
        return b"prefect" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but was not reaped (we started it in this process) is a zombie.
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def flush_prefect(timeout: float = 10.0) -> None:
    """Send the events and logs Prefect still holds while the server can take them (at exit
    they would go to a server that may be gone, with a warning)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (EventsWorker, APILogWorker):
        worker.drain_all(timeout=timeout)


@contextmanager
def using_server(info: ServerInfo) -> Iterator[ServerInfo]:
    """Point Prefect clients in this process at `info` (Prefect reads its settings once, at
    import, so the environment alone is not enough once it is loaded)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = info.api_url  # for subprocesses (workers, Dask)
    try:
        with temporary_settings(updates={PREFECT_API_URL: info.api_url}):
            try:
                yield info
            finally:
                flush_prefect()
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous
