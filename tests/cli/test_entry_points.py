"""The command's entry points run in process (so coverage sees them): ``_agent_reminders_hook``
(the console script, with its light path for coding agents' hook runs), ``python -m
agent_reminders`` and ``python -m agent_reminders.cli``, and ``serve``'s checks before it
reads a frame."""

from __future__ import annotations

import io
import runpy
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import _agent_reminders_hook as entry
from agent_reminders import __main__ as module_entry
from agent_reminders import __version__
from agent_reminders.cli import app


def _run(monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["agent-reminders", *argv])
    with pytest.raises(SystemExit) as exited:
        entry.main()
    code = exited.value.code
    return code if isinstance(code, int) else 0


def test_the_full_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(monkeypatch, "version") == 0
    assert capsys.readouterr().out.strip() == __version__


def test_a_hook_run_takes_the_light_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"session_id": "s", "hook_event_name": "Stop"}'))
    monkeypatch.setitem(sys.modules, "typer", None)  # the hook path must not need typer
    assert _run(monkeypatch, "hook", "claude-code", "--store", "memory:") == 0
    assert capsys.readouterr().out == ""


def test_a_bad_hook_option_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(monkeypatch, "hook", "claude-code", "--style", "loud") == 1


def test_python_dash_m_takes_the_same_paths(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["agent_reminders", "hook", "codex", "--style", "loud"])
    with pytest.raises(SystemExit) as exited:
        module_entry.main()
    assert exited.value.code == 1
    assert "--style must be one of" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["agent_reminders", "hook", "codex", "--help"])
    with pytest.raises(SystemExit) as exited:
        module_entry.main()
    assert exited.value.code == 0
    assert "usage: agent-reminders hook codex" in capsys.readouterr().out


def test_python_dash_m_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["agent_reminders.cli", "version"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("agent_reminders.cli", run_name="__main__", alter_sys=False)
    assert exited.value.code in (0, None)
    assert capsys.readouterr().out.strip() == __version__


def test_serve_checks_its_arguments_before_reading_a_frame(tmp_path: Path) -> None:
    runner = CliRunner()
    bad_port = runner.invoke(app, ["serve", "--ws", "127.0.0.1:http"])
    assert bad_port.exit_code == 1
    assert "--ws takes [HOST:]PORT" in bad_port.output
    no_tokens = runner.invoke(app, ["serve", "--ws", "0"])
    assert no_tokens.exit_code == 1
    assert "[[tokens]]" in no_tokens.output
    garbage = tmp_path / "state.db"
    garbage.write_bytes(b"not a database " * 64)
    before = garbage.read_bytes()
    broken = runner.invoke(app, ["serve", "--store", f"sqlite:{garbage}"])
    assert broken.exit_code == 1
    assert str(garbage) in broken.output
    assert garbage.read_bytes() == before
