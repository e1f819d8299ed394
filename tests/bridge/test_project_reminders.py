"""Project reminders: one push reaches every session of a store — those there now and those
that start later, whatever coding agent runs them — each exactly once; the reserved session
that keeps them is never a session anyone picks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders import Session
from agent_reminders.bridge import Bridge, BridgeClient
from agent_reminders.bridge.acp import Connection
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.errors import RpcError
from agent_reminders.project_reminders import PROJECT_SESSION, latest_session
from agent_reminders.storage import SQLiteStore

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


async def _notify(method: str, params: dict[str, Any]) -> None:
    pass


async def test_a_project_reminder_reaches_every_session_now_and_later(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "state.db") as store:
        for sid in ("a", "b"):
            await store.create_session(Session(sid).state())
        async with BridgeClient.in_process(Bridge(store)) as client:
            rid, reached = await client.remind_project("CI is red on main.", ttl_turns=3)
            assert sorted(reached) == ["a", "b"]
            for sid in ("a", "b"):
                [row] = await client.pending(sid)
                assert (row["id"], row["body"]) == (rid, "CI is red on main.")
            # the reserved session is nobody's "latest" and no sessionless request's target
            assert await latest_session(store) in ("a", "b")
            # a second push is a second reminder, the first one is not queued twice
            await client.remind_project("Deploys are frozen.")
            assert [r["body"] for r in await client.pending("a")] == [
                "CI is red on main.",
                "Deploys are frozen.",
            ]
            # revoked: no longer standing, and taken back where it waits
            status, where = await client.revoke_project(rid)
            assert (status, sorted(where)) == ("revoked", ["a", "b"])
            assert await client.revoke_project(rid) == ("already_revoked", [])
            assert [r["body"] for r in await client.pending("b")] == ["Deploys are frozen."]
            with pytest.raises(RpcError) as unknown:
                await client.revoke_project("no-such-id")
            assert (unknown.value.data or {}).get("reason") == "unknown_reminder_id"
        registry = await store.load_session(PROJECT_SESSION)
        assert registry is not None
        assert [i.payload["body"] for i in registry.queue.items] == ["Deploys are frozen."]


async def test_only_a_caller_that_sees_every_session_may_push_to_the_project(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "state.db") as store:
        await store.create_session(Session("mine").state())
        bridge = Bridge(store)
        watcher = Connection(
            notify=_notify,
            scope=Scope(token="w" * 20, sessions={"mine"}),
            grant="advisory",  # type: ignore[arg-type]
        )
        params = {"reminder": {"body": "x"}, "project": True}
        with pytest.raises(RpcError) as refused:
            await bridge.methods["session/remind"](params, watcher)
        assert (refused.value.data or {}).get("reason") == "project_needs_admin"
        stdio = Connection(notify=_notify)
        both = {**params, "sessionId": "mine"}
        with pytest.raises(RpcError) as twice:
            await bridge.methods["session/remind"](both, stdio)
        assert "not both" in twice.value.message
        with pytest.raises(RpcError) as odd:
            await bridge.methods["session/remind"]({**params, "project": "yes"}, stdio)
        assert "project must be true or false" in odd.value.message
        with pytest.raises(RpcError) as reserved:
            await bridge.methods["session/remind"](
                {"body": "x", "sessionId": PROJECT_SESSION}, stdio
            )
        assert "reserved" in reserved.value.message
        assert await store.pending("mine") == []


async def test_a_sessionless_request_does_not_count_the_reserved_session(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "state.db") as store:
        await store.create_session(Session("only").state())
        bridge = Bridge(store)
        async with BridgeClient.in_process(bridge) as client:
            await client.remind_project("Standing.")
            # two sessions in the store, one of them reserved: "the only session" still works
            await client.remind("Just for you.")
            assert [r["body"] for r in await client.pending("only")] == [
                "Standing.",
                "Just for you.",
            ]


def _cli(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "GEMINI", "CURSOR"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "agent_reminders", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
        check=False,
    )


def _context(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout or "{}")
    if "additional_context" in out:
        return str(out["additional_context"])
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_remind_project_reaches_every_agent_s_session_each_once(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    base = {"cwd": str(project), "transcript_path": None}
    codex_prompt = {**base, "session_id": "codex-1", "hook_event_name": "UserPromptSubmit"}
    codex_prompt["prompt"] = "hi"
    assert _cli(project, "hook", "codex", stdin=json.dumps(codex_prompt)).returncode == 0
    # a project with a running Codex session: the push reaches it now
    pushed = _cli(project, "remind", "--project", "--json", "CI is red on main.")
    assert pushed.returncode == 0, pushed.stderr
    said = json.loads(pushed.stdout)
    assert said["sessionIds"] == ["codex-1"]
    assert (
        _context(_cli(project, "hook", "codex", stdin=json.dumps(codex_prompt))).count(
            "CI is red on main."
        )
        == 1
    )
    assert "CI is red" not in _context(
        _cli(project, "hook", "codex", stdin=json.dumps(codex_prompt))
    )
    # a Gemini session that starts later gets it at its first prompt, once
    gemini = {**base, "session_id": "gemini-1", "hook_event_name": "BeforeAgent", "prompt": "hi"}
    assert (
        _context(_cli(project, "hook", "gemini-cli", stdin=json.dumps(gemini))).count(
            "CI is red on main."
        )
        == 1
    )
    assert "CI is red" not in _context(
        _cli(project, "hook", "gemini-cli", stdin=json.dumps(gemini))
    )
    # sessions lists the two, with their agents, and not the reserved one
    listed = json.loads(_cli(project, "sessions", "--json").stdout)["sessions"]
    assert sorted((r["sessionId"], r["agent"]) for r in listed) == [
        ("codex-1", "codex"),
        ("gemini-1", "gemini-cli"),
    ]
    # revoked: a Cursor conversation that starts now does not get it
    assert _cli(project, "revoke", "--project", said["reminderId"]).stdout.strip() == "revoked"
    cursor = {
        "conversation_id": "cursor-1",
        "hook_event_name": "sessionStart",
        "workspace_roots": [str(project)],
    }
    assert "CI is red" not in _context(_cli(project, "hook", "cursor", stdin=json.dumps(cursor)))


def test_remind_project_in_a_project_without_a_store_stands_for_the_first_session(
    tmp_path: Path,
) -> None:
    project = tmp_path / "fresh"
    project.mkdir()
    pushed = _cli(project, "remind", "--project", "Read CONTRIBUTING.md first.")
    assert pushed.returncode == 0, pushed.stderr
    assert "queued in 0 session(s)" in pushed.stderr
    event = {"session_id": "c", "cwd": str(project), "hook_event_name": "SessionStart"}
    event["source"] = "startup"
    prompt = {"session_id": "c", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    prompt["prompt"] = "hi"
    _cli(project, "hook", "codex", stdin=json.dumps(event))
    assert "Read CONTRIBUTING.md first." in _context(
        _cli(project, "hook", "codex", stdin=json.dumps(prompt))
    )
    both = _cli(project, "remind", "--project", "--session", "c", "x")
    assert both.returncode == 2
    assert "not both" in both.stderr


def test_latest_skips_the_reserved_session(tmp_path: Path) -> None:
    async def main() -> None:
        async with SQLiteStore(tmp_path / "state.db") as store:
            await store.create_session(Session("real").state())
            async with BridgeClient.in_process(Bridge(store)) as client:
                await client.remind_project("Standing.")
            assert await store.latest_session() in ("real", PROJECT_SESSION)
            assert await latest_session(store) == "real"

    anyio.run(main)
