"""Channels through the real SDK clients: each backend reports its model, ``channel="auto"``
follows the capability table, envelopes travel as Anthropic ``system`` entries or OpenAI
``developer`` messages where the table says (``clear_at`` and its beta header on models that
take it), the recording server refuses what the APIs refuse with their 400 body, and a
refused system entry becomes one ``ModelError`` that names the entry and the setting."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest
from wire_checks import assert_raw_append_only, compact, raw_value

from agent_reminders import (
    ConfigError,
    Hooks,
    ModelError,
    ModelInfo,
    ModelRequest,
    Reminder,
    Session,
    Tool,
    agent_loop,
    render_envelope,
)
from agent_reminders.capabilities import register_model_capabilities
from agent_reminders.integrations.anthropic import CLEAR_AT_BETA, TOOL_CHANGES_BETA
from agent_reminders.models import (
    AnthropicModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    parse_model_spec,
)
from agent_reminders.testing import RecordingModelServer, strip_cache_control

pytestmark = pytest.mark.anyio

# Rows of this process's capability table for names no real model has: an OpenAI-compatible
# server whose chat template takes a late system message, and a Claude model that takes a
# system entry but not the clear_at beta.
LOCAL = "gpt-channels-local"
register_model_capabilities(f"openai-compatible:{LOCAL}", system_messages=True)
NO_CLEAR = "claude-channels-no-clear"
register_model_capabilities(f"anthropic:{NO_CLEAR}", system_messages=True, clear_at=False)

OPUS, SONNET_4 = "claude-opus-4-8", "claude-sonnet-4-5"
STANDING = "Keep every change small and tested."
ONE_TURN = "The next answer must quote the failing line."
QUEUED = "Host note: the user is watching the build."
HOOKED = "You read a generated file; edit its source instead."
MIXED = "Re-run the linter once more."
AGAIN = "Name the failing test in the answer."
ENVELOPE = "<context-directives"
DIRECTIVE = re.compile(r"<directive [^>]*>")


# -- a ten-turn tool session -------------------------------------------------------------------


def script() -> list[dict[str, Any]]:
    """Nine turns of tool calls (read_file and run in turn), then an answer."""
    turns: list[dict[str, Any]] = []
    for n in range(9):
        if n % 2:
            call = {"id": f"call_{n}", "name": "run", "arguments": {"command": f"step {n}"}}
            turns.append({"tool_calls": [call]})
        else:
            call = {"id": f"call_{n}", "name": "read_file", "arguments": {"path": f"gen_{n}.py"}}
            turns.append({"content": f"Looking at file {n}.", "tool_calls": [call]})
    turns.append({"content": "All done."})
    return turns


@dataclass
class Run:
    session: Session
    usages: list[dict[str, Any] | None]


async def run_session(model: Any, channel: str) -> Run:
    session = Session(system="You are a careful coding agent.", channel=channel)  # type: ignore[arg-type]
    usages: list[dict[str, Any] | None] = []
    session.providers.register(
        "usage_probe",
        subscribes_to="on_budget_threshold",
        evaluate=lambda ctx: usages.append(ctx.payload["usage"]),
    )
    runs = {"n": 0}

    def read_file(path: str) -> str:
        return f"# {path}\nprint('hello')\n"

    def run(command: str) -> str:
        runs["n"] += 1
        if runs["n"] == 1:  # an envelope of one-turn directives only: clear_at where it can
            session.inject({"body": ONE_TURN, "ttl_turns": 1})
        elif runs["n"] == 2:
            session.queue.remind({"body": QUEUED, "ttl_turns": 2})
        elif runs["n"] == 3:  # one-turn and lasting together: no clear_at
            session.inject({"body": AGAIN, "ttl_turns": 1})
            session.inject({"body": MIXED})
        return f"$ {command}\nok"

    hooks = Hooks()
    hooks.tool(
        "read_file",
        post=lambda call, result: (
            {"body": HOOKED, "ttl_turns": 1} if call.arguments.get("path") == "gen_6.py" else None
        ),
    )
    tools = [
        Tool("read_file", "Read a file.", {"type": "object", "properties": {}}, read_file),
        Tool("run", "Run a command.", {"type": "object", "properties": {}}, run),
    ]
    session.inject({"body": STANDING})
    result = await agent_loop(
        model, "Fix the failing build.", session=session, tools=tools, hooks=hooks
    )
    assert result.status == "completed"
    assert result.iterations == 10
    return Run(session, usages)


def official(model: Any) -> Any:
    """The backend as it reports itself on OpenAI's own endpoint (the requests still go to
    the local server): what ``channel="auto"`` resolves from there."""
    model.model_info = ModelInfo(provider="openai", name=model.model)
    return model


@dataclass(frozen=True)
class Case:
    make: Callable[[RecordingModelServer], Any]
    api: str
    channel: str
    role: str  # the wire role every envelope must travel in


def claude(name: str) -> Callable[[RecordingModelServer], Any]:
    return lambda s: AnthropicModel(name, base_url=s.url, api_key="k", max_retries=0)


def chat(name: str, **kw: Any) -> Callable[[RecordingModelServer], Any]:
    return lambda s: OpenAIChatModel(name, base_url=s.base_url, api_key="k", max_retries=0, **kw)


def responses(name: str) -> Callable[[RecordingModelServer], Any]:
    return lambda s: OpenAIResponsesModel(name, base_url=s.base_url, api_key="k", max_retries=0)


CASES = {
    "anthropic-opus-auto": Case(claude("claude-opus-4-8"), "messages", "auto", "system"),
    "anthropic-opus-user": Case(claude("claude-opus-4-8"), "messages", "user", "user"),
    "anthropic-no-clear-auto": Case(claude(NO_CLEAR), "messages", "auto", "system"),
    "anthropic-unknown-auto": Case(claude("claude-test"), "messages", "auto", "user"),
    "chat-openai-auto": Case(lambda s: official(chat("gpt-5")(s)), "chat", "auto", "developer"),
    "chat-registered-auto": Case(chat(LOCAL), "chat", "auto", "developer"),
    "chat-compatible-auto": Case(chat("gpt-test"), "chat", "auto", "user"),
    "chat-forced-system": Case(chat("gpt-test"), "chat", "system", "developer"),
    "chat-system-role": Case(chat("gpt-test", system_role="system"), "chat", "system", "system"),
    "chat-user": Case(chat(LOCAL), "chat", "user", "user"),
    "responses-openai-auto": Case(
        lambda s: official(responses("gpt-5")(s)), "responses", "auto", "developer"
    ),
    "responses-registered-auto": Case(responses(LOCAL), "responses", "auto", "developer"),
    "responses-user": Case(responses(LOCAL), "responses", "user", "user"),
}
LIST_KEY = {"chat": "messages", "responses": "input", "messages": "messages"}


def text_of(entry: dict[str, Any]) -> str:
    content = entry.get("content") or ""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def kind_of(entry: dict[str, Any]) -> str:
    """An entry's role, or its item type when it has none (Responses function items)."""
    return str(entry.get("role") or entry.get("type"))


