"""The JSON-RPC layer against what ``json.loads`` accepts but the server cannot keep.

Python's decoder takes ``NaN``, ``Infinity``, ``-Infinity`` and numbers beyond a double's range
(``1e400`` becomes ``inf``), which the server's encoder refuses, and nesting hundreds of levels
deep, which the code that copies and stores a value cannot take. Such a number in a request's
id is ``-32600`` with ``id: null``; either of them anywhere in its params is ``-32602``
(``RMD-002`` naming the path) before any handler runs; a notification gets no reply; the
connection stays usable. An integer literal over Python's 4300-digit limit is a parse error.
Checked on a real ``serve`` subprocess over stdio, on real WebSocket connections, and by a
Hypothesis fuzz of ``Dispatcher.handle_frame`` on a bridge over ``MemoryStore``.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from crashkit import ServeProcess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reminders import Session
from agent_reminders.bridge import Bridge, BridgeSettings, Connection, Dispatcher
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.dispatcher import MAX_DEPTH
from agent_reminders.bridge.ws import serving_ws
from agent_reminders.storage import MemoryStore, SQLiteStore, Store

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e999999", "1" * 400 + ".5"]
HUGE_INT = "9" * 5000  # over the 4300 digits int() takes from text
TOKEN = "hardening-token-0123456789"


def _refuse_constant(text: str) -> Any:
    raise AssertionError(f"the server sent {text}, which is not JSON")


def _strict(text: str | bytes | None) -> Any:
    """``text`` parsed as JSON proper: no NaN/Infinity, nothing ``allow_nan=False`` refuses."""
    assert text is not None
    value = json.loads(text, parse_constant=_refuse_constant)
    json.dumps(value, allow_nan=False)
    return value


def _raw(server: ServeProcess, text: str) -> None:
    assert server.proc.stdin is not None
    server.proc.stdin.write(text.encode() + b"\n")
    server.proc.stdin.flush()


# -- a real serve process over stdio ---------------------------------------------------------


def test_serve_over_stdio_answers_numbers_json_cannot_carry(tmp_path: Path) -> None:
    server = ServeProcess("--store", "memory:", cwd=tmp_path)
    try:
        for literal in NON_FINITE:
            _raw(server, f'{{"jsonrpc":"2.0","id":{literal},"method":"initialize","params":{{}}}}')
            reply = server.reply(None)  # type: ignore[arg-type]
            assert reply["error"]["code"] == -32600, literal
            assert "id" in reply
            assert reply["id"] is None
            # later requests are still answered
            assert server.call("initialize", {})["protocolVersion"] == 1
        sid = server.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})["sessionId"]
        for literal in NON_FINITE:
            reminder = f'{{"body":"CI is red","ttl_turns":{literal}}}'
            frame = (
                '{"jsonrpc":"2.0","id":7,"method":"session/remind","params":'
                f'{{"sessionId":"{sid}","reminder":{reminder}}}}}'
            )
            _raw(server, frame)
            reply = server.reply(7)
            assert reply["error"]["code"] == -32602, literal
            assert reply["error"]["data"]["code"] == "RMD-002"
            assert "params.reminder.ttl_turns" in reply["error"]["data"]["message"]
        # a notification carrying one gets no reply: the next line's reply comes first
        _raw(server, '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":NaN}}')
        _raw(server, '[{"jsonrpc":"2.0","method":"initialize","params":{"x":[1,-Infinity]}}]')
        assert server.call("session/pending_injections", {"sessionId": sid}) == {
            "pendingCount": 0,
            "injections": [],
        }
        # over 4300 digits: not JSON Python can read, so a parse error
        for frame in (
            f'{{"jsonrpc":"2.0","id":{HUGE_INT},"method":"initialize"}}',
            f'{{"jsonrpc":"2.0","id":8,"method":"initialize","params":{{"n":{HUGE_INT}}}}}',
        ):
            _raw(server, frame)
            reply = server.reply(None)  # type: ignore[arg-type]
            assert reply["error"]["code"] == -32700
        assert server.call("initialize", {})["protocolVersion"] == 1
    finally:
        code = server.close()
    assert code == 0, server.stderr
    assert "Traceback" not in server.stderr


# -- the dispatcher's answer path cannot raise -----------------------------------------------


async def _ping(params: Any, connection: Any) -> Any:
    return {"pong": params}


async def _not_json(params: Any, connection: Any) -> Any:
    return {"value": math.nan}


def test_answer_never_raises_even_when_the_id_cannot_be_encoded() -> None:
    d = Dispatcher({"ping": _ping, "bad": _not_json})
    # a transport may hand answer() a message it built itself: an int str() refuses as id
    message = {"jsonrpc": "2.0", "id": 10**5000, "method": "bad"}
    reply = _strict(anyio.run(d.answer, message, None))
    assert reply["error"]["code"] == -32603
    assert reply["id"] is None


def test_one_reply_that_is_not_json_leaves_the_rest_of_its_batch() -> None:
    d = Dispatcher({"ping": _ping, "bad": _not_json})
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "bad"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    replies = _strict(anyio.run(d.handle_frame, json.dumps(batch), None))
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[0]["result"] == replies[2]["result"] == {"pong": None}
    assert replies[1]["error"]["code"] == -32603


def test_no_handler_runs_for_a_request_carrying_a_non_finite_number() -> None:
    called: list[Any] = []

    async def record(params: Any, connection: Any) -> Any:
        called.append(params)
        return None

    d = Dispatcher({"record": record})
    frames = {
        '{"jsonrpc":"2.0","id":1,"method":"record","params":[1,2,[NaN]]}': "params[2][0]",
        '{"jsonrpc":"2.0","id":1,"method":"record","params":{"a":{"b":1e400}}}': "params.a.b",
    }
    for frame, path in frames.items():
        reply = _strict(anyio.run(d.handle_frame, frame, None))
        assert reply["id"] == 1
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["code"] == "RMD-002"
        assert path in reply["error"]["data"]["message"]
    notification = '{"jsonrpc":"2.0","method":"record","params":{"a":-Infinity}}'
    assert anyio.run(d.handle_frame, notification, None) is None
    assert called == []
    ok = '{"jsonrpc":"2.0","id":2,"method":"record","params":{"a":1.5}}'
    assert _strict(anyio.run(d.handle_frame, ok, None))["result"] is None
    assert called == [{"a": 1.5}]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_deeper_than_the_limit_is_refused_before_a_handler_runs() -> None:
    called: list[Any] = []

    async def record(params: Any, connection: Any) -> Any:
        called.append(params)
        return None

    d = Dispatcher({"record": record})
    # params is the first level: the limit holds params and what it nests
    at_limit = _nested(MAX_DEPTH)
    ok = f'{{"jsonrpc":"2.0","id":1,"method":"record","params":{at_limit}}}'
    assert _strict(anyio.run(d.handle_frame, ok, None))["result"] is None
    assert len(called) == 1
    past = _nested(MAX_DEPTH + 1)
    for frame, code, where in [
        (f'{{"jsonrpc":"2.0","id":2,"method":"record","params":{past}}}', -32602, "params[0]"),
        (
            f'{{"jsonrpc":"2.0","id":2,"method":"record","params":{{"a":{past}}}}}',
            -32602,
            "params.a",
        ),
        (f'{{"jsonrpc":"2.0","id":2,"method":"record","x":{_nested(900)}}}', -32600, "x[0]"),
    ]:
        reply = _strict(anyio.run(d.handle_frame, frame, None))
        assert reply["id"] == 2
        assert reply["error"]["code"] == code
        assert where in reply["error"]["message"]
        assert f"nested more than {MAX_DEPTH} levels" in reply["error"]["message"]
    notification = f'{{"jsonrpc":"2.0","method":"record","params":{past}}}'
    assert anyio.run(d.handle_frame, notification, None) is None
    assert len(called) == 1


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_a_deeply_nested_meta_cannot_poison_a_session(store_kind: str, tmp_path: Path) -> None:
    """A reminder whose ``_meta`` nests 600 levels used to be queued, then every
    ``session/pending_injections`` of its session failed with an internal error."""

    async def main() -> None:
        store: Store = MemoryStore() if store_kind == "memory" else SQLiteStore(tmp_path / "s.db")
        async with store:
            bridge = Bridge(store, worker_id="w")
            await store.create_session(Session("s1").state())
            d = Dispatcher(bridge.methods)
            conn = Connection(notify=_silent)
            meta = f'{{"a":{_nested(600)}}}'
            remind = (
                '{"jsonrpc":"2.0","id":1,"method":"session/remind","params":{"sessionId":"s1",'
                f'"reminder":{{"body":"x","_meta":{meta}}}}}}}'
            )
            refused = _strict(await d.handle_frame(remind, conn))
            assert refused["error"]["code"] == -32602
            assert refused["error"]["data"]["code"] == "RMD-002"
            assert "params.reminder._meta.a" in refused["error"]["data"]["message"]
            pending = '{"jsonrpc":"2.0","id":2,"method":"session/pending_injections",' + (
                '"params":{"sessionId":"s1"}}'
            )
            assert _strict(await d.handle_frame(pending, conn))["result"]["pendingCount"] == 0

    anyio.run(main)


# -- the fuzz --------------------------------------------------------------------------------


def _string(text: str) -> str:
    return json.dumps(text)


KEYS = [
    "sessionId", "reminder", "body", "ttl_turns", "mode", "tags", "id", "fired_at_turn",
    "_meta", "content", "reminderId", "prompt", "clientCapabilities", "jsonrpc", "method",
]  # fmt: skip
SURROGATES = ["\\ud800", "\\udfff", "\\udc80", "\\ud83d", "\\u0000"]
json_strings = st.one_of(
    st.sampled_from([*KEYS, "s1", "finish_step", "interrupt", "contract", ""]).map(_string),
    st.lists(
        st.one_of(
            st.text(max_size=4).map(lambda t: _string(t)[1:-1]),
            st.sampled_from(SURROGATES),
        ),
        max_size=3,
    ).map(lambda parts: '"' + "".join(parts) + '"'),
)
odd_numbers = st.one_of(
    st.sampled_from(NON_FINITE[:-1]),
    st.sampled_from(NON_FINITE[:-1]),
    st.integers(300, 400).map(lambda n: "1" * n + ".5"),  # past a double's range, or near it
    st.just("9" * 4300),  # the longest integer int() reads from text: it reaches handlers
)
plain_numbers = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0", "-1", "1", "3", "1.5", "2e-3", "1e308", "-0.0"]),
)
numbers = st.one_of(odd_numbers, *[plain_numbers] * 4)
scalars = st.one_of(st.sampled_from(["null", "true", "false"]), numbers, json_strings)
keys = st.one_of(st.sampled_from(KEYS).map(_string), json_strings)
json_texts = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(keys, inner), max_size=3).map(
            lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
        ),
    ),
    max_leaves=6,
)
real_methods = st.sampled_from(
    [
        "initialize",
        "session/new",
        "session/remind",
        "_session/remind",
        "session/inject",
        "session/pending_injections",
        "session/revoke_reminder",
        "session/prompt",
        "session/cancel",
        "session/load",
        "nope",
    ]
).map(_string)
reminder_params = st.fixed_dictionaries(
    {"sessionId": st.sampled_from(['"s1"', '"s1"', '"s1"', '"\\ud800"', "NaN", "null"])},
    optional={
        "body": json_strings,
        "ttl_turns": st.one_of(numbers, st.integers(1, 5).map(str)),
        "fired_at_turn": numbers,
        "tags": json_texts,
        "_meta": json_texts,
        "mode": json_strings,
    },
).map(lambda d: "{" + ",".join(f"{_string(k)}:{v}" for k, v in d.items()) + "}")
params = st.one_of(
    reminder_params,
    reminder_params.map(lambda r: '{"sessionId":"s1","reminder":' + r + "}"),
    st.lists(st.tuples(keys, json_texts), max_size=3).map(
        lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
    ),
    json_texts,
)
ids = st.one_of(
    st.integers(-5, 5).map(str),
    st.integers(-5, 5).map(str),
    json_strings,
    numbers,
    st.sampled_from(["null", "true", "[]", HUGE_INT]),
)


def _object(members: dict[str, str]) -> str:
    return "{" + ",".join(f"{_string(k)}:{v}" for k, v in members.items()) + "}"


# mostly well-formed requests and notifications (so handlers run), some loose ones
well_formed = st.fixed_dictionaries(
    {"jsonrpc": st.just('"2.0"'), "method": real_methods},
    optional={"id": ids, "params": params, "extra": json_texts},
).map(_object)
loose = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(['"2.0"', '"1.0"', "2", "NaN"]),
        "id": ids,
        "method": real_methods | json_strings | numbers,
        "params": params,
        "extra": json_texts,
    },
).map(_object)
requests = st.one_of(well_formed, well_formed, well_formed, loose)
JUNK = [
    "",
    "{",
    '{"jsonrpc":"2.0"',
    "[" * 100_000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    "[1,2,]",
    '"\\ud800"',
    "NaN",
    "1e400",
    HUGE_INT,
    "[" + ",".join(["NaN"] * 50) + "]",
    # deep, but not too deep for the decoder: refused before a handler copies or stores it
    *(
        f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"sessionId":"s1",'
        f'"reminder":{{"body":"x","_meta":{{"a":{_nested(depth)}}}}}}}}}'
        for method in ("session/remind", "session/inject")
        for depth in (MAX_DEPTH - 4, MAX_DEPTH - 3, 100, 600)
    ),
    f'[{{"jsonrpc":"2.0","id":1,"method":"initialize","x":{_nested(900)}}}]',
]
frames = st.one_of(
    requests,
    requests,
    requests,
    st.lists(requests, min_size=1, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
    st.lists(st.one_of(requests, json_texts), max_size=3).map(
        lambda items: "[" + ",".join(items) + "]"
    ),
    json_texts,
    st.sampled_from(JUNK),
    # over the 4300 digits int() reads from text, somewhere in a request
    st.tuples(requests, st.integers(4301, 6000)).map(
        lambda r: (
            f'{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"n":{"9" * r[1]}}},'
            f'"x":{r[0]}}}'
        )
    ),
    st.binary(max_size=32),
)


def _unkeepable(value: Any) -> bool:
    """A non-finite number, or a container nested past ``MAX_DEPTH`` (``value`` is level 1)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            values = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in values)
    return False


