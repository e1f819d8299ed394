"""What a coding agent's hook loads: it runs as a fresh process before every prompt and after
every tool call, so its imports are most of its cost. The session, the loop's steps and the
blocking SQLite store (with its opener) must load no event loop, no CLI toolkit, no SDK and no
network client — each of those is imported only by the function that needs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HOOK_PATH = [
    "agent_reminders.session",
    "agent_reminders.loop.steps",
    "agent_reminders.storage.sqlite.blocking",
    "agent_reminders.storage.factory",  # open_sqlite, folder_options, sqlite_path
    # each agent's hook, and what a run of it in its own process opens the store with
    "agent_reminders.integrations.claude_code",
    "agent_reminders.integrations.codex",
    "agent_reminders.integrations.gemini_cli",
    "agent_reminders.integrations.cursor",
    "agent_reminders.integrations._hook_store",
]

NOT_ON_THE_HOOK_PATH = [
    "asyncio",
    "anyio",
    "typer",
    "rich",
    "click",
    "openai",
    "anthropic",
    "httpx",
    "redis",
    "websockets",
    "pydantic",
    # the async side of the stores
    "agent_reminders.storage.thread",
    "agent_reminders.storage._wake",
    "agent_reminders.storage.sqlite.store",
    "agent_reminders.storage.memory",
    "agent_reminders.storage.redis",
    "agent_reminders.loop.run",
]


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    """The modules a fresh interpreter holds after importing the hook path."""
    imports = ", ".join(HOOK_PATH)
    script = f"import {imports}; import json, sys; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def test_the_probe_imported_the_hook_path(loaded: set[str]) -> None:
    assert set(HOOK_PATH) <= loaded


@pytest.mark.parametrize("module", NOT_ON_THE_HOOK_PATH)
def test_the_hook_path_does_not_load(loaded: set[str], module: str) -> None:
    assert not {m for m in loaded if m == module or m.startswith(f"{module}.")}
