"""``agent-reminders hook install|uninstall codex|gemini-cli|cursor``: each agent's own settings
file and format, project or user scope, a backup first, idempotent, everything else kept;
uninstall removes only the library's entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from _agent_reminders_hook import HOOK_AGENTS
from agent_reminders.integrations import codex, cursor, gemini_cli
from agent_reminders.integrations.agents import AGENTS, settings_path

SRC = Path(__file__).resolve().parents[2] / "src"

CODEX_CONFIG = """\
# my Codex settings
model = "gpt-5.1-codex"  # the one I like

[features]
hooks = true

[[hooks.PostToolUse]]
matcher = "^apply_patch$"

[[hooks.PostToolUse.hooks]]
type = "command"
command = "prettier --write ."
"""
GEMINI_SETTINGS = {
    "ui": {"theme": "GitHub"},
    "hooks": {
        "AfterTool": [
            {
                "matcher": "write_file",
                "hooks": [{"type": "command", "command": "prettier --write ."}],
            }
        ]
    },
}
CURSOR_HOOKS = {
    "version": 1,
    "hooks": {"afterFileEdit": [{"command": "./hooks/format.sh"}]},
}


def cli(tmp_path: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "CODEX", "GEMINI", "CURSOR"))
    }
    env.update(HOME=str(home), PYTHONPATH=str(SRC), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "agent_reminders", "hook", *args],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
        check=False,
    )


def _codex_ours(text: str) -> dict[str, int]:
    hooks = tomllib.loads(text).get("hooks", {})
    return {
        event: sum("hook codex" in h["command"] for g in groups for h in g["hooks"])
        for event, groups in hooks.items()
    }


def test_the_command_line_knows_every_agent() -> None:
    assert tuple(AGENTS) == HOOK_AGENTS


@pytest.mark.parametrize(
    ("scope", "relative", "env"),
    [
        ("project", "project/.codex/config.toml", {}),
        ("user", "home/.codex/config.toml", {}),
        ("user", "codex-home/config.toml", {"CODEX_HOME": "codex-home"}),
    ],
)
def test_codex_install_edits_its_toml_and_keeps_every_comment(
    tmp_path: Path, scope: str, relative: str, env: dict[str, str]
) -> None:
    given = {k: str(tmp_path / v) for k, v in env.items()}
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CODEX_CONFIG)
    done = cli(tmp_path, "install", "codex", "--scope", scope, **given)
    assert done.returncode == 0, done.stderr
    assert str(path) in done.stdout
    text = path.read_text()
    assert text.startswith(CODEX_CONFIG)  # the file's own lines, comments and all, untouched
    assert _codex_ours(text) == dict.fromkeys(codex.HOOK_EVENTS, 1) | {"PostToolUse": 1}
    config = tomllib.loads(text)
    assert config["model"] == "gpt-5.1-codex"
    assert config["hooks"]["PostToolUse"][0]["hooks"][0]["command"] == "prettier --write ."
    entry = config["hooks"]["SessionStart"][0]
    assert "matcher" not in entry  # every source, "compact" included
    assert entry["hooks"][0]["type"] == "command"
    assert entry["hooks"][0]["timeout"] == 30
    assert Path(str(path) + ".agent-reminders.bak").read_text() == CODEX_CONFIG
    # again: nothing to add, nothing written
    again = cli(tmp_path, "install", "codex", "--scope", scope, **given)
    assert "already installed" in again.stdout
    assert path.read_text() == text
    # uninstall: back to the file as it was
    gone = cli(tmp_path, "uninstall", "codex", "--scope", scope, **given)
    assert gone.returncode == 0, gone.stderr
    assert tomllib.loads(path.read_text()) == tomllib.loads(CODEX_CONFIG)
    assert "# the one I like" in path.read_text()


def test_gemini_install_adds_nested_entries_and_uninstall_only_its_own(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(GEMINI_SETTINGS))
    done = cli(tmp_path, "install", "gemini-cli")
    assert done.returncode == 0, done.stderr
    settings = json.loads(path.read_text())
    assert settings["ui"] == {"theme": "GitHub"}
    for event in gemini_cli.HOOK_EVENTS:
        [group] = [g for g in settings["hooks"][event] if "hook gemini-cli" in str(g)]
        assert "matcher" not in group  # matches every source and every tool
        assert group["hooks"][0]["type"] == "command"
        assert group["hooks"][0]["timeout"] == 30000  # Gemini's timeouts are milliseconds
    assert settings["hooks"]["AfterTool"][0] == GEMINI_SETTINGS["hooks"]["AfterTool"][0]  # type: ignore[index]
    assert cli(tmp_path, "uninstall", "gemini-cli").returncode == 0
    assert json.loads(path.read_text()) == GEMINI_SETTINGS


def test_gemini_user_scope_follows_its_home_variable(tmp_path: Path) -> None:
    done = cli(
        tmp_path, "install", "gemini-cli", "--scope", "user", GEMINI_CLI_HOME=str(tmp_path / "g")
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "g" / ".gemini" / "settings.json").exists()


def test_cursor_install_writes_flat_entries_and_its_version(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(CURSOR_HOOKS))
    done = cli(tmp_path, "install", "cursor", "--scope", "user")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(path.read_text())
    assert hooks["version"] == 1
    for event in cursor.HOOK_EVENTS:
        [entry] = [e for e in hooks["hooks"][event] if "hook cursor" in e["command"]]
        assert "hooks" not in entry  # flat: Cursor has no matcher groups
        assert "failClosed" not in entry  # a failing hook must never stop the agent
    assert "beforeSubmitPrompt" not in hooks["hooks"]  # it takes no context
    assert cli(tmp_path, "uninstall", "cursor", "--scope", "user").returncode == 0
    assert json.loads(path.read_text()) == CURSOR_HOOKS


def test_a_new_cursor_file_starts_with_its_version(tmp_path: Path) -> None:
    assert cli(tmp_path, "install", "cursor").returncode == 0
    hooks = json.loads((tmp_path / "project" / ".cursor" / "hooks.json").read_text())
    assert next(iter(hooks)) == "version"


@pytest.mark.parametrize(
    ("agent", "text"),
    [("codex", "model = [unclosed\n"), ("gemini-cli", "{not json"), ("cursor", "[1, 2]")],
)
def test_a_settings_file_that_cannot_be_read_is_left_as_it_is(
    tmp_path: Path, agent: str, text: str
) -> None:
    path = settings_path(agent, "project", project=tmp_path / "project", env={"HOME": "~"})
    path.parent.mkdir(parents=True)
    path.write_text(text)
    done = cli(tmp_path, "install", agent)
    assert done.returncode != 0
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1
    assert "left unchanged" in done.stderr
    assert path.read_text() == text
    assert not Path(str(path) + ".agent-reminders.bak").exists()


def test_an_unknown_scope_is_refused(tmp_path: Path) -> None:
    done = cli(tmp_path, "install", "codex", "--scope", "local")
    assert done.returncode != 0
    assert "codex settings have the scopes project, user" in done.stderr


def test_settings_paths(tmp_path: Path) -> None:
    env: dict[str, Any] = {"HOME": "/h"}
    project = Path("/p")
    assert settings_path("codex", "user", project=project, env=env) == Path("/h/.codex/config.toml")
    assert settings_path("cursor", "project", project=project, env=env) == Path(
        "/p/.cursor/hooks.json"
    )
    assert settings_path("claude-code", "local", project=project, env=env) == Path(
        "/p/.claude/settings.local.json"
    )


def test_settings_in_process(tmp_path: Path) -> None:
    """The settings editing itself, in this process: every agent's format, a file whose
    hooks are not a table of lists, and the names the agents go by."""
    from agent_reminders import ConfigError
    from agent_reminders.integrations import _agent_settings
    from agent_reminders.integrations.agents import agent_module

    with pytest.raises(ConfigError, match="unknown agent 'nope'"):
        agent_module("nope")
    with pytest.raises(ConfigError, match="unknown agent"):
        settings_path("nope", "project", project=tmp_path)
    env = {"HOME": str(tmp_path / "h"), "GEMINI_CLI_HOME": str(tmp_path / "g")}
    gemini_user = settings_path("gemini-cli", "user", project=tmp_path, env=env)
    assert gemini_user == tmp_path / "g" / ".gemini" / "settings.json"
    for name in AGENTS:
        spec = agent_module(name).SETTINGS
        path = settings_path(name, "project", project=tmp_path / name, env=env)
        done = _agent_settings.install(path, spec, command=f"run hook {name}")
        assert done.events == spec.events
        assert done.backup is None
        again = _agent_settings.install(path, spec, command=f"run hook {name}")
        assert again.events == ()
        removed = _agent_settings.uninstall(path, spec)
        assert removed.events == spec.events
        assert removed.backup is not None
        assert _agent_settings.uninstall(path, spec).events == ()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hooks": {"PostToolUse": {"not": "a list"}}}))
    with pytest.raises(ConfigError, match="'hooks' must map event names to lists"):
        _agent_settings.install(bad, gemini_cli.SETTINGS)
    not_object = tmp_path / "list.json"
    not_object.write_text("[]")
    with pytest.raises(ConfigError, match="not a readable JSON settings file"):
        _agent_settings.uninstall(not_object, cursor.SETTINGS)
