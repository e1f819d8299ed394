"""The agents' hook runs in this process (``agents.hook_main`` with the run's environment and
directory, as the hook server calls it), so that coverage sees them; the same inputs as
``test_agent_hooks.py``, whose runs are real processes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_agent_hooks import AGENTS, CURSOR, FAILING, GEMINI, Agent, Project
from typer.testing import CliRunner

from agent_reminders.bridge import Bridge, BridgeClient
from agent_reminders.cli import app
from agent_reminders.cli import sessions as sessions_cli
from agent_reminders.integrations.agents import hook_main
from agent_reminders.storage import SQLiteStore


def _run(
    project: Project, event: dict[str, Any], capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    stdin = io.StringIO(json.dumps(project.payload(event)))
    code = hook_main(project.agent.name, list(args), stdin, env=project.env(), cwd=project.dir)
    out = capsys.readouterr()
    return code, out.out, out.err


def _context(project: Project, event: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = _run(project, event, capsys)
    assert (code, err) == (0, "")
    if out.strip() == project.agent.empty:
        return ""
    return project.agent.context(event["hook_event_name"], json.loads(out)) or ""


def _push(project: Project, body: str, **fields: Any) -> None:
    async def main() -> None:
        async with SQLiteStore(project.db) as store, BridgeClient.in_process(Bridge(store)) as c:
            await c.remind(body, session_id=project.session, **fields)

    anyio.run(main)


def _next_turn(project: Project, capsys: pytest.CaptureFixture[str]) -> str:
    agent = project.agent
    event = agent.prompt("go on") if agent.prompt else agent.tool("ls", "README.md\n", True)
    return _context(project, event, capsys)


@pytest.mark.parametrize("agent", AGENTS, ids=[a.name for a in AGENTS])
def test_a_session_in_process(
    agent: Agent, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(tmp_path, agent)
    started = _context(project, agent.start("startup"), capsys)
    assert f"Primary workspace root: {project.dir}" in started
    _push(project, "The release branch is frozen.", preserve_on_compact=True)
    assert _next_turn(project, capsys).count("The release branch is frozen.") == 1
    assert "The release branch is frozen." not in _next_turn(project, capsys)
    review = _context(project, agent.tool("pytest -q", FAILING, False), capsys)
    assert review.count("Grounded review") == 1
    assert _context(project, agent.pre_compact(), capsys) == ""
    restated = _next_turn(project, capsys)
    if agent is GEMINI:  # no sign of a compaction from Gemini
        assert "The release branch is frozen." not in restated
    elif agent is CURSOR:
        assert restated.count("The release branch is frozen.") == 1
    else:
        assert "The release branch is frozen." not in restated
        compact = _context(project, agent.start("compact"), capsys)
        assert compact.count("The release branch is frozen.") == 1
    # an event the hook does not answer: the agent's "nothing"
    code, out, _ = _run(project, {"hook_event_name": "Stop"}, capsys)
    assert (code, out.strip()) == (0, agent.empty)


@pytest.mark.parametrize("agent", AGENTS, ids=[a.name for a in AGENTS])
def test_errors_in_process(
    agent: Agent, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(tmp_path, agent)
    _context(project, agent.start("startup"), capsys)
    broken = project.payload(agent.tool("pytest -q", FAILING, False))
    broken.pop("tool_output" if agent is CURSOR else "tool_response")
    code = hook_main(agent.name, [], io.StringIO(json.dumps(broken)), env=project.env())
    said = capsys.readouterr()
    assert (code, said.out) == (1, "")
    assert "has no" in said.err
    for bad in ("[]", "nope"):
        assert hook_main(agent.name, [], io.StringIO(bad), env=project.env()) == 1
    assert hook_main(agent.name, ["--style", "loud"], io.StringIO("{}")) == 1
    assert hook_main(agent.name, ["--help"]) == 0
    assert f"usage: agent-reminders hook {agent.name}" in capsys.readouterr().out


def test_a_store_that_is_not_sqlite_is_used_through_an_event_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(tmp_path, GEMINI)
    code, out, err = _run(project, GEMINI.start("startup"), capsys, "--store", "memory:")
    assert (code, err) == (0, "")
    assert "Primary workspace root" in out
    assert not project.db.exists()


def test_cursor_without_a_conversation_id_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = {"hook_event_name": "sessionStart", "workspace_roots": [str(tmp_path)]}
    assert hook_main("cursor", [], io.StringIO(json.dumps(event)), env={}) == 1
    assert "conversation_id" in capsys.readouterr().err


def test_sessions_table_names_each_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for agent in AGENTS:
        (tmp_path / agent.name).mkdir()
        project = Project(tmp_path / agent.name, agent)
        project.session = f"{agent.name}-1"
        _context(project, agent.start("startup"), capsys)
        store = f"sqlite:{project.db}"
        monkeypatch.setattr(sessions_cli, "is_terminal", lambda: True)
        shown = CliRunner().invoke(app, ["sessions", "--store", store])
        assert shown.exit_code == 0, shown.output
        assert agent.name in shown.output
        piped = CliRunner().invoke(app, ["sessions", "--store", store, "--json"])
        [row] = json.loads(piped.output)["sessions"]
        assert row["agent"] == agent.name


def test_project_reminders_from_the_command_line_in_process(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'state.db'}"
    runner = CliRunner()
    made = runner.invoke(app, ["sessions", "new", "--store", store])
    assert made.exit_code == 0, made.output
    first = made.output.strip()
    pushed = runner.invoke(app, ["remind", "--project", "--store", store, "--json", "CI is red."])
    assert pushed.exit_code == 0, pushed.output
    said = json.loads(pushed.output)
    assert said["sessionIds"] == [first]
    plain = runner.invoke(app, ["remind", "--project", "--store", store, "Deploys are frozen."])
    assert plain.exit_code == 0, plain.output
    assert "queued in 1 session(s)" in plain.output
    # remind --session latest reaches the real session, never the reserved one
    latest = runner.invoke(app, ["remind", "--store", store, "Just this one."])
    assert latest.exit_code == 0, latest.output
    listed = runner.invoke(app, ["pending", "--store", store, "--json"])
    bodies = [r["body"] for r in json.loads(listed.output)["injections"]]
    assert bodies == ["CI is red.", "Deploys are frozen.", "Just this one."]
    gone = runner.invoke(
        app, ["revoke", "--project", "--store", store, "--json", said["reminderId"]]
    )
    assert gone.exit_code == 0, gone.output
    assert json.loads(gone.output)["sessionIds"] == [first]
    again = runner.invoke(app, ["revoke", "--project", "--store", store, said["reminderId"]])
    assert again.exit_code == 0, again.output
    assert again.output.strip() == "already_revoked"
    both = runner.invoke(app, ["remind", "--project", "--session", first, "--store", store, "x"])
    assert both.exit_code == 2
