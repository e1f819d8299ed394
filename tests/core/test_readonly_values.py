"""Values handed out can never change stored history (issue 8, deliverable 5)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from agent_reminders import Message, Session, Transcript, check_append_only


def _session() -> Session:
    s = Session(system="sys")
    s.append({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    s.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}],
        }
    )
    s.append({"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a.py"})
    s.inject({"body": "Run the tests.", "ttl_turns": 2})
    return s


MUTATIONS: list[Any] = [
    lambda m: m.__setitem__("content", "edited"),
    lambda m: m.update(content="edited"),
    lambda m: m.pop("content"),
    lambda m: m.clear(),
    lambda m: m.setdefault("name", "x"),
    lambda m: m.__delitem__("role"),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_transcript_messages_are_read_only(mutate: Any) -> None:
    s = _session()
    before = s.transcript.to_json()
    with pytest.raises(TypeError, match="read-only"):
        mutate(s.transcript.messages[0])
    assert s.transcript.to_json() == before


def test_nested_content_and_tool_calls_are_read_only() -> None:
    s = _session()
    first, call = s.transcript.messages[0], s.transcript.messages[1]
    with pytest.raises(TypeError):
        first["content"].append({"type": "text", "text": "x"})  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        first["content"][0]["text"] = "edited"  # type: ignore[index]
    with pytest.raises(TypeError):
        call["tool_calls"][0]["arguments"]["path"] = "/etc"
    assert s.transcript.messages[0]["content"] == [{"type": "text", "text": "hi"}]


def test_request_messages_cannot_change_history_or_fool_the_checker() -> None:
    s = _session()
    first = s.prepare_request()
    with pytest.raises(TypeError):
        first.messages[0]["content"] = "edited"
    with pytest.raises(AttributeError):  # a read-only Sequence has no append
        first.messages.append({"role": "user", "content": "x"})  # type: ignore[attr-defined]
    s.append({"role": "assistant", "content": "ok"})
    second = s.prepare_request()
    assert check_append_only([list(first.messages), list(second.messages)]) == []
    assert list(second.messages[: len(first.messages)]) == list(first.messages)
    assert all("directive_ids" not in m for m in second.messages)


def test_a_request_view_never_changes_once_handed_out() -> None:
    s = _session()
    request = s.prepare_request()
    snapshot = json.dumps(list(request.messages), sort_keys=True)
    for i in range(5):
        s.append({"role": "assistant", "content": f"a{i}"})
        s.inject({"body": f"note {i}", "ttl_turns": 1})
        s.prepare_request()
    s.compact(keep_last=1)
    assert json.dumps(list(request.messages), sort_keys=True) == snapshot
    assert len(request.messages) == len(json.loads(snapshot))


def test_copies_are_plain_and_mutable() -> None:
    message = Transcript().append({"role": "user", "content": [{"type": "text", "text": "x"}]})
    stored = message.messages[0]
    for made in (
        dict(stored),
        copy.copy(stored),
        copy.deepcopy(stored),
        pickle.loads(pickle.dumps(stored)),
    ):
        made["role"] = "assistant"
        assert stored["role"] == "user"
    deep = copy.deepcopy(stored)
    deep["content"].append({"type": "text", "text": "y"})  # type: ignore[union-attr]
    assert len(stored["content"]) == 1
    assert json.loads(json.dumps(stored)) == {
        "role": "user",
        "content": [{"type": "text", "text": "x"}],
    }


def test_appending_copies_the_callers_message() -> None:
    mine: Message = {"role": "user", "content": [{"type": "text", "text": "mine"}]}
    t = Transcript().append(mine)
    mine["content"][0]["text"] = "changed later"  # type: ignore[index]
    assert t.messages[0]["content"][0]["text"] == "mine"  # type: ignore[index]