def _good_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int)


def _key(value: Any) -> str:
    return json.dumps(value)


def _expected(item: Any) -> tuple[bool, Any, int | None]:
    """For one request candidate: (gets a reply, the reply's id, the error code it must
    have or None when any answer will do)."""
    if not isinstance(item, dict):
        return True, None, -32600
    has_id = "id" in item
    method, params = item.get("method"), item.get("params")
    shape_ok = (
        item.get("jsonrpc") == "2.0"
        and isinstance(method, str)
        and (not has_id or _good_id(item["id"]))
        and ("params" not in item or isinstance(params, dict | list))
    )
    reply_id = item["id"] if has_id and _good_id(item["id"]) else None
    if not shape_ok:
        return True, reply_id, -32600
    if not has_id:
        return False, None, None
    if _unkeepable(params):
        return True, reply_id, -32602
    if any(_unkeepable(v) for k, v in item.items() if k not in ("id", "params")):
        return True, reply_id, -32600
    return True, reply_id, None


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(record)


async def _silent(method: str, params: dict[str, Any]) -> None:
    json.dumps(params, allow_nan=False)  # a notification is JSON too


async def _one_frame(frame: str | bytes) -> tuple[str | None, str | None]:
    bridge = Bridge(MemoryStore(), worker_id="w")
    await bridge.store.create_session(Session("s1").state())
    d = Dispatcher(bridge.methods)
    conn = Connection(notify=_silent)
    reply = await d.handle_frame(frame, conn)
    after = await d.handle_frame('{"jsonrpc":"2.0","id":"after","method":"initialize"}', conn)
    return reply, after


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(frames)
def test_fuzz_every_frame_gets_valid_json_and_the_connection_goes_on(frame: str | bytes) -> None:
    try:
        text = frame.decode("utf-8") if isinstance(frame, bytes) else frame
        message = json.loads(text)
    except (ValueError, RecursionError):
        expected: list[tuple[bool, Any, int | None]] = [(True, None, -32700)]
        batch = False
    else:
        batch = isinstance(message, list) and bool(message)
        expected = [_expected(m) for m in message] if batch else [_expected(message)]
        if message == []:
            expected = [(True, None, -32600)]
    logger = logging.getLogger("agent_reminders")
    caught = _Tracebacks()
    logger.addHandler(caught)
    try:
        reply, after = anyio.run(_one_frame, frame)
    finally:
        logger.removeHandler(caught)
    assert caught.records == [], [r.getMessage() for r in caught.records]
    assert after is not None
    assert _strict(after)["result"]["protocolVersion"] == 1
    wanted = [(rid, code) for replies, rid, code in expected if replies]
    if not wanted:
        assert reply is None
        return
    assert reply is not None
    assert "\n" not in reply
    got = _strict(reply)
    items = got if batch else [got]
    assert isinstance(items, list)
    assert len(items) == len(wanted)
    assert Counter(_key(i["id"]) for i in items) == Counter(_key(rid) for rid, _ in wanted)
    for item, (rid, code) in zip(items, wanted, strict=True):
        assert item["jsonrpc"] == "2.0"
        assert _key(item["id"]) == _key(rid)
        assert ("result" in item) != ("error" in item)
        if code is not None:
            assert item["error"]["code"] == code, (item, frame)
        if "error" in item:
            # only this server's own refusal of a prompt without a model is "internal"
            assert item["error"]["code"] != -32603 or "no model" in item["error"]["message"]


# -- WebSocket: a bad frame and duplicate headers on a real server ---------------------------


websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402


@pytest.mark.anyio
async def test_a_non_finite_id_over_websocket_is_answered_and_the_connection_goes_on() -> None:
    settings_ = BridgeSettings(tokens=(Scope(token=TOKEN, admin=True),))
    bridge = Bridge(MemoryStore(), settings=settings_)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with serving_ws(bridge) as url, connect(url, additional_headers=auth) as ws:
        for literal in NON_FINITE:
            await ws.send(f'{{"jsonrpc":"2.0","id":{literal},"method":"initialize"}}')
            with anyio.fail_after(10):
                reply = _strict(await ws.recv())
            assert reply["id"] is None
            assert reply["error"]["code"] == -32600
        await ws.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":Infinity}}')
        with anyio.fail_after(10):
            reply = _strict(await ws.recv())
        assert reply["error"]["data"]["code"] == "RMD-002"
        await ws.send('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}')
        with anyio.fail_after(10):
            reply = _strict(await ws.recv())
        assert reply["id"] == 2
        assert reply["result"]["protocolVersion"] == 1