# The neighbours a system entry may have, on each wire (Responses: tool results and calls are
# items of their own).
BEFORE = {
    "messages": {"user"},
    "chat": {"user", "tool"},
    "responses": {"user", "function_call_output"},
}
AFTER = {
    "messages": {"assistant"},
    "chat": {"assistant"},
    "responses": {"assistant", "function_call"},
}
CACHED = {  # where each API reports cached tokens
    "chat": ("prompt_tokens_details", "cached_tokens"),
    "responses": ("input_tokens_details", "cached_tokens"),
    "messages": ("cache_read_input_tokens",),
}


def one_turn_only(text: str) -> bool:
    """Every directive of an envelope lasts one turn (read from the text, on its own)."""
    openings = DIRECTIVE.findall(text)
    return bool(openings) and all('ttl_turns="1"' in o for o in openings)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_ten_turn_tool_session_on_each_channel(name: str) -> None:
    case = CASES[name]
    with RecordingModelServer(script()) as server:
        async with case.make(server) as model:
            run = await run_session(model, case.channel)
    records = server.requests
    assert [r.api for r in records] == [case.api] * 10
    assert [status for status, _ in server.replies] == [200] * 10  # not one 400
    key = LIST_KEY[case.api]
    committed = "user" if case.role == "user" else "system"
    history = run.session.transcript.messages
    envelopes = [m for m in history if ENVELOPE in text_of(dict(m))]
    assert len(envelopes) >= 5
    assert {m["role"] for m in envelopes} == {committed}  # the channel is kept with it
    for record in records:
        entries = record.json[key]
        found = [(i, e) for i, e in enumerate(entries) if ENVELOPE in text_of(e)]
        assert found
        assert {kind_of(e) for _, e in found} == {case.role}
        # nothing else travels in a system role mid-list (the system prompt is the only one)
        mid = [e for e in entries[1:] if kind_of(e) in ("system", "developer")]
        assert len(mid) == (len(found) if case.role != "user" else 0)
        if case.role != "user":  # in place: after a user turn or a tool result, before the answer
            for i, _ in found:
                assert kind_of(entries[i - 1]) in BEFORE[case.api]
                after = entries[i + 1] if i + 1 < len(entries) else None
                assert after is None or kind_of(after) in AFTER[case.api]
    last = records[-1].json[key]
    assert [text_of(e) for e in last if ENVELOPE in text_of(e)] == [
        text_of(dict(m)) for m in envelopes
    ]
    for body in (STANDING, ONE_TURN, QUEUED, HOOKED, MIXED):
        assert body in json.dumps(last)
    # append-only, byte for byte (Anthropic: without the cache markers, which move by design)
    if case.api == "messages":
        items = [[compact(m) for m in strip_cache_control(r.json[key])] for r in records]
        for before, after in itertools.pairwise(items):
            assert after[: len(before)] == before
    else:
        assert_raw_append_only([raw_value(r.body, key) for r in records])
    # cached tokens, as the server reported them, back in the loop's Usage
    replies = [body["usage"] for _, body in server.replies]
    assert len(run.usages) == 10
    for usage, wire in zip(run.usages, replies, strict=True):
        assert usage is not None
        cached: Any = wire
        for field in CACHED[case.api]:
            cached = cached[field]
        assert usage["cached_input_tokens"] == cached
    assert run.usages[0]["cached_input_tokens"] == 0  # type: ignore[index]
    assert all(u["cached_input_tokens"] > 0 for u in run.usages[1:])  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "clears"),
    [("anthropic-opus-auto", True), ("anthropic-no-clear-auto", False)],
)
async def test_clear_at_goes_with_its_beta_header_on_models_that_take_it(
    name: str, clears: bool
) -> None:
    case = CASES[name]
    with RecordingModelServer(script()) as server:
        async with case.make(server) as model:
            await run_session(model, case.channel)
    assert [status for status, _ in server.replies] == [200] * 10
    marked: list[str] = []
    unmarked: list[str] = []
    for record in server.requests:
        messages = record.json["messages"]
        for entry in messages:
            if entry["role"] == "system":
                text = text_of(entry)
                if "clear_at" in entry:
                    assert entry["clear_at"] == "next_user_message"
                    marked.append(text)
                else:
                    unmarked.append(text)
                assert ("clear_at" in entry) == (clears and one_turn_only(text))
            else:
                assert "clear_at" not in entry
        header = record.headers.get("anthropic-beta", "")
        assert (CLEAR_AT_BETA in header.split(",")) == any("clear_at" in m for m in messages)
        assert TOOL_CHANGES_BETA not in header
    for one_turn in (ONE_TURN, HOOKED):  # envelopes of one-turn directives only
        assert any(one_turn in t for t in marked) == clears
        assert any(one_turn in t for t in unmarked) != clears
    assert not any(AGAIN in t for t in marked)  # beside a lasting directive: kept in view
    assert any(AGAIN in t and MIXED in t for t in unmarked)
    assert any(QUEUED in t for t in unmarked)
    assert any(STANDING in t for t in unmarked)
    if not clears:
        assert marked == []
    if clears:  # once an entry carries clear_at, every later request needs the header
        headers = [CLEAR_AT_BETA in r.headers.get("anthropic-beta", "") for r in server.requests]
        assert headers == sorted(headers)
        assert headers[-1]


