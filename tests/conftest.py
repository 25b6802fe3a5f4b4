"""Configuration shared by every package's tests: the network guard, the fake provider, bare
agents, the command-line environment. Fixtures of one package live in its own conftest
(tests/harness, tests/flows). Keep each addition in its own delimited section."""

# ---- begin: network guard and fake provider (models adapters) ----------------------------
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.fake_provider import FakeProvider


class NetworkBlockedError(OSError):
    """Raised instead of connecting anywhere but loopback: tests must never reach the net."""


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):
        return True  # AF_UNIX path
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0].decode() if isinstance(address[0], bytes) else str(address[0])
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # any other host name: refused before DNS is even asked
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _check(address: Any) -> None:
    if not _is_local(address):
        raise NetworkBlockedError(f"network access blocked in tests: connect to {address!r}")


@pytest.fixture(autouse=True, scope="session")
def _block_network() -> Iterator[None]:
    """Refuse every non-loopback connection for the whole session, including the ones the
    SDKs' event loops make (asyncio connects through `socket.socket.connect`)."""
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
    create_connection = socket.create_connection
    getaddrinfo = socket.getaddrinfo

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        # Name lookups would leave the machine before any connect is refused.
        if host is not None:
            _check((host, 0))
        return getaddrinfo(host, *args, **kwargs)

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check(address)
        return connect_ex(self, address)

    def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _check(address)
        return create_connection(address, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", guarded_connect)
        mp.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        mp.setattr(socket, "create_connection", guarded_create_connection)
        mp.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
        yield


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A started local OpenAI/Anthropic fake (see tests/helpers/fake_provider.py)."""
    with FakeProvider() as provider:
        yield provider


# ---- end: network guard and fake provider ------------------------------------------------


# ---- begin: bare agents (harness tests and benchmarks) ---------------------------------------
from collections.abc import Callable  # noqa: E402


@pytest.fixture
def bare_agent() -> Callable[..., Any]:
    """`bare_agent(model, tools=(), middleware=(), store=None, **kw)`: an `Agent` with exactly
    the given middleware, none of create_agent's defaults, on an in-memory store unless one
    is given."""
    from harness.agent import Agent
    from harness.models.base import ModelSettings
    from harness.steps import InlineRunner
    from harness.store import Store

    def build(model: Any, tools: Any = (), middleware: Any = (), store: Any = None, **kw: Any):
        return Agent(
            model=model,
            tools=list(tools),
            system_prompt=kw.pop("system_prompt", ""),
            middleware=list(middleware),
            store=store if store is not None else Store(":memory:"),
            name=kw.pop("name", "agent"),
            max_steps=kw.pop("max_steps", 20),
            settings=ModelSettings(),
            step_runner=kw.pop("step_runner", InlineRunner()),
            **kw,
        )

    return build


# ---- end: bare agents -----------------------------------------------------------------------

# ---- begin: command-line tests ----------------------------------------------------------


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """What `ctxlab` commands run under in tests: Prefect's console quiet (main() sets this
    when Prefect is not loaded yet, so it must not leak into other tests), error logs in the
    test's folder, no store named by the environment."""
    monkeypatch.setenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    monkeypatch.setenv("CTXLAB_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.delenv("CTXLAB_DB", raising=False)


@pytest.fixture
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough for every column on one line, for tests that read a table's
    rows (tests/flows/test_terminal_width.py checks narrow terminals)."""
    monkeypatch.setenv("COLUMNS", "320")


# ---- end: command-line tests ------------------------------------------------------------

# ---- begin: command-line model profiles ------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_leaked_model_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--window`/`--price` register a profile in `$CTXLAB_MODELS` for the rest of the process
    (a command is one process); in the test process that must end with the test."""
    import os

    monkeypatch.setenv("CTXLAB_MODELS", os.environ.get("CTXLAB_MODELS", ""))


# ---- end: command-line model profiles --------------------------------------------------------

# ---- begin: MCP test servers (tests/helpers/mcp_server.py) ----------------------------------
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from helpers.waiting import wait_until  # noqa: E402

MCP_SERVER_SCRIPT = str(Path(__file__).parent / "helpers" / "mcp_server.py")


@pytest.fixture
def mcp_stdio() -> Any:
    """The test MCP server, started over stdio by whoever connects to it."""
    from harness.mcp import StdioServer

    return StdioServer(name="research", command=sys.executable, args=[MCP_SERVER_SCRIPT, "stdio"])


@pytest.fixture
def mcp_http(mcp_http_process: tuple[Any, subprocess.Popen[bytes]]) -> Any:
    """The test MCP server running on streamable HTTP at 127.0.0.1 (stopped after the test)."""
    return mcp_http_process[0]


@pytest.fixture
def mcp_http_process() -> Iterator[tuple[Any, subprocess.Popen[bytes]]]:
    """`mcp_http` and the process serving it (a test may kill it)."""
    from harness.mcp import HttpServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, MCP_SERVER_SCRIPT, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            assert process.poll() is None, "the MCP server exited"
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, 60, "the MCP server to listen")
        yield HttpServer(name="research", url=f"http://127.0.0.1:{port}/mcp"), process
    finally:
        process.kill()
        process.wait()


# ---- end: MCP test servers ------------------------------------------------------------------

pytest_plugins = ["evals.gate.pytest_plugin"]  # the ctxlab_gate fixture (evals)
