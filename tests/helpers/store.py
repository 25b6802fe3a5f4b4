"""Reading a test's store through the store's named queries, never raw SQL against its tables."""

from __future__ import annotations

import json
from typing import Any

from harness.store import Store


def events(
    store: Store,
    run_id: str | None = None,
    *,
    middleware: str | None = None,
    action: str | None = None,
) -> list[dict[str, Any]]:
    """`store.events.rows` with each event's `detail` decoded from its JSON."""
    rows = store.events.rows(run_id, middleware=middleware, action=action)
    return [{**r, "detail": json.loads(r["detail"]) if r["detail"] else None} for r in rows]
