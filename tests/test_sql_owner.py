"""`harness/store/` is the one owner of SQL against the harness tables: the rest of harness,
evals and flows ask the store by name (`Store.usage_by_role`, `Store.thread_runs`,
`Store.file_row`, ...), so a change of schema is made in one package. They may still query
their own tables (`eval_runs`, `eval_probes`, `flow_runs`, `step_journal`) and print example
queries for the user's `ctxlab sql`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harness.store import MIGRATIONS

ROOT = Path(__file__).resolve().parent.parent
# Every table the harness migrations create (and the version table the store keeps).
HARNESS_TABLES = sorted(
    set(re.findall(r"CREATE TABLE (\w+)", "\n".join(MIGRATIONS))) | {"schema_version"}
)
_SQL = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+(" + "|".join(HARNESS_TABLES) + r")\b")
OWNER = "harness/store/"
# Examples printed for the user's own `ctxlab sql`: SQL the user runs, not ctxlab.
USER_EXAMPLES = {
    "flows/cli/run.py": ("SELECT middleware, action, count(*) FROM events GROUP BY ALL",),
    "flows/cli/sql.py": ("SELECT middleware, action, count(*) FROM events GROUP BY ALL",),
    "flows/demo.py": (
        "SELECT middleware, action, count(*) AS times FROM events GROUP BY ALL ORDER BY ALL",
    ),
}


def sql_against_harness_tables(source: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """`line: table` for each string literal in `source` that names a harness table after
    FROM/INTO/UPDATE/JOIN/TABLE, unless it contains one of the `allowed` examples."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(example in node.value for example in allowed):
                continue
            found += [(node.lineno, m.start(), m.group(1)) for m in _SQL.finditer(node.value)]
    return [f"{line}: {table}" for line, _, table in sorted(found)]


def test_the_table_list_is_read_from_the_schema() -> None:
    assert {"runs", "messages", "model_calls", "events", "files", "memory"} <= set(HARNESS_TABLES)


def test_the_scan_finds_sql_in_plain_and_formatted_strings() -> None:
    source = (
        'a = "SELECT count(*) FROM events"\n'
        'b = f"DELETE FROM step_journal WHERE scope IN (SELECT run_id FROM runs {x})"\n'
        'c = "UPDATE runs SET x = 1"\n'
        'd = "SELECT * FROM eval_runs"\n'
        'e = "read from the messages"\n'
    )
    assert sql_against_harness_tables(source) == ["1: events", "2: runs", "3: runs"]


def test_no_sql_against_harness_tables_outside_the_store() -> None:
    offences = []
    for package in ("harness", "evals", "flows"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(OWNER):
                continue
            hits = sql_against_harness_tables(path.read_text(), USER_EXAMPLES.get(name, ()))
            offences += [f"{name}:{hit}" for hit in hits]
    assert offences == [], "ask harness.store by a named query instead: " + ", ".join(offences)
