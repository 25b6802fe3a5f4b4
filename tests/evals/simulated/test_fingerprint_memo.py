"""A message's prompt-cache fingerprint is looked up by what the message holds: equal messages
under new ids (another cell's replay) share it, and any difference in its JSON gives another."""

from __future__ import annotations

import hashlib
import json

import pytest

import evals.simulated.usage as usage
from harness.memo import Memo
from harness.messages import Message, ToolCall, assistant, user


def _expected(m: Message) -> str:
    body = json.dumps(
        [m.role, m.content, [[c.id, c.name, c.arguments] for c in m.tool_calls],
         m.tool_call_id, m.name], sort_keys=True, default=str,
    )  # fmt: skip
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _call(arguments: dict[str, object], call_id: str = "c1") -> Message:
    return assistant("Looking.", [ToolCall(call_id, "grep", arguments)])


def test_an_equal_message_under_a_new_id_is_written_out_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, again = user("Find the order ORD-0042."), user("Find the order ORD-0042.")
    expected = _expected(first)
    written: list[object] = []
    dumps = json.dumps
    monkeypatch.setattr(json, "dumps", lambda obj, **kw: written.append(obj) or dumps(obj, **kw))
    assert first.id != again.id
    assert usage.fingerprint(first) == usage.fingerprint(again) == expected
    assert len(written) == 1


@pytest.mark.parametrize(
    "variant",
    [
        _call({"pattern": 1.0}),  # 1 and 1.0 and True are equal in Python, not in JSON
        _call({"pattern": True}),
        _call({"pattern": "1"}),
        _call({"pattern": 1, "path": "/a"}),
        _call({"pattern": [1]}),
        _call({"pattern": 1}, call_id="c2"),
        assistant("Looking again.", [ToolCall("c1", "grep", {"pattern": 1})]),
        Message(role="tool", content="Looking.", tool_call_id="c1"),
    ],
)
def test_a_message_that_differs_in_its_json_gets_its_own_fingerprint(variant: Message) -> None:
    base = _call({"pattern": 1})
    assert usage.fingerprint(base) == _expected(base)
    assert usage.fingerprint(variant) == _expected(variant) != _expected(base)


def test_messages_without_content_are_remembered_within_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(usage, "_FINGERPRINTS", Memo(1_000, usage._weight))
    calls = [assistant("", [ToolCall(f"c{i}", "grep", {"pattern": i})]) for i in range(100)]
    assert [usage.fingerprint(m) for m in calls] == [_expected(m) for m in calls]
    assert usage._FINGERPRINTS.held <= 1_000
    written: list[object] = []
    dumps = json.dumps
    monkeypatch.setattr(json, "dumps", lambda obj, **kw: written.append(obj) or dumps(obj, **kw))
    usage.fingerprint(calls[0])  # the oldest left: a message with no content weighs too
    assert len(written) == 1