# -- what each backend reports ---------------------------------------------------------------


def test_each_backend_reports_its_model_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    local = "http://127.0.0.1:8080/v1"
    assert AnthropicModel(OPUS).model_info == ModelInfo("anthropic", OPUS)
    assert OpenAIChatModel("gpt-5").model_info == ModelInfo("openai", "gpt-5")
    assert OpenAIResponsesModel("gpt-5").model_info == ModelInfo("openai", "gpt-5")
    official_url = OpenAIChatModel("gpt-5", base_url="https://api.openai.com/v1")
    assert official_url.model_info == ModelInfo("openai", "gpt-5")
    assert OpenAIChatModel("qwen3", base_url=local).model_info == ModelInfo(
        "openai", "qwen3", local
    )
    proxy = AnthropicModel("claude-opus-4-8", base_url="http://127.0.0.1:9000")
    assert proxy.model_info.base_url == "http://127.0.0.1:9000"
    assert proxy.model_info.key == "anthropic:claude-opus-4-8"
    # the SDK reads its base-URL variable, so the backend does too
    monkeypatch.setenv("OPENAI_BASE_URL", local)
    assert OpenAIChatModel("gpt-5").model_info.key == "openai-compatible:gpt-5"
    # a client given is where the requests go
    client = openai.AsyncOpenAI(base_url=local, api_key="k")
    assert OpenAIResponsesModel("gpt-5", client=client).model_info.base_url == f"{local}/"
    monkeypatch.delenv("OPENAI_BASE_URL")
    client = openai.AsyncOpenAI(api_key="k")
    assert OpenAIChatModel("gpt-5", client=client).model_info.base_url is None


