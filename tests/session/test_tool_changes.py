"""Tools that come and go: on a model that takes tool changes in a system entry the request's
``tools`` stay byte for byte and the change rides the envelope; elsewhere ``tools`` change and
an event records it (today's bytes, no text of the library's own)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agent_reminders import (
    EventLog,
    ModelInfo,
    Session,
    SessionState,
    Tool,
    agent_loop,
    check_append_only,
)
from agent_reminders.integrations import (
    anthropic_betas,
    from_anthropic,
    to_anthropic,
    to_gemini,
    to_openai_chat,
)
from agent_reminders.testing import ScriptedModel

OPUS = ModelInfo(provider="anthropic", name="claude-opus-4-8")
SONNET_4 = ModelInfo(provider="anthropic", name="claude-sonnet-4-5")


def tool(name: str) -> Tool:
    return Tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        fn=lambda q="": f"{name}: {q}",
    )


def _changes(log: EventLog) -> list[dict[str, Any]]:
    return [dict(r.payload) for r in log.records if r.kind == "transcript.tools_changed"]


def test_on_a_capable_model_tools_stay_and_the_change_rides_the_envelope() -> None:
    log = EventLog()
    session = Session(model=OPUS, event_log=log)
    session.add_tools(tool("read"), tool("deploy"))
    session.append({"role": "user", "content": "go"})
    first = session.prepare_request()
    session.append({"role": "assistant", "content": "ok"})
    session.add_tools(tool("search"))
    session.remove_tools("deploy")
    session.append({"role": "user", "content": "again"})
    second = session.prepare_request()
    assert second.tools == first.tools  # byte for byte: nothing prefilled again
    assert [t["name"] for t in second.tools] == ["read", "deploy"]
    last = second.messages[-1]
    assert last["role"] == "system"
    assert isinstance(last["content"], list)
    assert [b["type"] for b in last["content"]] == ["tool_addition", "tool_removal"]
    assert _changes(log) == [
        {"turn_number": 1, "added": ["search"], "removed": ["deploy"], "in_envelope": True}
    ]
    body = to_anthropic(second)
    blocks = body["messages"][-1]["content"]
    assert blocks[0]["tool"]["type"] == "tool_definition"  # not declared up front: inline
    assert blocks[0]["tool"]["definition"]["name"] == "search"
    assert blocks[1]["tool"] == {"type": "tool_reference", "name": "deploy"}
    assert anthropic_betas(body) == [
        "mid-conversation-tool-changes-2026-07-01",
        "inline-tools-2026-09-15",
    ]
    # read back: the neutral blocks again, from the inline definition and the body's tools
    _, back = from_anthropic(to_anthropic(second, cache=False))
    assert back[-1] == json.loads(json.dumps(dict(last)))
    # the same request elsewhere says the change in words
    assert to_openai_chat(second)["messages"][-1]["content"] == [
        {"type": "text", "text": "Tool search is available from here on: The search tool."},
        {"type": "text", "text": "Tool deploy is no longer available."},
    ]
    assert to_gemini(second)["contents"][-1]["parts"][1] == {
        "text": "Tool deploy is no longer available."
    }


def test_a_change_beside_new_directives_shares_their_envelope() -> None:
    session = Session(model=OPUS)
    session.add_tools(tool("read"))
    session.append({"role": "user", "content": "go"})
    session.prepare_request()
    session.append({"role": "assistant", "content": "ok"})
    session.add_tools(tool("search"))
    session.inject({"body": "CI is red"})
    session.append({"role": "user", "content": "again"})
    request = session.prepare_request()
    content = request.messages[-1]["content"]
    assert isinstance(content, list)
    assert [b["type"] for b in content] == ["text", "tool_addition"]
    assert "CI is red" in content[0]["text"]


def test_elsewhere_the_tools_change_and_an_event_says_so() -> None:
    log = EventLog()
    session = Session(model=SONNET_4, event_log=log)
    session.add_tools(tool("read"), tool("deploy"))
    session.append({"role": "user", "content": "go"})
    first = session.prepare_request()
    session.append({"role": "assistant", "content": "ok"})
    session.remove_tools("deploy")
    session.add_tools(tool("search"))
    second = session.prepare_request()
    assert [t["name"] for t in first.tools] == ["read", "deploy"]
    assert [t["name"] for t in second.tools] == ["read", "search"]
    assert all(m["role"] != "system" for m in second.messages)  # no text of the library's own
    assert _changes(log) == [
        {"turn_number": 1, "added": ["search"], "removed": ["deploy"], "in_envelope": False}
    ]


def test_agent_loop_tools_that_change_between_runs() -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "a", "name": "read", "arguments": {"q": "notes"}}]},
            {"content": "read"},
            {"tool_calls": [{"id": "b", "name": "search", "arguments": {"q": "x"}}]},
            {"content": "searched"},
        ],
        model_info=OPUS,
    )
    session = Session(system="sys")

    async def main() -> None:
        await agent_loop(model, "one", session=session, tools=[tool("read"), tool("deploy")])
        result = await agent_loop(
            model, "two", session=session, tools=[tool("read"), tool("search")]
        )
        assert result.final_message is not None
        assert result.final_message["content"] == "searched"

    anyio.run(main)
    requests = list(model.requests)
    assert len({json.dumps(r.tools) for r in requests}) == 1  # tools byte for byte
    assert check_append_only([to_anthropic(r, cache=False) for r in requests]) == []
    tool_message = [m for m in requests[-1].messages if m["role"] == "tool"][-1]
    assert tool_message["content"] == "search: x"  # the added tool was dispatched


def test_tool_set_checks_and_saved_state() -> None:
    session = Session(model=OPUS, session_id="s")
    session.add_tools(tool("read"))
    session.add_tools(tool("read"))  # the same tool again: nothing changes
    with pytest.raises(ValueError, match="a tool named 'read' is offered already"):
        session.add_tools(Tool(name="read", description="other", parameters={}, fn=lambda: ""))
    with pytest.raises(ValueError, match="no tool named nope; offered now: read"):
        session.remove_tools("nope")
    with pytest.raises(TypeError):
        session.add_tools({"name": "x"})  # type: ignore[arg-type]
    session.append({"role": "user", "content": "go"})
    session.prepare_request()
    session.append({"role": "assistant", "content": "ok"})
    session.add_tools(tool("search"))
    state = SessionState.from_json(session.state().to_json())
    assert state.declared_tools == (tool("read").spec(),)
    assert state.announced_tools == ("read",)
    restored = Session.from_state(state, model=OPUS)
    restored.add_tools(tool("read"), tool("search"))
    assert restored.prepare_request() == session.prepare_request()
