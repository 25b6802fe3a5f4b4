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


class CountingStore(Store):
    """A store that remembers every read it ran on the tables named (`FROM <table>`)."""

    def __init__(self, tables: tuple[str, ...], path: Any = ":memory:") -> None:
        self.reads: list[str] = []
        self._tables = tuple(f"FROM {t}" for t in tables)
        super().__init__(path)

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        self._note(sql)
        return super().query(sql, params)

    def scalar(self, sql: str, params: Any = None) -> Any:
        self._note(sql)
        return super().scalar(sql, params)

    def _note(self, sql: str) -> None:
        if any(t in sql for t in self._tables):
            self.reads.append(sql)
