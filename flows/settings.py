"""Environment defaults that keep Prefect quiet and robust on a small machine.

They are applied with `setdefault` before Prefect is first imported (Prefect reads its
settings from the environment), so anything the user exported wins.
"""

from __future__ import annotations

import os

QUIET_ENV: dict[str, str] = {
    # No telemetry: ctxlab runs offline, and failed phone-home attempts print errors.
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    # Hides the event recorder's tracebacks when a temporary server stops mid-flush.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    # A first start with a fresh PREFECT_HOME runs migrations; 20 s is not enough on 2 cores.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}

# Server services ctxlab does not use (automations, the event feed) cost ~10 ms of server
# CPU per task run; task runs are still recorded without them.
LEAN_SERVER_ENV: dict[str, str] = {
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
}


def apply_defaults() -> None:
    """Set the quiet defaults in `os.environ` where the user has not set them."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
