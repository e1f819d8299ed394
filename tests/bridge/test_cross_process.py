"""A reminder another process puts straight into the SQLite store reaches a running prompt
at its next seam, exactly once (docs/storage.md, "The queue in a store")."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from crashkit import ServeProcess

import agent_reminders
from agent_reminders import ModelRequest, ModelResponse, Session
from agent_reminders.bridge import Bridge, Connection, Dispatcher
from agent_reminders.bridge.live import LivePrompt
from agent_reminders.queue import InjectionQueue
from agent_reminders.storage import SQLiteStore
from agent_reminders.testing import FunctionModel, ScriptedModel

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
BODY = "the nightly build failed on main"
RID = "queued-by-another-process"

# The second process: opens the same file with the public store and queues one reminder.
ENQUEUE = """
import sys, anyio
from agent_reminders.queue import InjectionQueue
from agent_reminders.storage import SQLiteStore

async def main(path, session_id, reminder_id, body):
    scratch = InjectionQueue()  # validates and builds the item, as the bridge does
    scratch.remind({"id": reminder_id, "body": body, "tags": ["ci"]})
    (item,) = scratch.state().items
    async with SQLiteStore(path) as store:
        await store.enqueue(session_id, item)

anyio.run(main, *sys.argv[1:])
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


async def enqueue_elsewhere(path: Path, session_id: str, reminder_id: str, body: str) -> None:
    """Queue a reminder from a separate Python process (the public ``SQLiteStore``)."""
    await anyio.run_process(
        [sys.executable, "-c", ENQUEUE, str(path), session_id, reminder_id, body],
        env=_env(),
        check=True,
    )


def _carrying(request: ModelRequest, text: str) -> list[Any]:
    return [m for m in request.messages if text in json.dumps(dict(m))]


class CountingStore(SQLiteStore):
    """Counts ``load_session`` calls (the costly read ``pick_up`` makes only when needed)."""

    loads = 0

    async def load_session(self, session_id: str) -> Any:
        self.loads += 1
        return await super().load_session(session_id)


@pytest.mark.anyio
async def test_pick_up_reads_the_session_only_for_ids_nobody_announced(tmp_path: Path) -> None:
    async with CountingStore(tmp_path / "state.db") as store:
        await store.create_session(Session("s").state())
        live = LivePrompt()
        assert await live.pick_up(store) == 0  # not attached yet: nothing to offer to
        live.attach(Session.from_state(await store.load_session("s")))
        scratch = InjectionQueue()
        ours, theirs = scratch.remind({"body": "ours"}), scratch.remind({"body": "theirs"})
        mine, other = scratch.state().items
        store.loads = 0
        assert await live.pick_up(store) == 0  # nothing pending: one cheap read
        # this server is storing `ours`: the store shows it before the offer, no lookup
        live.expect(ours)
        await store.enqueue("s", mine)
        assert await live.pick_up(store) == 0
        assert store.loads == 0
        live.forget(ours)
        live.offer(mine)
        # `theirs` comes from elsewhere: looked up once, queued once
        await store.enqueue("s", other)
        assert await live.pick_up(store) == 1
        assert await live.pick_up(store) == 0
        assert store.loads == 1
        assert live.queue is not None
        assert [row["id"] for row in live.queue.pending()] == [ours, theirs]


STEPS = [
    {"tool_calls": [{"id": f"c{i}", "name": "ls", "arguments": {}}], "delay_seconds": 0.05}
    for i in range(1, 4)
] + [{"content": "Done.", "delay_seconds": 0.05}]


