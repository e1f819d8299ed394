"""Issue 8, the command line: terminal-safe fact output, empty results, directories, no
arguments, --version, --debug anywhere.

The rules: one clear line per failure, plain text when piped, no traceback unless --debug.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import agent_reminders.cli.common as cli_common
import agent_reminders.cli.facts as cli_facts
from agent_reminders import FactError, __version__
from agent_reminders.cli import app
from agent_reminders.facts import FactStore

runner = CliRunner()
HOSTILE = "Use \x1b]0;pwned\x07PostgreSQL\x1b[2J with \x9b31m care\x00 [bold red]now[/]"


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": "250"})


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_common, "is_terminal", lambda: True)
    monkeypatch.setattr(cli_facts, "is_terminal", lambda: True)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "facts.db"
    with FactStore(path) as store:
        store.store_fact(
            {
                "kind": "decision",
                "claim": HOSTILE,
                "confidence": 0.9,
                "evidence": [{"kind": "adr\x1b[31m", "ref": "ADR-7\x07"}],
            }
        )
    return path


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize("command", [["list"], ["search", "PostgreSQL"]])
def test_control_characters_are_stripped_on_a_terminal(db: Path, command: list[str]) -> None:
    result = invoke("facts", *command, "--db", str(db))
    assert result.exit_code == 0, result.output
    out = result.stdout
    for bad in ("\x1b", "\x07", "\x9b", "\x00"):
        assert bad not in out
    assert "PostgreSQL" in out
    assert "[bold red]now[/]" in out  # stored text is not rich markup
    assert "ADR-7" in out


def test_piped_output_keeps_the_data(db: Path) -> None:
    result = invoke("facts", "list", "--db", str(db))
    assert result.exit_code == 0
    assert "\x1b]0;pwned\x07PostgreSQL" in result.stdout  # a pipe gets the stored text


@pytest.mark.parametrize("command", [["list"], ["search", "anything"]])
def test_no_results_when_piped_print_nothing_on_stdout(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "empty.db"
    FactStore(path).close()
    result = invoke("facts", *command, "--db", str(path))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.strip() == "no facts"


@pytest.mark.parametrize(
    "command", [["list"], ["search", "x"], ["delete", "x"], ["add", "-k", "d", "-c", "x"]]
)
def test_db_that_is_a_directory_is_one_clear_error(tmp_path: Path, command: list[str]) -> None:
    result = invoke("facts", *command, "--db", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert "is a directory" in line
    assert str(tmp_path) in line
    assert "no fact store" not in line


@pytest.mark.parametrize("args", [[], ["facts"]])
def test_no_arguments_print_the_help_not_an_empty_error(args: list[str]) -> None:
    result = invoke(*args)
    assert "Usage" in result.stdout
    assert "error:  (" not in result.output
    assert "error:" not in result.stderr
    assert "Traceback" not in result.output


def test_no_arguments_in_a_real_process(tmp_path: Path) -> None:
    code = "from agent_reminders.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert "Usage" in done.stdout
    assert "error:" not in done.stderr


def test_version_option() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == __version__
    assert "--version" in invoke("--help").stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--debug", "facts", "add", "-k", "d", "-c", "x", "--confidence", "3"],
        ["facts", "--debug", "add", "-k", "d", "-c", "x", "--confidence", "3"],
        ["facts", "add", "--debug", "-k", "d", "-c", "x", "--confidence", "3"],
        ["facts", "add", "-k", "d", "-c", "x", "--confidence", "3", "--debug"],
    ],
)
def test_debug_works_anywhere(tmp_path: Path, args: list[str]) -> None:
    result = invoke(*args, "--db", str(tmp_path / "f.db"))
    assert result.exit_code != 0
    assert isinstance(result.exception, FactError)
    assert "confidence" in str(result.exception)


def test_without_debug_the_next_run_is_one_line_again(tmp_path: Path) -> None:
    invoke("facts", "add", "--debug", "-k", "d", "-c", "x", "--confidence", "3")
    result = invoke(
        "facts", "add", "-k", "d", "-c", "x", "--confidence", "3", "--db", str(tmp_path / "f.db")
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert "confidence" in result.stderr
