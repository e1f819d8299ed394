"""``reminder_hooks`` for the Claude Agent SDK: the callbacks called with the SDK's own hook
input shapes (its ``*HookInput`` TypedDicts), with an in-process session and with stores;
then, opt-in, the SDK driving its bundled Claude Code CLI against the recording server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookMatcher,
    PostToolUseFailureHookInput,
    PostToolUseHookInput,
    PreCompactHookInput,
    ResultMessage,
    SubagentStartHookInput,
    UserPromptSubmitHookInput,
    query,
)
from claude_agent_sdk.types import BaseHookInput

from agent_reminders import ConfigError, Session
from agent_reminders.facts import FactStore
from agent_reminders.integrations.claude_agent_sdk import HOOK_EVENTS, reminder_hooks
from agent_reminders.integrations.claude_code import HookInputError
from agent_reminders.storage import MemoryStore, SQLiteStore
from agent_reminders.testing import RecordedRequest, RecordingModelServer

SRC = Path(__file__).resolve().parents[2] / "src"
FAILURE = "Exit code 1\nF.\nFAILED tests/test_math.py::test_add - assert 3 == 4\n1 failed, 1 passed"
REMIND = (sys.executable, "-m", "agent_reminders", "remind")
Callback = Callable[[Any, str | None, Any], Awaitable[Any]]


def callback(hooks: dict[str, list[HookMatcher]], event: str) -> Callback:
    (matcher,) = hooks[event]
    (fn,) = matcher.hooks
    return fn


def base(cwd: Path, session_id: str = "sdk-1") -> BaseHookInput:
    return {"session_id": session_id, "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd)}


def prompt(cwd: Path, text: str = "go", session_id: str = "sdk-1") -> UserPromptSubmitHookInput:
    return {**base(cwd, session_id), "hook_event_name": "UserPromptSubmit", "prompt": text}


def failed_bash(cwd: Path) -> PostToolUseFailureHookInput:
    return {
        **base(cwd),  # type: ignore[typeddict-item]
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q", "description": "Run the tests"},
        "tool_use_id": "toolu_1",
        "error": FAILURE,
        "is_interrupt": False,
    }


def context(output: Any, event: str) -> str:
    assert list(output) == ["hookSpecificOutput"]
    assert output["hookSpecificOutput"]["hookEventName"] == event
    return str(output["hookSpecificOutput"]["additionalContext"])


def test_one_matcher_per_event_of_the_hook_command() -> None:
    hooks = reminder_hooks(session=Session())
    assert list(hooks) == list(HOOK_EVENTS)
    for matchers in hooks.values():
        (matcher,) = matchers
        assert isinstance(matcher, HookMatcher)
        assert matcher.matcher is None  # every tool, every source
    ClaudeAgentOptions(hooks=hooks)  # type: ignore[arg-type]  # what the SDK is given


@pytest.mark.anyio
async def test_an_in_process_session_answers_every_event(tmp_path: Path) -> None:
    session = Session(workspace={"primary": str(tmp_path), "roots": []})
    hooks = reminder_hooks(session=session)
    session.queue.remind({"body": "The release branch is frozen.", "ttl_turns": 3})
    session.queue.remind({"body": "Never edit gen/.", "preserve_on_compact": True})
    session.queue.remind({"body": "Parent-only note.", "propagate": "none"})

    first = context(
        await callback(hooks, "UserPromptSubmit")(prompt(tmp_path), None, {}), "UserPromptSubmit"
    )
    # no SessionStart callback runs under the Python SDK: the first prompt starts the session
    assert f"Primary workspace root: {tmp_path}" in first
    assert '<directive authority="contract" ttl_turns="3">\nThe release branch is frozen.' in first
    assert await callback(hooks, "UserPromptSubmit")(prompt(tmp_path, "again"), None, {}) == {}

    review = await callback(hooks, "PostToolUseFailure")(failed_bash(tmp_path), "toolu_1", {})
    text = context(review, "PostToolUseFailure")
    assert "Grounded review" in text
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in text

    compacting: PreCompactHookInput = {
        **base(tmp_path),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": None,
    }
    summarizer = await callback(hooks, "PreCompact")(compacting, None, {})
    assert list(summarizer) == ["systemMessage"]  # the CLI adds it to the compaction prompt
    assert "- [contract] Never edit gen/." in summarizer["systemMessage"]
    assert "release branch" not in summarizer["systemMessage"]

    child: SubagentStartHookInput = {
        **base(tmp_path),
        "hook_event_name": "SubagentStart",
        "agent_id": "a1",
        "agent_type": "Explore",
    }
    handed = context(await callback(hooks, "SubagentStart")(child, None, {}), "SubagentStart")
    assert "Never edit gen/." in handed
    assert "Parent-only note." not in handed

    # after a compaction the CLI does run the SessionStart callback: restate what survives
    compacted = {**base(tmp_path), "transcript_path": "", "hook_event_name": "SessionStart"}
    compacted["source"] = "compact"
    after = context(await callback(hooks, "SessionStart")(compacted, None, {}), "SessionStart")
    assert "Never edit gen/." in after
    assert f"Primary workspace root: {tmp_path}" in after
    assert "release branch" not in after


@pytest.mark.anyio
async def test_system_reminder_style_and_nothing_for_a_passing_run(tmp_path: Path) -> None:
    async with MemoryStore() as store:
        hooks = reminder_hooks(store=store, style="system_reminder")
        passed: PostToolUseHookInput = {
            **base(tmp_path),  # type: ignore[typeddict-item]
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {
                "stdout": "..\n2 passed in 0.01s",
                "stderr": "",
                "interrupted": False,
            },
            "tool_use_id": "toolu_2",
        }
        started = await callback(hooks, "PostToolUse")(passed, "toolu_2", {})
        text = context(started, "PostToolUse")  # the session start: the workspace, no review
        assert text.startswith("<system-reminder>\n")
        assert "Grounded review" not in text
        assert await callback(hooks, "PostToolUse")(passed, "toolu_2", {}) == {}
        review = await callback(hooks, "PostToolUseFailure")(failed_bash(tmp_path), None, {})
        assert context(review, "PostToolUseFailure").startswith(
            "<system-reminder>\nGrounded review"
        )


@pytest.mark.anyio
async def test_a_store_keeps_sessions_apart_and_takes_pushes_from_other_processes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "state.db"
    hooks = reminder_hooks(store=f"sqlite:{db}")
    on_prompt = callback(hooks, "UserPromptSubmit")
    await on_prompt(prompt(tmp_path, session_id="a"), None, {})
    await on_prompt(prompt(tmp_path, session_id="b"), None, {})  # b is now the latest
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for session in ("latest", "a"):
        done = subprocess.run(
            [*REMIND, f"For session {session}.", "--store", f"sqlite:{db}", "--session", session],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    got_a = context(await on_prompt(prompt(tmp_path, session_id="a"), None, {}), "UserPromptSubmit")
    got_b = context(await on_prompt(prompt(tmp_path, session_id="b"), None, {}), "UserPromptSubmit")
    assert "For session a." in got_a
    assert "For session latest." not in got_a
    assert "For session latest." in got_b
    assert "For session a." not in got_b
    async with SQLiteStore(db) as store:
        assert {s.session_id for s in await store.list_sessions()} == {"a", "b"}


@pytest.mark.anyio
async def test_the_default_store_is_the_hook_commands_under_the_sessions_cwd(
    tmp_path: Path,
) -> None:
    facts = FactStore(tmp_path / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": "We use uv for packaging.", "confidence": 0.9})
    facts.close()
    hooks = reminder_hooks()
    text = context(
        await callback(hooks, "UserPromptSubmit")(prompt(tmp_path), None, {}), "UserPromptSubmit"
    )
    assert "We use uv for packaging." in text
    async with SQLiteStore(tmp_path / ".agent-reminders" / "state.db") as store:
        assert await store.latest_session() == "sdk-1"


@pytest.mark.anyio
async def test_bad_input_raises_and_both_store_and_session_are_refused(tmp_path: Path) -> None:
    async with MemoryStore() as store:
        hooks = reminder_hooks(store=store)
        with pytest.raises(HookInputError, match="'prompt'"):
            await callback(hooks, "UserPromptSubmit")(
                {**base(tmp_path), "hook_event_name": "UserPromptSubmit"}, None, {}
            )
        assert await store.list_sessions() == []
        with pytest.raises(ConfigError, match="not both"):
            reminder_hooks(store=store, session=Session())


# -- the SDK driving the real CLI (opt-in) -------------------------------------------------


def _text_of(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def _answer(request: RecordedRequest) -> dict[str, Any]:
    messages = request.json["messages"]
    last = messages[-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return {"content": "test_add fails."}
    if "run the tests" in json.dumps(messages[-3:]):
        call = {"command": "pytest -q", "description": "Run the tests"}
        return {"tool_calls": [{"id": "toolu_01", "name": "Bash", "arguments": call}]}
    return {"content": "Noted."}


@pytest.mark.skipif(
    os.environ.get("AGENT_REMINDERS_SLOW") != "1",
    reason="starts the SDK's bundled Claude Code CLI: set AGENT_REMINDERS_SLOW=1",
)
def test_the_sdk_and_its_cli_carry_the_reminders_to_the_model(tmp_path: Path) -> None:
    project, home, bindir = tmp_path / "project", tmp_path / "home", tmp_path / "bin"
    for folder in (project, home, bindir):
        folder.mkdir()
    fake = bindir / "pytest"
    fake.write_text(
        "#!/bin/sh\necho 'FAILED tests/test_math.py::test_add - assert 3 == 4'\nexit 1\n"
    )
    fake.chmod(0o755)
    session = Session(workspace={"primary": str(project), "roots": []})
    session.queue.remind({"body": "Never edit gen/.", "preserve_on_compact": True})
    hooks = reminder_hooks(session=session)

    async def run(server: RecordingModelServer) -> list[str]:
        env = {
            "HOME": str(home),
            "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        ids: list[str] = []
        for text in ("run the tests", "/compact", "carry on"):
            options = ClaudeAgentOptions(
                hooks=hooks,  # type: ignore[arg-type]
                cwd=str(project),
                env=env,
                allowed_tools=["Bash"],
                setting_sources=[],
                resume=ids[-1] if ids else None,
            )
            async for message in query(prompt=text, options=options):
                if isinstance(message, ResultMessage):
                    assert not message.is_error, message
                    ids.append(message.session_id)
        return ids

    with RecordingModelServer(_answer) as server:
        ids = anyio.run(run, server)
    assert server.errors == []
    assert len(set(ids)) == 1
    bodies = server.bodies()
    first, second = bodies[0], bodies[1]
    assert "UserPromptSubmit hook additional context: <context-directives" in _text_of(first)
    assert f"Primary workspace root: {project}" in _text_of(first)
    assert _text_of(first).count("Never edit gen/.") == 1
    assert _text_of(second).count("PostToolUseFailure:Bash hook additional context:") == 1
    assert "Grounded review" in _text_of(second)
    summarizer = next(b for b in bodies if "Additional Instructions:" in _text_of(b))
    assert "- [contract] Never edit gen/." in _text_of(summarizer)
    last = _text_of(bodies[-1])
    assert "SessionStart hook additional context: <context-directives" in last
    assert "The conversation was compacted:" in last
