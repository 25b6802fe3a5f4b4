"""One long OpenAI Chat trace of any number of messages, for the import's scaling benchmark
(test_long_trace_import_bench.py) and the linearity test: the shape of a long support
session, where the agent looks records up, closes them later by the ids the lookups showed,
notes the figures it read, and now and then is sent on by the user.

Every `lookup` result shows fresh records (an id, an amount, an owner) and some repeat an
earlier customer's lookup (a repeated identical call, so `occurrence` counts); a `close`
passes an id a lookup showed a few steps earlier, or one from long before (the cue search
must reach back). Seeded, so the same `n` gives the same file on every machine.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OWNERS = ("Dana Smith", "Lior Adler", "Mika Tanaka", "Ravi Kumar", "Ines Moreau", "Tom Berg")
STATUSES = ("open", "pending", "disputed")
TOOLS = [
    {"type": "function", "function": {
        "name": "lookup", "description": "The open records of a customer.",
        "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "close", "description": "Closes a record.",
        "parameters": {"type": "object", "properties": {
            "record_id": {"type": "string"}, "reason": {"type": "string"}}}}},
]  # fmt: skip


def long_trace(n: int, seed: int = 0) -> dict[str, Any]:
    """An OpenAI Chat record (`model`, `tools`, `messages`) of exactly `n` messages (n >= 4)."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You close the open records of a ledger, one at a time."},
        {"role": "user", "content": "Close every open record of the customers in the queue."},
    ]
    records: list[tuple[str, str]] = []  # (id, amount) shown and not closed yet
    customers: list[str] = []
    call = 0
    while len(messages) < n - 2:  # room for a call and its result, and the answer
        call += 1
        cid = f"call_{call:06d}"
        kind = rng.random()
        if len(messages) % 997 < 6 and len(messages) > 6:
            messages.append({"role": "user", "content": f"Go on with batch {call} of the queue."})
            continue
        if kind < 0.45 or not records:
            if customers and rng.random() < 0.1:
                customer = rng.choice(customers)  # the same lookup again: a repeated call
            else:
                customer = f"C-{rng.randrange(10_000, 99_999)}"
                customers.append(customer)
            rows = []
            for _ in range(rng.randrange(1, 4)):
                rid = f"REC-{rng.randrange(100_000, 999_999)}"
                amount = f"{rng.randrange(10, 9999)}.{rng.randrange(10, 99)}"
                records.append((rid, amount))
                rows.append(f"record {rid}: amount {amount} EUR, status {rng.choice(STATUSES)}, "
                            f"owner {rng.choice(OWNERS)}")  # fmt: skip
            text = f"Looking up the records of customer {customer}."
            args: dict[str, Any] = {"customer": customer}
            name, result = "lookup", f"customer {customer}: {len(rows)} records\n" + "\n".join(rows)
        else:
            # Mostly a record shown a few steps ago, sometimes one from long before.
            back = rng.randrange(1, 4) if rng.random() < 0.8 else rng.randrange(1, len(records) + 1)
            rid, amount = records.pop(max(0, len(records) - back))
            text = f"Closing {rid}, its amount {amount} is settled."
            args = {"record_id": rid, "reason": f"settled {amount} EUR"}
            name, result = "close", f"closed {rid} (amount {amount} EUR)"
        messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    if len(messages) < n - 1:
        messages.append({"role": "user", "content": "That is the queue: sum it up."})
    last = records[-1] if records else ("none", "0")  # the answer names one still open
    messages.append({"role": "assistant", "content": f"Done: {last[0]} is still open "
                     f"at {last[1]} EUR."})  # fmt: skip
    return {"model": "gpt-4.1", "tools": TOOLS, "messages": messages}


def write_long_trace(path: Path, n: int, seed: int = 0) -> Path:
    """Writes `long_trace(n, seed)` to `path` as one JSON document."""
    path.write_text(json.dumps(long_trace(n, seed)))
    return path
