"""LangChain: which channel ``ReminderMiddleware`` puts an envelope on, and what happens when a
system envelope can no longer stand where it is.

A ``SystemMessage`` envelope only where the chat model's class sends it in place (its profile's
``mid_conversation_system_messages``, or ``ChatOpenAI``), marked ``developer`` on OpenAI's own
endpoint; a ``HumanMessage`` otherwise. A failed model call followed by a user message, and a
switch to a model that takes no system message, send the old system envelope as a user message
from then on (``channel_downgraded`` once). ``ChatAnthropic`` and ``ChatOpenAI`` run against
the recording server, which answers a misplaced system entry with Anthropic's 400.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.language_models import BaseChatModel, ModelProfile
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from agent_reminders import ModelInfo, Session
from agent_reminders.integrations.driver import NOT_SUPPORTED
from agent_reminders.integrations.langchain import (
    ENVELOPE_SOURCE,
    ReminderMiddleware,
    _target,
)
from agent_reminders.testing import RecordingModelServer

SYSTEM = "You are a careful coding agent."
IN_PLACE: ModelProfile = {"mid_conversation_system_messages": True}
ENVELOPE = "<context-directives"


class FlakyFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, taught to take tools, recording every input; the calls
    numbered in ``fail`` (from 0) raise instead of answering."""

    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    fail: set[int] = Field(default_factory=set)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FlakyFakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.inputs.append(list(messages))
        if len(self.inputs) - 1 in self.fail:
            raise ConnectionError("the model is unavailable")
        return super()._generate(messages, *args, **kwargs)


def _call(n: int, command: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"id": f"c{n}", "name": "bash", "args": {"command": command}}],
    )


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return "ok"


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _dump(message: BaseMessage) -> str:
    return json.dumps(message.model_dump(), sort_keys=True, default=str)


def _ours(message: BaseMessage) -> bool:
    return message.additional_kwargs.get("lc_source") == ENVELOPE_SOURCE


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def _downgrades(session: Session) -> list[dict[str, Any]]:
    return [
        dict(r.payload)
        for r in session.event_log.records
        if r.kind == "transcript.channel_downgraded"
    ]


def _agent(model: BaseChatModel, middleware: ReminderMiddleware, saver: InMemorySaver) -> Any:
    tools: list[BaseTool] = [bash]
    return create_agent(
        model, tools=tools, system_prompt=SYSTEM, middleware=[middleware], checkpointer=saver
    )


# -- what a chat model takes ----------------------------------------------------------------------

LOCAL = "http://127.0.0.1:8080/v1"


