"""The dispatcher and the error table (docs/protocol.md, "Errors"): every error row is answered
and the
same connection keeps working; random frames never crash it."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import (
    ConfigError,
    ModelError,
    QueueError,
    ReminderError,
    StoreError,
)
from agent_reminders.bridge import Dispatcher, RpcError, SessionBusyError
from agent_reminders.storage import UnknownSessionError


async def _ping(params: Any, connection: Any) -> Any:
    return {"pong": params}


def _raiser(exc: BaseException) -> Any:
    async def handler(params: Any, connection: Any) -> Any:
        raise exc

    return handler


ROWS: list[tuple[str, BaseException, int]] = [
    ("rmd001", ReminderError("RMD-001", "unknown key(s): colour"), -32602),
    ("rmd009", ReminderError("RMD-009", "authority above grant"), -32602),
    ("config", ConfigError("bad setting"), -32602),
    ("revoked", QueueError("already_delivered", "delivered"), -32602),
    ("full", QueueError("queue_full", "full"), -32005),
    ("missing", UnknownSessionError("s1"), -32004),
    ("scope", RpcError(-32003, "not allowed"), -32003),
    ("busy", SessionBusyError("s1", "worker-1"), -32006),
    ("store", StoreError("state.db: locked"), -32603),
    ("model", ModelError("openai", "timeout"), -32603),
    ("boom", KeyError("a secret in a traceback"), -32603),
]


def _dispatcher() -> Dispatcher:
    methods = {"ping": _ping, **{name: _raiser(exc) for name, exc, _ in ROWS}}
    return Dispatcher(methods, max_frame_bytes=4096)


def _call(d: Dispatcher, frame: str | bytes) -> Any:
    reply = anyio.run(d.handle_frame, frame, None)
    return None if reply is None else json.loads(reply)


def _ping_works(d: Dispatcher) -> None:
    reply = _call(d, '{"jsonrpc":"2.0","id":"p","method":"ping"}')
    assert reply == {"jsonrpc": "2.0", "id": "p", "result": {"pong": None}}


FRAMES = [
    ("{not json", -32700),
    (b"\xff\xfe", -32700),
    ("[]", -32600),
    ("42", -32600),
    ('{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
    ('{"jsonrpc":"2.0","id":1}', -32600),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"ping","params":3}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"nope"}', -32601),
    ("[" + "x" * 5000 + "]", -32600),
]


@pytest.mark.parametrize(("frame", "code"), FRAMES)
def test_malformed_frames_get_their_error_and_the_connection_stays_usable(
    frame: str | bytes, code: int
) -> None:
    d = _dispatcher()
    reply = _call(d, frame)
    assert reply["jsonrpc"] == "2.0"
    assert reply["error"]["code"] == code
    assert "result" not in reply
    _ping_works(d)


@pytest.mark.parametrize(("method", "exc", "code"), ROWS, ids=[r[0] for r in ROWS])
def test_every_row_of_the_error_table(method: str, exc: BaseException, code: int) -> None:
    d = _dispatcher()
    reply = _call(d, json.dumps({"jsonrpc": "2.0", "id": 7, "method": method}))
    error = reply["error"]
    assert reply["id"] == 7
    assert error["code"] == code
    assert "Traceback" not in json.dumps(reply)
    assert "secret" not in json.dumps(reply)
    if code == -32602:
        assert error["data"]["code"] == exc.code  # type: ignore[attr-defined]
        assert error["data"]["message"] == exc.message  # type: ignore[attr-defined]
    if code == -32005:
        assert error["data"]["retryAfterMs"] > 0
    if code == -32006:
        assert error["data"]["owner"] == "worker-1"
    if code == -32004:
        assert error["message"] == "Session not found"
    _ping_works(d)


def test_notifications_never_get_a_reply_even_when_they_fail() -> None:
    d = _dispatcher()
    assert _call(d, '{"jsonrpc":"2.0","method":"ping"}') is None
    assert _call(d, '{"jsonrpc":"2.0","method":"boom"}') is None
    assert _call(d, '{"jsonrpc":"2.0","method":"nope"}') is None
    _ping_works(d)


def test_batches_answer_their_requests_in_order() -> None:
    d = _dispatcher()
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        {"jsonrpc": "2.0", "method": "ping"},
        5,
        {"jsonrpc": "2.0", "id": 2, "method": "missing"},
    ]
    replies = _call(d, json.dumps(batch))
    assert [r["id"] for r in replies] == [1, None, 2]
    assert replies[0]["result"] == {"pong": [1]}
    assert replies[1]["error"]["code"] == -32600
    assert replies[2]["error"]["code"] == -32004
    assert _call(d, json.dumps([{"jsonrpc": "2.0", "method": "ping"}])) is None


def _valid_reply(reply: Any) -> None:
    assert isinstance(reply, dict)
    assert reply["jsonrpc"] == "2.0"
    assert "id" in reply
    assert ("result" in reply) != ("error" in reply)
    if "error" in reply:
        assert isinstance(reply["error"]["code"], int)
        assert isinstance(reply["error"]["message"], str)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
requestish = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": json_values,
        "method": st.sampled_from(["ping", "boom", "rmd001", "nope", 3]),
        "params": json_values,
    },
)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=64),
        json_values.map(json.dumps),
        requestish.map(json.dumps),
        st.lists(requestish, max_size=4).map(json.dumps),
    )
)
def test_fuzz_every_reply_is_a_valid_json_rpc_response(frame: str | bytes) -> None:
    d = _dispatcher()
    text = anyio.run(d.handle_frame, frame, None)
    if text is not None:
        assert "\n" not in text
        reply = json.loads(text)
        for item in reply if isinstance(reply, list) else [reply]:
            _valid_reply(item)
    _ping_works(d)


def test_a_rate_limit_counts_every_element_of_a_batch() -> None:
    from agent_reminders.bridge.limits import TokenBucket

    now = [0.0]
    bucket = TokenBucket(2, clock=lambda: now[0])
    d = _dispatcher()
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(3)]
    frame = anyio.run(lambda: d.handle_frame(json.dumps(batch), None, limiter=bucket))
    assert frame is not None
    replies = json.loads(frame)
    assert [("result" in r) for r in replies] == [True, True, False]
    assert replies[2]["error"]["code"] == -32005
    assert replies[2]["error"]["data"]["retryAfterMs"] == 500
    now[0] = 1.0
    again = anyio.run(
        lambda: d.handle_frame('{"jsonrpc":"2.0","id":9,"method":"ping"}', None, limiter=bucket)
    )
    assert again is not None
    assert json.loads(again)["result"] == {"pong": None}
