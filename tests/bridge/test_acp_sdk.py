"""Acceptance: the ``agent-client-protocol`` SDK's client drives ``serve`` over stdio.

A client nobody here wrote parses every reply and update with its own schema: initialize →
session/new → session/remind (the extension method) → session/prompt with the update stream.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import agent_reminders

acp = pytest.importorskip("acp")

pytestmark = pytest.mark.anyio
SRC = str(Path(agent_reminders.__file__).resolve().parents[1])


class RecordingClient:
    """The host side: records updates and extension notifications."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.ext: list[tuple[str, dict[str, Any]]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext.append((method, params))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        return None


async def test_the_acp_sdk_client_runs_serve(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    lines = [
        {"content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}]},
        {"content": "Looked around."},
    ]
    script.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    env = {**os.environ, "PYTHONPATH": SRC}
    client = RecordingClient()
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        "-c",
        "from agent_reminders.cli import main; main()",
        "serve",
        "--store",
        "sqlite:state.db",
        "--model",
        f"scripted:{script}",
        env=env,
        cwd=tmp_path,
    ) as (conn, _process):
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities.load_session is True
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        remind = await conn.ext_method(
            "session/remind", {"sessionId": session.session_id, "body": "CI is red"}
        )
        assert uuid.UUID(remind["reminderId"]).version == 7
        pending = await conn.ext_method(
            "session/pending_injections", {"sessionId": session.session_id}
        )
        assert pending["pendingCount"] == 1
        result = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("look around")]
        )
        assert result.stop_reason == "end_turn"
    kinds = [u.session_update for u in client.updates]
    assert kinds == ["tool_call", "tool_call_update", "agent_message_chunk"]
    assert client.updates[-1].content.text == "Looked around."
    assert [m for m, _ in client.ext] == ["session/reminder_emitted"]
    assert client.ext[0][1]["reminder"]["body"] == "CI is red"