MODELS: dict[str, tuple[BaseChatModel, str, tuple[bool, bool, bool]]] = {
    # model -> (its key in the capability table, (in place, anywhere, as developer))
    # langchain-anthropic's profile sets mid_conversation_system_messages for Opus 4.8
    "opus-4-8": (
        ChatAnthropic(model="claude-opus-4-8", api_key="k"),  # type: ignore[arg-type, call-arg]
        "anthropic:claude-opus-4-8",
        (True, False, False),
    ),
    # no flag: ChatAnthropic would move a late SystemMessage into the system prompt
    "sonnet-4-5": (
        ChatAnthropic(model="claude-sonnet-4-5", api_key="k"),  # type: ignore[arg-type, call-arg]
        "anthropic:claude-sonnet-4-5",
        (False, False, False),
    ),
    # ChatOpenAI sends every SystemMessage where it stands; developer on OpenAI's endpoint
    "openai": (ChatOpenAI(model="gpt-4o", api_key="k"), "openai:gpt-4o", (True, True, True)),  # type: ignore[arg-type]
    "openai-compatible": (
        ChatOpenAI(model="gpt-5", api_key="k", base_url=LOCAL),  # type: ignore[arg-type]
        "openai-compatible:gpt-5",
        (True, True, False),
    ),
    # a profile that says no (as langchain-openai's Codex class does) is heeded
    "profile-says-no": (
        ChatOpenAI(
            model="gpt-4o",
            api_key="k",  # type: ignore[arg-type]
            profile={"mid_conversation_system_messages": False},
        ),
        "openai:gpt-4o",
        (False, True, True),
    ),
    "fake": (
        GenericFakeChatModel(messages=iter([])),
        "genericfakechatmodel:",
        (False, False, False),
    ),
    "fake-in-place": (
        GenericFakeChatModel(messages=iter([]), profile=IN_PLACE),
        "genericfakechatmodel:",
        (True, False, False),
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_what_each_chat_model_takes(name: str) -> None:
    model, key, expected = MODELS[name]
    target = _target(model)
    assert target.info.key == key
    assert (target.in_place, target.anywhere, target.developer) == expected


@pytest.mark.parametrize("channel", ["auto", "system"])
def test_the_chat_model_of_the_request_sets_the_channel(channel: str) -> None:
    """The fake's provider is in no table row: "auto" stays user; "system" takes its word."""
    model = FlakyFakeModel(messages=iter([_call(1, "ls"), "done"]), profile=IN_PLACE)
    middleware = ReminderMiddleware(channel=channel)
    session = middleware.session_for("t")
    agent = _agent(model, middleware, InMemorySaver())
    session.inject({"body": "Keep every change small.", "ttl_turns": 5})
    agent.invoke({"messages": [HumanMessage("go")]}, _thread("t"))
    assert session.model == ModelInfo(provider="flakyfakemodel", name="")
    first = [m for m in model.inputs[-1] if _ours(m)]
    assert len(first) == 1
    assert type(first[0]) is (SystemMessage if channel == "system" else HumanMessage)


# -- a failed call, a model switch, an envelope after an answer ---------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.anyio
async def test_after_a_failed_call_a_user_message_turns_the_envelope_into_user_text(
    mode: str,
) -> None:
    model = FlakyFakeModel(
        messages=iter([_call(1, "ls"), "done", "again", "later"]), profile=IN_PLACE, fail={2}
    )
    middleware = ReminderMiddleware(channel="system")
    session = middleware.session_for("t")
    agent = _agent(model, middleware, InMemorySaver())

    async def run(text: str) -> Any:
        task = {"messages": [HumanMessage(text)]}
        if mode == "sync":
            return agent.invoke(task, _thread("t"))
        return await agent.ainvoke(task, _thread("t"))

    await run("go")
    session.inject({"body": "Lost with the failed call.", "ttl_turns": 5})
    with pytest.raises(ConnectionError):
        await run("second")
    await run("third")
    session.inject({"body": "After the recovery.", "ttl_turns": 5})
    await run("fourth")
    failed, recovered, later = model.inputs[2:]
    # the failed request sent the envelope as a system message, last
    assert isinstance(failed[-1], SystemMessage)
    assert "Lost with the failed call." in _text(failed[-1])
    # the next request: the same envelope (id, text, marker) as a user message, in place
    index = len(failed) - 1
    moved = recovered[index]
    assert type(moved) is HumanMessage
    assert (moved.id, moved.content) == (failed[-1].id, failed[-1].content)
    assert moved.additional_kwargs == {"lc_source": ENVELOPE_SOURCE}
    assert [_dump(m) for m in recovered[:index]] == [_dump(m) for m in failed[:index]]
    assert recovered[index + 1].content == "third"
    # the state keeps what was committed; only the requests show the downgrade
    history = agent.get_state(_thread("t")).values["messages"]
    assert isinstance(history[index - 1], SystemMessage)  # less the system prompt
    # recorded once, with the index in the request and the rule it breaks
    assert _downgrades(session) == [
        {"message_index": index - 1, "reason": "not_before_assistant", "turn_number": 3}
    ]
    # and from then on the requests are append-only again, the new envelope a system one
    assert [_dump(m) for m in later[: len(recovered)]] == [_dump(m) for m in recovered]
    assert isinstance(later[-1], SystemMessage)
    assert "After the recovery." in _text(later[-1])


def test_a_switch_to_a_model_without_system_messages_sends_them_as_user_text() -> None:
    saver = InMemorySaver()
    middleware = ReminderMiddleware(channel="system")
    session = middleware.session_for("t")
    first = FlakyFakeModel(messages=iter([_call(1, "ls"), "done"]), profile=IN_PLACE)
    session.inject({"body": "Keep every change small.", "ttl_turns": 9})
    _agent(first, middleware, saver).invoke({"messages": [HumanMessage("go")]}, _thread("t"))
    assert sum(isinstance(m, SystemMessage) and _ours(m) for m in first.inputs[-1]) == 1
    second = FlakyFakeModel(messages=iter(["one", "two"]))  # no profile: it would hoist
    agent = _agent(second, middleware, saver)
    session.inject({"body": "Now the docs.", "ttl_turns": 9})
    agent.invoke({"messages": [HumanMessage("docs")]}, _thread("t"))
    agent.invoke({"messages": [HumanMessage("more")]}, _thread("t"))
    for messages in second.inputs:
        assert not any(isinstance(m, SystemMessage) for m in messages[1:])
        assert sum(type(m) is HumanMessage and _ours(m) for m in messages) == 2
    before, after = second.inputs
    assert [_dump(m) for m in after[: len(before)]] == [_dump(m) for m in before]
    # both recorded once: the old envelope, and the one committed before the middleware
    # saw the new model (the model of the thread's last call decides a commit)
    reasons = [(e["message_index"], e["reason"]) for e in _downgrades(session)]
    assert reasons == [(1, NOT_SUPPORTED), (6, NOT_SUPPORTED)]
    assert session.envelope_channel() == "system"  # the setting; the middleware sends user


def test_an_envelope_after_the_models_answer_is_a_user_message() -> None:
    """A system entry follows a user turn (tool results are one): after an answer, with no
    new user message, the envelope is committed as user text, not downgraded later."""
    model = FlakyFakeModel(messages=iter(["done", "still done"]), profile=IN_PLACE)
    middleware = ReminderMiddleware(channel="system")
    session = middleware.session_for("t")
    agent = _agent(model, middleware, InMemorySaver())
    agent.invoke({"messages": [HumanMessage("go")]}, _thread("t"))
    session.inject({"body": "Check the answer once more.", "ttl_turns": 2})
    agent.invoke({"messages": []}, _thread("t"))
    last = model.inputs[-1]
    assert isinstance(last[-2], AIMessage)
    assert type(last[-1]) is HumanMessage
    assert _ours(last[-1])
    assert _downgrades(session) == []


# -- the real clients ---------------------------------------------------------------------------


def _tool_call(n: int) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"c{n}", "name": "bash", "arguments": {"command": "ls"}}]}


