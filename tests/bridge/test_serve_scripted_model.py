"""``serve --model scripted:PATH`` keeps none of the requests its looping script gets.

The command builds the server's model once and runs it for as long as the server lives; a
``ScriptedModel`` that kept every request grew the process without end (from 49 to 491 MB in
ten minutes of an example server). The command is run in process, with its stdio loop replaced
by one that drives many prompts through the very bridge the command built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_reminders.bridge import Bridge, BridgeClient
from agent_reminders.cli.serve import serve
from agent_reminders.testing import ScriptedModel

PROMPTS = 60
SCRIPT = [
    {"tool_calls": [{"id": "c1", "name": "grep", "arguments": {"q": "todo"}}]},
    {"content": "Checked."},
]


def test_serve_builds_a_scripted_model_that_keeps_no_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(s) for s in SCRIPT) + "\n")
    served: list[Bridge] = []

    async def many_prompts(bridge: Bridge, **_: Any) -> None:
        served.append(bridge)
        async with BridgeClient.in_process(bridge) as client:
            sid = await client.new_session()
            for i in range(PROMPTS):
                await client.remind(f"reminder {i}", session_id=sid)
                assert await client.prompt(sid, f"task {i}") == "end_turn"

    monkeypatch.setattr("agent_reminders.bridge.stdio.serve_stdio", many_prompts)
    serve(store="memory:", model=f"scripted:{script}")
    (bridge,) = served
    model = bridge.model
    assert isinstance(model, ScriptedModel)
    assert len(model.requests) == 0
    assert model.calls == 2 * PROMPTS  # the script really ran, looping
