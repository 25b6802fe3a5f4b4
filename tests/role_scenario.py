"""A recorded scenario whose probes are named by role (a scenario file's `role`) and one of them
carried (restated by the user before it is asked), shared by the tests of availability,
retrieval by role, window scaling and the sanity breaks on imported traces.

Turn u1 reads a user record (~6k tokens of JSON) whose `payment_id` sits in the middle, out of
an offload's preview; u2 reads notes; u3's user restates the reservation id. At a 16k window
nothing overflows under `none`, and offload at an eighth of it (2,000) takes the record out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

PAYMENT = "credit_card_4421907"
OTHER_PAYMENT = "gift_card_7730215"
RESERVATION = "RX8Q2Z"


def _record() -> str:
    filler = [{"event": f"routine account activity, entry {i}", "channel": "web"}
              for i in range(200)]  # fmt: skip
    record = {
        "user_id": "mia_li_3668",
        "history": filler[:100],
        "payment_methods": [
            {"source": "credit_card", "brand": "visa", "payment_id": PAYMENT},
            {"source": "gift_card", "gift_card_id": OTHER_PAYMENT},
        ],
        "reservations": [{"reservation_id": RESERVATION, "status": "confirmed"}],
        "later": filler[100:],
    }
    return json.dumps(record, indent=2)


def _notes(page: int) -> str:
    return "\n".join(f"Note {page}.{i}: the customer prefers email over phone calls on weekdays."
                     for i in range(90))  # fmt: skip


def _probe(pid: str, question: str, answer: str, terms: list[str], **extra: Any) -> dict:
    return {
        "id": pid, "kind": "recall", "question": question, "answer": answer, "after": "end",
        "role": {"kind": "json_key", "phrase": question, "terms": terms, "shape": "id"},
        **extra,
    }  # fmt: skip


def role_scenario(directory: Path, name: str = "roles") -> Path:
    """Write the scenario file into `directory`; its path."""
    spec = {
        "format": "ctxlab-scenario/1",
        "name": name,
        "model": {"window": 16000},
        "system_prompt": "You handle airline bookings.",
        "tools": [
            {
                "name": "get_user_details",
                "description": "Read a user record.",
                "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}},
            },
            {
                "name": "read_notes",
                "description": "Read a page of notes.",
                "parameters": {"type": "object", "properties": {"page": {"type": "integer"}}},
            },
        ],  # fmt: skip
        "turns": [
            {
                "id": "u1",
                "text": "Look up user mia_li_3668.",
                "final": "Found the user.",
                "steps": [
                    {
                        "note": "Reading the user.",
                        "calls": [
                            {"tool": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}
                        ],
                    }
                ],
            },
            {
                "id": "u2",
                "text": "Read the notes pages one and two.",
                "final": "Read them.",
                "steps": [
                    {
                        "note": "Page one.",
                        "calls": [{"tool": "read_notes", "arguments": {"page": 1}}],
                    },
                    {
                        "note": "Page two.",
                        "calls": [{"tool": "read_notes", "arguments": {"page": 2}}],
                    },
                ],
            },
            {
                "id": "u3",
                "text": f"Keep reservation {RESERVATION} in mind; read page three.",
                "final": "Done.",
                "steps": [
                    {
                        "note": "Page three.",
                        "calls": [{"tool": "read_notes", "arguments": {"page": 3}}],
                    }
                ],
            },
        ],  # fmt: skip
        "replies": [
            {
                "tool": "get_user_details",
                "arguments": {"user_id": "mia_li_3668"},
                "content": _record(),
            },
            *(
                {"tool": "read_notes", "arguments": {"page": k}, "content": _notes(k)}
                for k in (1, 2, 3)
            ),
        ],  # fmt: skip
        "probes": [
            _probe(
                "pay",
                "Step 24 used it: what is the payment_id of the credit card in user "
                "mia_li_3668's payment_methods?",
                PAYMENT,
                ["payment_id", "mia_li_3668"],
            ),
            _probe(
                "gift",
                "What is the gift_card_id of the gift card in user mia_li_3668's payment_methods?",
                OTHER_PAYMENT,
                ["gift_card_id", "mia_li_3668"],
            ),
            _probe(
                "res",
                "What is the reservation_id of user mia_li_3668's reservation?",
                RESERVATION,
                ["reservation_id"],
                carried=True,
            ),
        ],
    }
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path