@pytest.mark.anyio
async def test_a_reminder_queued_by_another_process_reaches_the_next_request(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    script = ScriptedModel(STEPS)

    async def answer(request: ModelRequest) -> ModelResponse:
        if len(model.requests) == 2:
            # while the second request is in flight, another process queues a reminder
            await enqueue_elsewhere(path, sid, RID, BODY)
        return await script(request)

    model = FunctionModel(answer)
    sent: list[tuple[str, dict[str, Any]]] = []

    async def notify(method: str, params: dict[str, Any]) -> None:
        sent.append((method, params))

    async with SQLiteStore(path) as store:
        bridge = Bridge(store, model=model)
        dispatcher = Dispatcher(bridge.methods)
        connection = Connection(notify=notify)

        async def call(method: str, params: dict[str, Any]) -> Any:
            frame = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            reply = json.loads(await dispatcher.handle_frame(frame, connection) or "null")
            assert "result" in reply, reply
            return reply["result"]

        sid = (await call("session/new", {"cwd": "/", "mcpServers": []}))["sessionId"]
        go = [{"type": "text", "text": "go"}]
        done = await call("session/prompt", {"sessionId": sid, "prompt": go})
        assert done == {"stopReason": "end_turn"}

        requests = model.requests
        assert len(requests) == 4
        assert _carrying(requests[0], BODY) == []
        assert _carrying(requests[1], BODY) == []
        # the next request after the enqueue carries it, in one envelope message, kept after
        (envelope,) = _carrying(requests[2], BODY)
        assert envelope["role"] == "user"
        assert envelope["content"].startswith("<context-directives")
        assert len(_carrying(requests[3], BODY)) == 1
        emitted = [p["reminder"]["reminderId"] for m, p in sent if m == "_session/reminder_emitted"]
        assert emitted == [RID]
        # the store knows it was delivered: not pending, not revocable, not queued again
        assert await store.pending(sid) == []
        state = await store.load_session(sid)
        assert state is not None
        assert RID in state.queue.delivered_ids
        stored = [m for m in state.transcript.messages if RID in m.get("directive_ids", ())]
        assert len(stored) == 1
        error = json.loads(
            await dispatcher.handle_frame(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "session/revoke_reminder",
                        "params": {"sessionId": sid, "reminderId": RID},
                    }
                ),
                connection,
            )
            or "null"
        )
        assert error["error"]["data"]["reason"] == "already_delivered"


def test_two_real_processes_a_running_serve_and_a_script(tmp_path: Path) -> None:
    """``serve`` runs a prompt (a looping script of slow tool calls, ended by a cancel); a
    separate script queues a reminder into the same file; the prompt announces it once and
    every later request carries it in one envelope message."""
    path = tmp_path / "state.db"
    script = tmp_path / "script.jsonl"
    step = {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}], "delay_seconds": 0.1}
    script.write_text(json.dumps(step) + "\n")
    log = tmp_path / "requests.jsonl"
    server = ServeProcess(
        "--store",
        f"sqlite:{path}",
        "--model",
        f"scripted:{script}",
        "--max-iterations",
        "200",
        "--request-log",
        str(log),
        cwd=tmp_path,
    )
    try:
        sid = server.call("session/new", {"cwd": "/", "mcpServers": []})["sessionId"]
        prompt = server.send(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        seen: list[dict[str, Any]] = []

        def until(found: Any) -> dict[str, Any]:
            while True:
                message = server.messages.get(timeout=30)
                assert message is not None, server.stderr
                assert message.get("id") != prompt, f"the prompt ended first: {message}"
                seen.append(message)
                if found(message):
                    return message

        until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call")
        anyio.run(enqueue_elsewhere, path, sid, RID, BODY)
        until(lambda m: m.get("method") == "_session/reminder_emitted")
        server.notify("session/cancel", {"sessionId": sid})
        assert server.reply(prompt)["result"] == {"stopReason": "cancelled"}
        seen += server.notifications
    finally:
        server.close()
    emitted = [
        m["params"]["reminder"]["reminderId"]
        for m in seen
        if m.get("method") == "_session/reminder_emitted"
    ]
    assert emitted == [RID]
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    carrying = [sum(BODY in json.dumps(m) for m in r["messages"]) for r in requests]
    first = carrying.index(1)  # requests before the enqueue lack it; from then on, once each
    assert first > 0
    assert set(carrying[:first]) == {0}
    assert set(carrying[first:]) == {1}
