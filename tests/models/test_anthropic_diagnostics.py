"""Anthropic's cache figures and cache diagnostics, through the real ``anthropic`` SDK against
the recording server: ``cache_write_tokens``, the ``diagnostics.previous_message_id`` chain of
each session, the beta header, ``cache_miss_reason`` and the ``transcript.cache_missed`` event
``agent_loop`` records for it."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic._models import BaseModel, construct_type

from agent_reminders import ModelRequest, Session, Usage, agent_loop
from agent_reminders.integrations.anthropic import CACHE_DIAGNOSIS_BETA
from agent_reminders.models import AnthropicModel
from agent_reminders.models import anthropic as anthropic_backend
from agent_reminders.testing import RecordedRequest, RecordingModelServer

pytestmark = pytest.mark.anyio

MISSED = "transcript.cache_missed"


def claude(server: RecordingModelServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-test", base_url=server.url, api_key="k", **kw)


def request(session_id: str, text: str = "hi") -> ModelRequest:
    return ModelRequest(
        system="sys", messages=[{"role": "user", "content": text}], session_id=session_id
    )


def answer(
    n: int, diagnostics: Any, *, read: int = 0, written: int = 0, fresh: int = 10
) -> dict[str, Any]:
    """A whole Messages API response, ``msg_n``, with the given usage and diagnostics."""
    return {
        "raw_response": {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": f"answer {n}"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": fresh,
                "output_tokens": 2,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
            },
            "diagnostics": diagnostics,
        }
    }


def miss(reason: str | None, missed: int = 900) -> dict[str, Any]:
    if reason is None:
        return {"cache_miss_reason": None}
    return {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": missed}}


def previous_ids(server: RecordingModelServer) -> list[Any]:
    return [body["diagnostics"]["previous_message_id"] for body in server.bodies("messages")]


def betas(record: RecordedRequest) -> list[str]:
    return [b.strip() for b in record.headers.get("anthropic-beta", "").split(",") if b.strip()]


async def test_each_session_chains_its_own_previous_response_id() -> None:
    # the server's default answers are msg_1, msg_2, … in the order requests arrive
    with RecordingModelServer(["a"], loop=True) as server:
        async with claude(server, diagnostics=True) as model:
            for session_id in ["s1", "s1", "s2", "s1", "s2", ""]:
                await model(request(session_id))
    assert previous_ids(server) == [None, "msg_1", None, "msg_2", "msg_3", None]
    assert all(betas(r) == [CACHE_DIAGNOSIS_BETA] for r in server.requests)


async def test_without_diagnostics_nothing_is_sent() -> None:
    with RecordingModelServer(["a", "b"]) as server:
        async with claude(server) as model:
            await model(request("s1"))
            await model(request("s1"))
    assert all("diagnostics" not in body for body in server.bodies("messages"))
    assert all("anthropic-beta" not in r.headers for r in server.requests)


async def test_the_beta_joins_the_given_ones_and_extra_body_is_kept() -> None:
    with RecordingModelServer(["a"]) as server:
        async with claude(
            server,
            diagnostics=True,
            extra_headers={"anthropic-beta": "files-api-2025-04-14"},
            extra_body={"metadata": {"user_id": "u1"}},
        ) as model:
            await model(request("s1"))
    (record,) = server.requests
    assert betas(record) == ["files-api-2025-04-14", CACHE_DIAGNOSIS_BETA]
    assert record.json["metadata"] == {"user_id": "u1"}
    assert record.json["diagnostics"] == {"previous_message_id": None}


async def test_the_sessions_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anthropic_backend, "PREVIOUS_IDS_KEPT", 2)
    with RecordingModelServer(["a"], loop=True) as server:
        async with claude(server, diagnostics=True) as model:
            for session_id in ["s1", "s2", "s1", "s3", "s2", "s3"]:
                await model(request(session_id))
    # s2 was the least recently answered when s3 came: forgotten, it starts a new chain
    # (which forgets s1); s3 is still known
    assert previous_ids(server) == [None, None, "msg_1", None, None, "msg_4"]


async def test_usage_carries_the_cache_write_and_the_miss_reason() -> None:
    script = [
        answer(1, None, written=500),  # no diagnostics asked for (or none given)
        answer(2, miss(None), read=500),  # diagnosis still pending
        answer(3, miss("system_changed"), written=480),
        answer(4, miss("previous_message_not_found")),
        answer(5, miss("speed_changed")),  # a reason this SDK does not know yet
    ]
    with RecordingModelServer(script) as server:
        async with claude(server, diagnostics=True) as model:
            usages = [(await model(request("s1"))).usage for _ in script]
    assert usages == [
        Usage(510, 2, cached_input_tokens=0, cache_write_tokens=500),
        Usage(510, 2, cached_input_tokens=500, cache_write_tokens=0),
        Usage(490, 2, 0, 480, "system_changed"),
        Usage(10, 2, 0, 0, "previous_message_not_found"),
        Usage(10, 2, 0, 0, "speed_changed"),
    ]
    assert previous_ids(server) == [None, "msg_1", "msg_2", "msg_3", "msg_4"]


async def test_an_sdk_without_the_diagnostics_field_keeps_it_as_an_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class OlderMessage(BaseModel):  # a Message type from before the cache diagnostics
        id: str
        content: list[Any]
        usage: dict[str, Any]

    with RecordingModelServer([answer(1, miss(None)), answer(2, miss("tools_changed"))]) as server:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=server.url)
        sent = client.messages.create

        async def create(**options: Any) -> Any:
            message = await sent(**options)
            older = construct_type(type_=OlderMessage, value=message.model_dump())
            assert isinstance(older, OlderMessage)
            assert "diagnostics" in (older.model_extra or {})  # kept raw, as a dict
            return older

        monkeypatch.setattr(client.messages, "create", create)
        async with AnthropicModel("claude-test", client=client, diagnostics=True) as model:
            usages = [(await model(request("s1"))).usage for _ in range(2)]
        await client.close()
    assert [u.cache_miss_reason if u else "-" for u in usages] == [None, "tools_changed"]
    assert previous_ids(server) == [None, "msg_1"]


async def test_no_cache_figures_map_to_none() -> None:
    with RecordingModelServer(["a"], cached_tokens=False) as server:
        async with claude(server) as model:
            usage = (await model(request("s1"))).usage
    assert usage is not None
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (None, None)
    assert usage.cache_miss_reason is None


async def test_agent_loop_records_one_event_per_reported_miss() -> None:
    script = [
        answer(1, miss(None), written=800),
        answer(2, miss("messages_changed", 700), fresh=40, written=760),
        answer(3, miss(None), read=800),
    ]
    session = Session("s1", system="sys")
    with RecordingModelServer(script) as server:
        async with claude(server, diagnostics=True) as model:
            for task in ["one", "two", "three"]:
                await agent_loop(model, task, session=session)
    missed = [r for r in session.event_log.records if r.kind == MISSED]
    assert [(r.topic, r.payload) for r in missed] == [
        (
            "transcript.cache",
            {
                "session_id": "s1",
                "turn_number": 1,
                "model": "anthropic:claude-test",
                "reason": "messages_changed",
                "input_tokens": 800,
                "cached_input_tokens": 0,
                "cache_write_tokens": 760,
            },
        )
    ]
    assert previous_ids(server) == [None, "msg_1", "msg_2"]
    assert all(betas(r) == [CACHE_DIAGNOSIS_BETA] for r in server.requests)
