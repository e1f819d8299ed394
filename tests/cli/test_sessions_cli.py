"""First steps in an empty folder: ``agent-reminders sessions`` (list) and ``sessions new``
(create), ``remind -`` (the body from stdin), and the README's shell commands run in order."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from cli_process import run

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DB = Path(".agent-reminders") / "state.db"
HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def new_session(cwd: Path, *extra: str) -> str:
    done = run("sessions", "new", *extra, cwd=cwd)
    assert done.code == 0, done
    assert done.err == ""
    session_id = done.out.strip()
    assert HEX_ID.match(session_id), done.out
    return session_id


def test_sessions_new_creates_the_default_store_and_prints_an_id(tmp_path: Path) -> None:
    first = new_session(tmp_path)
    assert (tmp_path / DEFAULT_DB).is_file()
    as_json = run("sessions", "new", "--json", cwd=tmp_path)
    assert as_json.code == 0, as_json
    second = json.loads(as_json.out)["sessionId"]
    assert HEX_ID.match(second)
    assert second != first
    # the session is the one remind, pending and revoke reach by default (the latest)
    reminded = run("remind", "CI is red", cwd=tmp_path)
    assert reminded.code == 0, reminded
    listed = json.loads(run("pending", "--session", second, "--json", cwd=tmp_path).out)
    assert listed["pendingCount"] == 1


def test_sessions_lists_id_last_activity_and_pending_count(tmp_path: Path) -> None:
    quiet = new_session(tmp_path)
    busy = new_session(tmp_path)
    for body in ("one", "two"):
        assert run("remind", body, "--session", busy, cwd=tmp_path).code == 0
    done = run("sessions", "--json", cwd=tmp_path)
    assert done.code == 0, done
    rows = json.loads(done.out)["sessions"]
    assert [r["sessionId"] for r in rows] == [busy, quiet]  # most recent activity first
    assert [r["pendingCount"] for r in rows] == [2, 0]
    for row in rows:
        assert datetime.fromisoformat(row["lastActivity"]).tzinfo is not None
    # piped: one tab-separated line per session, the id first
    plain = run("sessions", cwd=tmp_path)
    assert plain.code == 0, plain
    lines = [line.split("\t") for line in plain.out.splitlines()]
    assert [(cells[0], cells[-1]) for cells in lines] == [(busy, "2"), (quiet, "0")]


def test_sessions_store_option_like_remind(tmp_path: Path) -> None:
    session_id = new_session(tmp_path, "--store", "sqlite:elsewhere.db")
    assert (tmp_path / "elsewhere.db").is_file()
    assert not (tmp_path / DEFAULT_DB).exists()
    for store in ("elsewhere.db", "sqlite:elsewhere.db"):
        rows = json.loads(run("sessions", "--store", store, "--json", cwd=tmp_path).out)
        assert [r["sessionId"] for r in rows["sessions"]] == [session_id]
    # a folder that does not exist is a typo, not a new project: refused, nothing made
    typo = run("sessions", "new", "--store", "sqlite:typo/state.db", cwd=tmp_path)
    assert typo.code == 1
    assert typo.line.startswith("error: RMD-109: ")
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("command", [["sessions"], ["remind", "hi", "--tag", "ci"], ["pending"]])
def test_without_a_store_the_error_says_how_to_make_one(tmp_path: Path, command: list[str]) -> None:
    done = run(*command, cwd=tmp_path)
    assert done.code == 1
    assert "agent-reminders sessions new" in done.line
    assert not (tmp_path / ".agent-reminders").exists()  # nothing was created


def test_sessions_new_in_memory_is_refused(tmp_path: Path) -> None:
    done = run("sessions", "new", "--store", "memory:", cwd=tmp_path)
    assert done.code == 2
    assert "memory:" in done.line


def test_remind_dash_reads_the_body_from_stdin(tmp_path: Path) -> None:
    new_session(tmp_path)
    body = "CI is red on main:\n  test_login fails"
    done = run("remind", "-", "--tag", "ci", cwd=tmp_path, stdin=body + "\n")
    assert done.code == 0, done
    rows = json.loads(run("pending", "--json", cwd=tmp_path).out)["injections"]
    assert [(r["body"], r["tags"]) for r in rows] == [(body, ["ci"])]


@pytest.mark.parametrize("stdin", ["", "\n", "  \n\t\n"])
def test_remind_dash_with_empty_stdin_is_an_error(tmp_path: Path, stdin: str) -> None:
    new_session(tmp_path)
    done = run("remind", "-", cwd=tmp_path, stdin=stdin)
    assert done.code == 2
    assert "standard input" in done.line
    assert "empty" in done.line
    assert json.loads(run("pending", "--json", cwd=tmp_path).out)["pendingCount"] == 0


# -- the README ---------------------------------------------------------------------------------


def _readme_push_block() -> list[str]:
    """The commands of the README's shell block that pushes reminders, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```sh\n")[1:]]
    (block,) = [b for b in blocks if "agent-reminders revoke" in b]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_commands_work_in_order_in_an_empty_folder(tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "AGENT_REMINDERS_TOKEN"}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    printed: dict[str, str] = {}
    ran = 0
    for line in _readme_push_block():
        words = shlex.split(line, comments=True)
        if "--url" in words:
            continue  # through a running bridge: tests/cli/test_remind_cli.py runs one
        for placeholder, value in printed.items():
            line = re.sub(rf"\b{placeholder}\b", value, line)
        proc = subprocess.run(
            ["bash", "-c", line],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, (line, proc.stderr)
        ran += 1
        if "sessions new" in line:
            printed["SESSION_ID"] = proc.stdout.strip()
        elif re.search(r"agent-reminders remind\b", line):
            printed["REMINDER_ID"] = proc.stdout.strip()
    assert ran >= 4
    assert {"SESSION_ID", "REMINDER_ID"} <= set(printed)
