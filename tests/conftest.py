"""Shared pytest configuration. Several engineers add to this file: keep each addition in
its own delimited section."""

# ---- begin: network guard and fake provider (models adapters) ----------------------------
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fake_provider import FakeProvider


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
        yield


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A started local OpenAI/Anthropic fake (see tests/fake_provider.py)."""
    with FakeProvider() as provider:
        yield provider


# ---- end: network guard and fake provider ------------------------------------------------