def _roles(body: dict[str, Any], key: str = "messages") -> list[str]:
    """The role of each wire entry, ``system*`` for one that holds an envelope."""
    out = []
    for entry in body[key]:
        role = str(entry.get("role", entry.get("type")))
        text = json.dumps(entry.get("content"), ensure_ascii=False)
        out.append(f"{role}*" if ENVELOPE in text else role)
    return out


def test_chat_anthropic_after_a_failed_call_gets_no_400_and_no_hoisted_system() -> None:
    script = [
        _tool_call(1),
        {"content": "done"},
        {"error": {"type": "overloaded_error", "message": "try later"}, "status": 529},
        {"content": "recovered"},
    ]
    with RecordingModelServer(script) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model="claude-opus-4-8",
            base_url=server.url,
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
        )
        middleware = ReminderMiddleware(model=model)
        session = middleware.session_for("t")
        agent = _agent(model, middleware, InMemorySaver())
        session.inject({"body": "Keep every change small.", "ttl_turns": 9})
        agent.invoke({"messages": [HumanMessage("go")]}, _thread("t"))
        session.inject({"body": "Sent with the failed call.", "ttl_turns": 9})
        with pytest.raises(Exception, match="try later"):
            agent.invoke({"messages": [HumanMessage("second")]}, _thread("t"))
        state = agent.invoke({"messages": [HumanMessage("third")]}, _thread("t"))
    assert state["messages"][-1].text == "recovered"
    assert [status for status, _ in server.replies] == [200, 200, 529, 200]
    bodies = [r.json for r in server.requests]
    # model= told the middleware the model: the very first envelope is a system entry
    assert _roles(bodies[0]) == ["user", "system*"]
    assert _roles(bodies[2])[-3:] == ["assistant", "user", "system*"]
    # after the failure the envelope travels as user text, merged into the user turn by
    # ChatAnthropic; the system prompt is the same bytes (nothing was hoisted into it)
    assert _roles(bodies[3])[-2:] == ["assistant", "user*"]
    assert len({json.dumps(b["system"]) for b in bodies}) == 1
    last = json.dumps(bodies[3]["messages"][-1], ensure_ascii=False)
    assert last.index("second") < last.index("Sent with the failed call.") < last.index("third")
    assert [e["reason"] for e in _downgrades(session) if e["turn_number"] == 3] == [
        "not_before_assistant"
    ]


