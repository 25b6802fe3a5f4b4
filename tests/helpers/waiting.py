"""Waiting in tests on something that happens in another thread or process: poll a condition
until it holds or a deadline passes, never a fixed sleep that guesses how long it takes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def poll(read: Callable[[], T], done: Callable[[T], bool], timeout: float, every: float) -> T:
    """`read()` again every `every` seconds until `done` accepts its value or `timeout`
    seconds have passed; the last value either way (the caller's assert says what was due)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(every)


async def poll_async(
    read: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float, every: float
) -> T:
    """`poll` inside an event loop: `read` is awaited, and the wait lets the loop run."""
    deadline = time.monotonic() + timeout
    while True:
        value = await read()
        if done(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(every)


def wait_until(check: Callable[[], bool], timeout: float, what: str, every: float = 0.05) -> None:
    """Return once `check()` holds; fail naming `what` after `timeout` seconds."""
    if not poll(check, bool, timeout, every):
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")
