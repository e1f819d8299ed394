"""What a person sees: every command's ``--help`` shows its text as written (no markup eaten, no
hard wraps, no double backticks, the real range of diagnostic codes), and ids in a table on an
80-column terminal are never wrapped, so a copied id works."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer.core
import typer.main
from cli_process import installed, run
from typer.testing import CliRunner

from agent_reminders import Session, explain
from agent_reminders.cli import app
from agent_reminders.storage import SQLiteStore

WIDE = {"COLUMNS": "3000"}  # every paragraph fits on one line: a line break left is the text's
REMINDER_ID = re.compile(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}")
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    if isinstance(command, typer.core.TyperGroup):
        for name, sub in command.commands.items():
            yield from _walk(sub, [*path, name])


COMMANDS = list(_walk(typer.main.get_command(app), []))


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


def _lines(text: str) -> list[str]:
    return [_flat(line) for line in text.splitlines()]


def _source(text: str | None) -> str:
    """A help text as written: building the command tree escaped its brackets for rich."""
    return (text or "").replace("\\[", "[")


def _texts(command: Any) -> list[str]:
    """The help texts as written in the source: the command's and each parameter's."""
    params = [p.help for p in command.params if isinstance(getattr(p, "help", None), str)]
    return [_source(text) for text in (command.help, *params)]


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "-" for p, _ in COMMANDS]
)
def test_help_shows_the_text_as_written(path: list[str], command: Any) -> None:
    out = _help(path)
    flat = _flat(out)
    assert "``" not in out
    for remnant in ("()", "[]", "(, ", ", )"):
        assert remnant not in out, (remnant, out)
    for text in _texts(command):
        for bracketed in re.findall(r"\[+[^\[\]]*\]+", text):
            assert bracketed in flat, (bracketed, flat)
    # a paragraph is one line on a wide terminal: the source's own line breaks are not kept
    for paragraph in _source(command.help).split("\n\n"):
        said = _flat(paragraph).replace("``", "`")
        assert any(said in line for line in _lines(out)), (said, out)
    if isinstance(command, typer.core.TyperGroup):
        for sub in command.commands.values():
            first = _flat(_source(sub.help).split("\n\n")[0]).replace("``", "`")
            assert any(first in line for line in _lines(out)), (first, out)


def _code_runs() -> list[tuple[str, str]]:
    """The diagnostic codes the library explains, as runs of consecutive numbers."""
    numbers = []
    for n in range(1, 1000):
        try:
            explain(f"RMD-{n:03d}")
        except KeyError:
            continue
        numbers.append(n)
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return [(f"RMD-{r[0]:03d}", f"RMD-{r[-1]:03d}") for r in runs]


@pytest.mark.parametrize("path", [[], ["explain"]], ids=["top", "explain"])
def test_the_explain_range_is_the_tables(path: list[str]) -> None:
    runs = _code_runs()
    assert len(runs) >= 2  # the reminder codes and the library's own
    said = re.findall(r"RMD-\d{3}", _help(path))
    assert said
    assert min(said) == runs[0][0]
    assert max(said) == runs[-1][1]
    for first, last in runs:
        assert first in said, (first, said)
        assert last in said, (last, said)


# -- ids on an 80-column terminal -------------------------------------------------------------


def in_terminal(*args: str, cwd: Path, columns: int = 80) -> str:
    """The command's stdout on a real terminal (a pty) ``columns`` wide, escapes removed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "AGENT_REMINDERS_TOKEN"}
    env.update(COLUMNS=str(columns), LINES="50", TERM="xterm-256color")
    with subprocess.Popen(
        [installed(), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave,
        stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed (EIO on Linux)
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    return ANSI.sub("", text)


def _store_with_a_session(folder: Path) -> None:
    async def main() -> None:
        async with SQLiteStore(folder / ".agent-reminders" / "state.db") as store:
            await store.create_session(Session("s1").state())

    anyio.run(main)


def test_pending_ids_are_whole_on_an_80_column_terminal(tmp_path: Path) -> None:
    _store_with_a_session(tmp_path)
    bodies = [
        "CI is red on main: test_login fails after the session refactor; read job 4711 first",
        "Release freeze until Friday",
    ]
    for body in bodies:
        done = run("remind", body, "--tag", "ci", "--mode", "interrupt_immediate", cwd=tmp_path)
        assert done.code == 0, done
    ids = [r["id"] for r in json.loads(run("pending", "--json", cwd=tmp_path).out)["injections"]]
    shown = in_terminal("pending", cwd=tmp_path)
    assert max(len(line) for line in shown.splitlines()) <= 80
    for reminder_id in ids:
        assert any(reminder_id in line for line in shown.splitlines()), shown
    # an id copied off the screen revokes
    copied = REMINDER_ID.search(shown)
    assert copied is not None
    assert run("revoke", copied.group(), cwd=tmp_path).out.strip() == "revoked"


def test_fact_and_session_ids_are_whole_on_an_80_column_terminal(tmp_path: Path) -> None:
    claim = "Use PostgreSQL for storage; SQLite only in tests, never for the production data"
    fact = run("facts", "add", "-k", "decision", "-c", claim, "-e", "adr:ADR-7", cwd=tmp_path)
    assert fact.code == 0, fact
    shown = in_terminal("facts", "list", cwd=tmp_path)
    assert any(fact.out.strip() in line for line in shown.splitlines()), shown
    sessions = [run("sessions", "new", cwd=tmp_path).out.strip() for _ in range(2)]
    shown = in_terminal("sessions", cwd=tmp_path)
    for session_id in sessions:
        assert any(session_id in line for line in shown.splitlines()), shown