@pytest.mark.parametrize(
    ("model", "channel"),
    [
        (AnthropicModel("claude-opus-4-8"), "system"),
        (AnthropicModel("claude-opus-4-8-20260528"), "system"),
        (AnthropicModel("claude-sonnet-4-5"), "user"),
        (OpenAIChatModel("gpt-5"), "system"),
        (OpenAIResponsesModel("gpt-5"), "system"),
        (OpenAIChatModel("gpt-5", base_url="http://127.0.0.1:11434/v1"), "user"),
        (OpenAIChatModel(LOCAL, base_url="http://127.0.0.1:11434/v1"), "system"),
    ],
    ids=repr,
)
def test_auto_resolves_through_the_table(model: Any, channel: str) -> None:
    session = Session()
    session.use_model(model.model_info)
    assert session.envelope_channel() == channel
    assert Session(channel="user", model=model.model_info).envelope_channel() == "user"


def test_system_role_setting() -> None:
    assert OpenAIChatModel("m").system_role == "developer"
    model = parse_model_spec("openai:m", base_url="http://127.0.0.1:1/v1", system_role="system")
    assert isinstance(model, OpenAIChatModel)
    assert model.system_role == "system"
    with pytest.raises(ConfigError, match="system_role must be 'developer' or 'system'"):
        OpenAIChatModel("m", system_role="assistant")  # type: ignore[arg-type]


# -- a refused entry through the backends ------------------------------------------------------


def assert_names_the_setting(err: ModelError, entry: str, key: str) -> None:
    text = str(err)
    assert err.status == 400
    assert f"the mid-conversation system entry at {entry}" in text
    assert 'Session(channel="user")' in text
    assert "serve --channel user" in text
    assert f'register_model_capabilities("{key}"' in text
    assert err.server_message is not None
    assert err.server_message in text


