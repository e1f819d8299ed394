"""``agent-reminders hook install|uninstall claude-code``: merge into Claude Code's settings,
keep everything else, back up first, idempotent; uninstall removes only its own entries."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_reminders.integrations.claude_code import HOOK_EVENTS, hook_command

SRC = Path(__file__).resolve().parents[2] / "src"
THEIRS = {"type": "command", "command": "prettier --write ."}


def cli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env.update(CLAUDE_PROJECT_DIR=str(project), HOME=str(home), PYTHONPATH=str(SRC))
    return subprocess.run(
        [sys.executable, "-m", "agent_reminders", "hook", *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
        check=False,
    )


def ours(settings: dict[str, Any]) -> dict[str, int]:
    return {
        event: sum("hook claude-code" in h["command"] for m in matchers for h in m.get("hooks", []))
        for event, matchers in settings.get("hooks", {}).items()
    }


@pytest.mark.parametrize(
    ("scope", "relative"),
    [
        ("project", "project/.claude/settings.json"),
        ("local", "project/.claude/settings.local.json"),
        ("user", "home/.claude/settings.json"),
    ],
)
def test_install_merges_backs_up_and_is_idempotent(
    tmp_path: Path, scope: str, relative: str
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    existing = {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [THEIRS]}]},
    }
    path.write_text(json.dumps(existing))
    done = cli(project, home, "install", "claude-code", "--scope", scope)
    assert done.returncode == 0, done.stderr
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus"
    assert settings["permissions"] == existing["permissions"]
    assert {"matcher": "Edit", "hooks": [THEIRS]} in settings["hooks"]["PostToolUse"]
    assert ours(settings) == dict.fromkeys(HOOK_EVENTS, 1)
    backup = path.with_name(path.name + ".agent-reminders.bak")
    assert json.loads(backup.read_text()) == existing

    again = cli(project, home, "install", "claude-code", "--scope", scope)
    assert again.returncode == 0, again.stderr
    assert "already installed" in again.stdout
    assert json.loads(path.read_text()) == settings

    removed = cli(project, home, "uninstall", "claude-code", "--scope", scope)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text()) == existing
    nothing = cli(project, home, "uninstall", "claude-code", "--scope", scope)
    assert "nothing to remove" in nothing.stdout


def test_install_into_a_new_file_and_the_command_runs(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    done = cli(project, home, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    run = subprocess.run(
        command,
        shell=True,
        input=json.dumps({"session_id": "s", "hook_event_name": "Stop"}),
        capture_output=True,
        text=True,
        cwd=project,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project), "PYTHONPATH": str(SRC)},
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr


def test_a_broken_settings_file_is_one_error_and_left_alone(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    path = project / ".claude" / "settings.json"
    path.write_text("{not json")
    done = cli(project, home, "install", "claude-code")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert str(path) in done.stderr
    assert path.read_text() == "{not json"


def test_an_unknown_scope_is_refused(tmp_path: Path) -> None:
    done = cli(tmp_path, tmp_path, "install", "claude-code", "--scope", "everywhere")
    assert done.returncode != 0
    assert "scope" in done.stderr


def test_install_into_the_settings_file_given_to_claude(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    path = tmp_path / "ci-settings.json"  # for `claude -p ... --settings ci-settings.json`
    existing = {"permissions": {"allow": ["Bash(pytest:*)"]}}
    path.write_text(json.dumps(existing))
    done = cli(project, home, "install", "claude-code", "--settings", str(path))
    assert done.returncode == 0, done.stderr
    settings = json.loads(path.read_text())
    assert settings["permissions"] == existing["permissions"]
    assert ours(settings) == dict.fromkeys(HOOK_EVENTS, 1)
    assert not (project / ".claude").exists()
    removed = cli(project, home, "uninstall", "claude-code", "--settings", str(path))
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text()) == existing


def test_the_command_is_this_installations_own() -> None:
    """The script beside the running interpreter (a virtual environment's), else ``python -m``
    with that interpreter: not whatever ``agent-reminders`` comes first on ``PATH``."""
    command = hook_command()
    script = Path(sys.executable).with_name("agent-reminders")
    if script.is_file() and os.access(script, os.X_OK):
        assert shlex.split(command) == [str(script), "hook", "claude-code"]
    else:
        assert shlex.split(command) == [
            sys.executable,
            "-m",
            "agent_reminders",
            "hook",
            "claude-code",
        ]
