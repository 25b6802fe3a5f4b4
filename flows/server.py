"""A long-lived local Prefect server for ctxlab runs.

Prefect's ephemeral mode starts a temporary server inside the process and stops it at exit,
mid-flush: most task runs of a flow never reach its database. Runs that must stay observable
report to a real server instead. `ctxlab server` starts one in the background (or finds the one
already running) and records it in `$PREFECT_HOME/ctxlab-server-<port>.json` (port, Prefect
home, process id, start time and command line); `ctxlab run`, `sweep`, `serve` and `demo` find
it the same way, starting it when needed. `ctxlab server stop` stops only a server it recorded,
after checking that the process is still that server (a process id can be reused).

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
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flows.errors import ServerError
from flows.settings import LEAN_SERVER_ENV, QUIET_ENV

DEFAULT_PORT = 4200
STATE_FILE = "ctxlab-server-{port}.json"


@dataclass(frozen=True)
class ServerInfo:
    api_url: str
    pid: int | None = None
    log_path: str | None = None
    started_now: bool = False
    start_seconds: float = 0.0

    @property
    def port(self) -> int | None:
        return urllib.parse.urlsplit(self.api_url).port

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


def _state_path(port: int) -> Path:
    return prefect_home() / STATE_FILE.format(port=port)


def _read_state(port: int) -> dict[str, Any] | None:
    try:
        data = json.loads(_state_path(port).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("port") == port else None


def _recorded_ports() -> list[int]:
    ports = []
    for path in prefect_home().glob(STATE_FILE.format(port="*")):
        number = path.stem.rsplit("-", 1)[-1]
        if number.isdigit():
            ports.append(int(number))
    return sorted(ports)


def _info(record: dict[str, Any]) -> ServerInfo:
    return ServerInfo(record["api_url"], pid=record.get("pid"), log_path=record.get("log_path"))


def process_identity(pid: int) -> str | None:
    """The start time and command line of process `pid` (None if there is none): together they
    tell a process from a later one that reused its id."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        start = stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command name
        return f"{start} {command}"
    except (OSError, IndexError):
        pass
    try:  # no /proc (macOS): ask ps
        out = subprocess.run(["ps", "-o", "lstart=,command=", "-p", str(pid)],
                             capture_output=True, text=True, timeout=10, check=False)  # fmt: skip
    except OSError:
        return None
    return " ".join(out.stdout.split()) or None


def find_server(port: int | None = None) -> ServerInfo | None:
    """The server runs should report to: the user's `PREFECT_API_URL`, the server ctxlab
    started (on `port` if given), or a healthy server on `port` (default 4200)."""
    configured = os.environ.get("PREFECT_API_URL")
    if configured:
        return ServerInfo(api_url=configured.rstrip("/"))
    ports = (
        [port] if port is not None else sorted(_recorded_ports(), key=lambda p: p != DEFAULT_PORT)
    )
    for candidate in ports:
        record = _read_state(candidate)
        if record is not None and is_healthy(record["api_url"]):
            return _info(record)
    api_url = api_url_for(port or DEFAULT_PORT)
    if is_healthy(api_url):
        return ServerInfo(api_url=api_url)
    return None


def recorded_servers() -> list[ServerInfo]:
    """The servers ctxlab started from this Prefect home that are still running."""
    found = []
    for port in _recorded_ports():
        record = _read_state(port)
        if record is not None and _is_still(record):
            found.append(_info(record))
    return found


def _server_env(lean: bool, port: int) -> dict[str, str]:
    env = {**QUIET_ENV, **(LEAN_SERVER_ENV if lean else {}), **os.environ}
    env["PREFECT_SERVER_LOGGING_LEVEL"] = os.environ.get("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
    env.pop("PREFECT_API_URL", None)
    # The UI calls the API at this address; by default it is port 4200 whatever --port says.
    env["PREFECT_UI_API_URL"] = api_url_for(port)
    env["PREFECT_UI_URL"] = api_url_for(port).removesuffix("/api")
    return env


def _command(port: int) -> list[str]:
    return [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
            "--port", str(port)]  # fmt: skip


def run_foreground(port: int = DEFAULT_PORT, *, lean: bool = True) -> int:
    """Replace this process with `prefect server start` (Ctrl-C stops it)."""
    os.execve(sys.executable, _command(port), _server_env(lean, port))
    return 0  # not reached: execve does not return


def start_server(
    port: int = DEFAULT_PORT, *, lean: bool = True, timeout: float = 120.0
) -> ServerInfo:
    """Start `prefect server start` in the background (it outlives this process) and wait
    until it answers. `lean` turns off the automations and event-feed services, which ctxlab
    does not use and which double the server's CPU per task run."""
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / f"ctxlab-server-{port}.log"
    api_url = api_url_for(port)
    if is_healthy(api_url):
        raise ServerError(f"a server already answers at {api_url}; use it or pick another --port")
    start = time.perf_counter()
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            _command(port), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=_server_env(lean, port), start_new_session=True,  # outlives the command
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
    record = {
        "api_url": api_url, "port": port, "prefect_home": str(home), "pid": process.pid,
        "command": _command(port), "identity": process_identity(process.pid),
        "log_path": str(log_path), "started_at": time.time(),
    }  # fmt: skip
    _state_path(port).write_text(json.dumps(record, indent=2))
    return info


def ensure_server(port: int | None = None, *, lean: bool = True) -> ServerInfo:
    """Find a running server or start one."""
    return find_server(port) or start_server(port or DEFAULT_PORT, lean=lean)


def stop_server(port: int | None = None) -> ServerInfo | None:
    """Stop a server ctxlab started from this Prefect home (the one on `port`, or the only one
    recorded), after checking that its process is still that server; returns what was stopped.
    A record whose process is gone is dropped, and nothing is signalled."""
    ports = [port] if port is not None else _recorded_ports()
    records = [r for r in map(_read_state, ports) if r is not None]
    if not records:
        return None
    if len(records) > 1:
        listed = ", ".join(str(r["port"]) for r in records)
        raise ServerError(f"ctxlab started servers on ports {listed}: give --port to stop one")
    record = records[0]
    if not _is_still(record):
        _state_path(record["port"]).unlink(missing_ok=True)
        return None
    pid = int(record["pid"])
    try:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _state_path(record["port"]).unlink(missing_ok=True)
    return _info(record)


def _is_still(record: dict[str, Any]) -> bool:
    """Whether the recorded server's process is still the one ctxlab started."""
    pid, identity = record.get("pid"), record.get("identity")
    return isinstance(pid, int) and identity is not None and process_identity(pid) == identity


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
    """Point Prefect in this process, its threads and the worker processes it starts at
    `info`. Prefect reads its settings once, at import: the temporary settings cover this
    thread, and refreshing the global settings from the environment covers the threads that
    forward events and logs from process-pool workers (without it their task runs go to a
    temporary server that dies at exit)."""
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = info.api_url  # for subprocesses (workers, Dask)
    refresh_global_settings_context()
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
        refresh_global_settings_context()
