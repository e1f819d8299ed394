"""Records can be built positionally, in the order their fields are declared."""

from __future__ import annotations

import dataclasses

import pytest

from agent_reminders import (
    Diagnostic,
    InjectionQueue,
    ModelRequest,
    ModelResponse,
    PrefixBreak,
    Reminder,
    Tool,
    ToolCall,
    ToolReceipt,
    ToolResult,
    Usage,
    check_append_only,
)


def test_positional_construction_follows_the_field_order() -> None:
    usage = Usage(100, 20)
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (100, 20, None)
    assert (usage.cache_write_tokens, usage.cache_miss_reason) == (None, None)
    assert Usage(100, 20, 0, 90, "system_changed").to_dict() == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cached_input_tokens": 0,
        "cache_write_tokens": 90,
        "cache_miss_reason": "system_changed",
    }
    response = ModelResponse({"role": "assistant", "content": "hi"}, usage)
    assert response.usage is usage
    request = ModelRequest("sys", (), (), "s1", 3)  # type: ignore[arg-type]
    assert (request.session_id, request.turn) == ("s1", 3)
    result = ToolResult("out", False, True, 900)
    assert result.to_dict() == {
        "content": "out",
        "ok": False,
        "truncated": True,
        "original_size": 900,
    }
    tool = Tool("bash", "Run a command.", {"type": "object"}, lambda command: command)
    assert tool.spec()["name"] == "bash"
    assert ToolCall("c1", "bash", {"command": "ls"}).arguments == {"command": "ls"}
    assert ToolReceipt("c1", "bash", True).reminders == []
    assert Diagnostic("RMD-004", "warning", "m").severity == "warning"


def test_prefix_break_compares_by_position_only() -> None:
    a = [{"role": "user", "content": "a"}]
    b = [{"role": "user", "content": "b"}]
    assert check_append_only([a, b]) == [PrefixBreak(1, 0)]
    assert check_append_only([a, b])[0].reason == "message_changed"
    assert PrefixBreak(1, 0) != PrefixBreak(1, 1)


def test_reminder_stays_keyword_only() -> None:
    with pytest.raises(TypeError):
        Reminder("id", "body")  # type: ignore[call-arg]
    assert all(f.kw_only for f in dataclasses.fields(Reminder))


def test_queue_item_is_positional() -> None:
    queue = InjectionQueue()
    rid = queue.remind({"body": "x"})
    [item] = queue.drain("iteration_start")
    assert (item.kind, item.id, item.mode.value) == ("reminder", rid, "finish_step")
    assert type(item)("user", "u1", item.mode, {"content": "c"}).payload == {"content": "c"}