def test_without_model_the_first_envelopes_are_user_text() -> None:
    with RecordingModelServer([_tool_call(1), {"content": "done"}]) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model="claude-opus-4-8",
            base_url=server.url,
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
        )
        middleware = ReminderMiddleware()
        session = middleware.session

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            session.inject({"body": "Second note.", "ttl_turns": 9})
            return "ok"

        session.inject({"body": "Keep every change small.", "ttl_turns": 9})
        agent = create_agent(model, tools=[bash], system_prompt=SYSTEM, middleware=[middleware])
        agent.invoke({"messages": [HumanMessage("go")]})
    assert [status for status, _ in server.replies] == [200, 200]
    first, second = (r.json for r in server.requests)
    assert _roles(first) == ["user*"]  # merged into the user turn: no model known yet
    assert _roles(second)[-1] == "system*"  # the model of the first call decides from then on
    assert session.model == ModelInfo(provider="anthropic", name="claude-opus-4-8")


class ToServer(httpx.BaseTransport):
    """Sends what the client addresses to OpenAI's endpoint to the recording server."""

    def __init__(self, server: RecordingModelServer) -> None:
        self.port = server.port
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_chat_openai_on_openais_endpoint_sends_developer_messages(api: str) -> None:
    with (
        RecordingModelServer([_tool_call(1), {"content": "done"}]) as server,
        httpx.Client(transport=ToServer(server)) as http,
    ):
        model = ChatOpenAI(
            model="gpt-4.1",
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
            http_client=http,
            use_responses_api=api == "responses",
        )
        middleware = ReminderMiddleware(model=model)
        middleware.session.inject({"body": "Keep every change small.", "ttl_turns": 9})
        agent = create_agent(model, tools=[bash], system_prompt=SYSTEM, middleware=[middleware])
        state = agent.invoke({"messages": [HumanMessage("go")]})
    assert middleware.session.model == ModelInfo(
        provider="openai", name="gpt-4.1", base_url="https://api.openai.com/v1/"
    )
    key = "messages" if api == "chat" else "input"
    bodies = [r.json for r in server.requests]
    assert {r.api for r in server.requests} == {api}
    envelopes = [e for b in bodies for e in b[key] if ENVELOPE in json.dumps(e)]
    assert len(envelopes) == 2  # the one envelope, in both requests
    assert {e["role"] for e in envelopes} == {"developer"}
    assert bodies[1][key][: len(bodies[0][key])] == bodies[0][key]
    assert b"__openai_role__" not in b"".join(r.body for r in server.requests)
    # the state keeps the mark ChatOpenAI reads the role from
    held = [m for m in state["messages"] if _ours(m)]
    assert [type(m) for m in held] == [SystemMessage]
    assert held[0].additional_kwargs == {
        "lc_source": ENVELOPE_SOURCE,
        "__openai_role__": "developer",
    }


def test_each_model_call_is_append_only_on_the_system_channel_with_chat_anthropic() -> None:
    """Six calls with tools, the envelope of each after the tool results, against the
    server's placement rules: every request valid, each a prefix of the next."""
    script = [*(_tool_call(n) for n in range(5)), {"content": "done"}]
    with RecordingModelServer(script) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model="claude-opus-4-8",
            base_url=server.url,
            api_key="k",  # type: ignore[arg-type]
            max_retries=0,
        )
        middleware = ReminderMiddleware(model=model)
        counter = itertools.count()

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            middleware.session.inject({"body": f"Step {next(counter)} noted.", "ttl_turns": 1})
            return "ok"

        middleware.session.inject({"body": "Keep every change small.", "ttl_turns": 9})
        agent = create_agent(model, tools=[bash], system_prompt=SYSTEM, middleware=[middleware])
        agent.invoke({"messages": [HumanMessage("go")]})
    assert [status for status, _ in server.replies] == [200] * 6
    lists = [r.json["messages"] for r in server.requests]
    for before, after in itertools.pairwise(lists):
        assert after[: len(before)] == before
    roles = _roles(server.requests[-1].json)
    assert roles.count("system*") == 6
    assert "user*" not in roles  # none sent out of place