async def test_a_system_entry_on_a_model_without_one_is_one_clear_error() -> None:
    with RecordingModelServer(["never played", "fixed"]) as server:
        async with AnthropicModel(SONNET_4, base_url=server.url, api_key="k") as model:
            session = Session(channel="system")  # forced onto a model the table says no for
            session.inject({"body": STANDING})
            with pytest.raises(ModelError) as caught:
                await agent_loop(model, "go", session=session)
            fixed = Session(channel="user")
            fixed.inject({"body": STANDING})
            await agent_loop(model, "go", session=fixed)
    err = caught.value
    assert "Anthropic model 'claude-sonnet-4-5'" in str(err)
    assert_names_the_setting(err, "messages[1]", "anthropic:claude-sonnet-4-5")
    assert "system_messages=False" in str(err)
    assert err.server_message is not None
    assert err.server_message.startswith("messages.1: system messages inside messages")
    assert err.__suppress_context__
    assert [status for status, _ in server.replies] == [400, 200]


def downgrade_undone(real: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``to_anthropic`` without its downgrade: every envelope a system entry where it stands
    (the body a wire format that ignored the placement rules would send)."""

    def convert(request: ModelRequest, **options: Any) -> dict[str, Any]:
        body = real(request, **options)
        for entry in body["messages"]:
            if entry["role"] == "user" and ENVELOPE in text_of(entry):
                entry["role"] = "system"
        return body

    return convert


@pytest.mark.parametrize("downgrade", [True, False], ids=["downgraded", "left-in-place"])
async def test_after_a_failed_call_the_downgrade_avoids_the_400(
    downgrade: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_reminders.models.anthropic as backend

    if not downgrade:
        monkeypatch.setattr(backend, "to_anthropic", downgrade_undone(backend.to_anthropic))  # type: ignore[attr-defined]
    script: list[dict[str, Any] | str] = [{"error": "Overloaded", "status": 529}, "Done."]
    with RecordingModelServer(script) as server:
        async with AnthropicModel(OPUS, base_url=server.url, api_key="k", max_retries=0) as m:
            session = Session()
            session.inject({"body": STANDING})
            with pytest.raises(ModelError, match="HTTP 529"):
                await agent_loop(m, "go", session=session)  # the envelope was the last entry
            assert [x["role"] for x in session.transcript.messages] == ["user", "system"]
            if downgrade:
                result = await agent_loop(m, "try again", session=session)
                assert result.final_message is not None
                assert result.final_message["content"] == "Done."
            else:
                with pytest.raises(ModelError) as caught:
                    await agent_loop(m, "try again", session=session)
    first, second = server.bodies("messages")
    assert [e["role"] for e in first["messages"]] == ["user", "system"]
    if downgrade:
        assert [e["role"] for e in second["messages"]] == ["user", "user", "user"]
        assert [status for status, _ in server.replies] == [529, 200]
        events = [e.payload for e in session.event_log.records if e.kind.endswith("downgraded")]
        assert [(e["message_index"], e["reason"]) for e in events] == [(1, "not_before_assistant")]
    else:
        assert [e["role"] for e in second["messages"]] == ["user", "system", "user"]
        assert [status for status, _ in server.replies] == [529, 400]
        err = caught.value
        assert_names_the_setting(err, "messages[1]", "anthropic:claude-opus-4-8")
        assert err.server_message is not None
        assert "invalid placement of a system message" in err.server_message


async def test_clear_at_without_its_header_is_refused_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agent_reminders.models.anthropic as backend

    monkeypatch.setattr(backend, "anthropic_betas", lambda body: [])
    envelope = render_envelope([Reminder(body=ONE_TURN, ttl_turns=1)])
    request = ModelRequest(
        system="sys",
        messages=[{"role": "user", "content": "go"}, {"role": "system", "content": envelope}],
    )
    with RecordingModelServer(["never played"]) as server:
        async with AnthropicModel(OPUS, base_url=server.url, api_key="k") as model:
            with pytest.raises(ModelError) as caught:
                await model(request)
    assert server.bodies()[0]["messages"][1]["clear_at"] == "next_user_message"
    assert_names_the_setting(caught.value, "messages[1]", "anthropic:claude-opus-4-8")
    assert "system_messages=True) to keep the system channel without its betas" in str(caught.value)


async def test_the_beta_header_keeps_the_betas_already_sent() -> None:
    envelope = render_envelope([Reminder(body=ONE_TURN, ttl_turns=1)])
    request = ModelRequest(
        system="sys",
        messages=[{"role": "user", "content": "go"}, {"role": "system", "content": envelope}],
    )
    with RecordingModelServer(["a", "b", "c"]) as server:
        async with anthropic.AsyncAnthropic(
            base_url=server.url, api_key="k", default_headers={"anthropic-beta": "own-beta-1"}
        ) as client:
            await AnthropicModel(OPUS, client=client)(request)
        extra = {"Anthropic-Beta": "own-beta-2", "X-Trace": "t1"}
        async with AnthropicModel(
            OPUS, base_url=server.url, api_key="k", extra_headers=extra
        ) as model:
            await model(request)
            await model(ModelRequest(system="sys", messages=[{"role": "user", "content": "go"}]))
    first, second, plain = (r.headers for r in server.requests)
    assert first["anthropic-beta"] == f"own-beta-1,{CLEAR_AT_BETA}"
    assert second["anthropic-beta"] == f"own-beta-2,{CLEAR_AT_BETA}"
    assert second["x-trace"] == "t1"
    assert plain["anthropic-beta"] == "own-beta-2"  # nothing added where nothing is needed


SYSTEM_REQUEST = ModelRequest(
    system="sys",
    messages=[
        {"role": "user", "content": "go"},
        {"role": "system", "content": render_envelope([Reminder(body=STANDING)])},
    ],
)


@pytest.mark.parametrize(
    ("backend", "status", "said", "entry"),
    [
        # llama.cpp / vLLM chat templates (names no entry: the first one is meant)
        ("chat", 400, "System message must be at the beginning.", "messages[2] (the first"),
        (
            "chat",
            500,
            "Error rendering prompt with jinja template: Conversation roles must alternate "
            "user/assistant/user/assistant/... and the system role is only allowed first",
            "messages[2] (the first",
        ),
        # OpenAI's own words for a model without the developer role
        (
            "chat",
            400,
            "Unsupported value: 'messages[2].role' does not support 'developer' with this model.",
            "messages[2]",
        ),
        (
            "responses",
            400,
            "Unsupported value: 'input[1].role' does not support 'developer' with this model.",
            "input[1]",
        ),
    ],
)
async def test_an_openai_compatible_refusal_is_one_clear_error(
    backend: str, status: int, said: str, entry: str
) -> None:
    with RecordingModelServer([{"error": said, "status": status}]) as server:
        make = chat(LOCAL) if backend == "chat" else responses(LOCAL)
        async with make(server) as model:
            with pytest.raises(ModelError) as caught:
                await model(SYSTEM_REQUEST)
    err = caught.value
    text = str(err)
    assert err.status == status
    assert f"the mid-conversation system entry at {entry}" in text
    assert 'Session(channel="user")' in text
    assert f'register_model_capabilities("openai-compatible:{LOCAL}", system_messages=False)' in (
        text
    )
    assert said in text
    assert ('system_role="system"' in text) == (backend == "chat" and "developer" in said)


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        # the leading system prompt, not an envelope: the channel would not help
        (SYSTEM_REQUEST, "Unsupported value: 'messages[0].role' does not support 'system'."),
        (SYSTEM_REQUEST, "max_tokens is too large: 100000."),
        # no mid-conversation entry in the request at all
        (
            ModelRequest(system="sys", messages=[{"role": "user", "content": "go"}]),
            "System message must be at the beginning.",
        ),
    ],
    ids=["system-prompt", "unrelated", "user-channel"],
)
async def test_other_400s_stay_plain_http_errors(request_: ModelRequest, said: str) -> None:
    with RecordingModelServer([{"error": said, "status": 400}]) as server:
        async with chat(LOCAL)(server) as model:
            with pytest.raises(ModelError) as caught:
                await model(request_)
    text = str(caught.value)
    assert text.endswith(f"HTTP 400 from {server.base_url}/: {said}")
    assert "Session(channel=" not in text
