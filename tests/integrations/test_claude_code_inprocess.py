"""The hook command's pieces called in this process (the subprocess tests in
``test_claude_code.py`` drive the same code as Claude Code does): ``hook_main``'s exit codes
and output, the settings-file installer, and ``hook install`` through the typer app."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from agent_reminders import ConfigError, Session
from agent_reminders.cli import app
from agent_reminders.integrations import _agent_hook
from agent_reminders.integrations.claude_code import (
    HOOK_EVENTS,
    HookReply,
    answer_hook,
    hook_main,
    install,
    settings_path,
    uninstall,
)
from agent_reminders.storage import MemoryStore, UnknownSessionError


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    return tmp_path


def run(argv: list[str], event: dict[str, Any] | str) -> int:
    stdin = event if isinstance(event, str) else json.dumps({"session_id": "s", **event})
    return hook_main(argv, stdin=io.StringIO(stdin))


def test_hook_main_prints_the_output_and_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([], {"hook_event_name": "SessionStart", "source": "startup"}) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert (project / ".agent-reminders" / "state.db").exists()
    db = project / "elsewhere.db"
    args = ["--store", f"sqlite:{db}", "--style=system_reminder"]
    assert run(args, {"hook_event_name": "SessionStart", "source": "startup"}) == 0
    context = json.loads(capsys.readouterr().out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<system-reminder>\n")
    assert db.exists()
    assert run([], {"hook_event_name": "PreCompact", "trigger": "manual"}) == 0
    assert capsys.readouterr().out == ""  # nothing preserved: nothing to say
    assert run([], {"hook_event_name": "Notification", "message": "hi"}) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("argv", "stdin", "said"),
    [
        ([], "nope", "hook input is not JSON"),
        ([], "[]", "must be a JSON object"),
        (["--style", "loud"], "{}", "--style must be one of"),
        (["--store"], "{}", "--store needs a value"),
        (["extra"], "{}", "unknown argument 'extra'"),
        ([], '{"hook_event_name": "Stop"}', "no 'session_id'"),
    ],
)
def test_every_failure_is_one_line_and_exit_1(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], stdin: str, said: str
) -> None:
    assert run(argv, stdin) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("agent-reminders hook: ")
    assert captured.err.count("\n") == 1
    assert said in captured.err


def test_an_unexpected_error_names_its_type_and_debug_lets_it_through(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("lost")

    monkeypatch.setattr(_agent_hook, "run_command", broken)
    assert run([], {"hook_event_name": "Stop"}) == 1
    assert capsys.readouterr().err == "agent-reminders hook: KeyError: 'lost'\n"
    with pytest.raises(KeyError):
        run(["--debug"], {"hook_event_name": "Stop"})


def test_help_is_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert hook_main(["--help"], stdin=io.StringIO("")) == 0
    assert "--style STYLE" in capsys.readouterr().out


def test_a_reply_is_json_plain_text_or_nothing() -> None:
    assert HookReply("UserPromptSubmit", "").stdout() == ""
    assert HookReply("PreCompact", "keep this").stdout() == "keep this"
    assert HookReply("PreCompact", "keep this").hook_output() is None
    assert json.loads(HookReply("SubagentStart", "ctx").stdout()) == {
        "hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "ctx"}
    }


def test_settings_paths_per_scope(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "p"
    assert settings_path("project", project=project, home=home) == project / ".claude/settings.json"
    local = settings_path("local", project=project, home=home)
    assert local == project / ".claude/settings.local.json"
    assert settings_path("user", project=project, home=home) == home / ".claude/settings.json"
    with pytest.raises(ConfigError, match="scope must be one of project, user, local"):
        settings_path("team", project=project, home=home)


def test_install_and_uninstall_keep_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash"}]}
    mixed = {"hooks": [{"type": "command", "command": "x hook claude-code"}, {"command": "y"}]}
    original = {"model": "opus", "hooks": {"PreToolUse": [theirs], "Stop": [mixed]}}
    path.write_text(json.dumps(original))
    added = install(path, command="ar hook claude-code")
    assert added.events == HOOK_EVENTS
    assert added.backup is not None
    assert json.loads(added.backup.read_text()) == original
    again = install(path, command="ar hook claude-code")
    assert (again.events, again.backup) == ((), None)
    removed = uninstall(path)
    assert set(removed.events) == {*HOOK_EVENTS, "Stop"}  # also an older entry of ours
    left = json.loads(path.read_text())
    assert left == {
        "model": "opus",
        "hooks": {"PreToolUse": [theirs], "Stop": [{"hooks": [{"command": "y"}]}]},
    }
    nothing = uninstall(path)
    assert (nothing.events, nothing.backup) == ((), None)
    fresh = tmp_path / "new" / "settings.json"
    assert install(fresh).backup is None
    assert uninstall(fresh).events == HOOK_EVENTS
    assert json.loads(fresh.read_text()) == {}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{oops", "not a readable JSON settings file"),
        ("[1]", "the settings must be a JSON object"),
        ('{"hooks": {"Stop": {}}}', "'hooks' must map event names to lists"),
    ],
)
def test_a_settings_file_it_cannot_read_is_left_alone(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=said):
        install(path)
    with pytest.raises(ConfigError, match=said):
        uninstall(path)
    assert path.read_text() == text


def test_hook_install_through_the_cli(project: Path) -> None:
    runner = CliRunner()
    target = project / "ci.json"
    done = runner.invoke(app, ["hook", "install", "claude-code", "--settings", str(target)])
    assert done.exit_code == 0, done.output
    assert "installed for SessionStart" in done.output
    assert (
        "already installed"
        in runner.invoke(app, ["hook", "install", "claude-code", "--settings", str(target)]).output
    )
    scoped = runner.invoke(app, ["hook", "install", "claude-code", "--scope", "local"])
    assert scoped.exit_code == 0, scoped.output
    assert (project / ".claude" / "settings.local.json").exists()
    removed = runner.invoke(app, ["hook", "uninstall", "claude-code", "--settings", str(target)])
    assert "removed from SessionStart" in removed.output
    assert (
        "nothing to remove"
        in runner.invoke(
            app, ["hook", "uninstall", "claude-code", "--settings", str(target)]
        ).output
    )


def test_the_typer_command_runs_the_same_hook(project: Path) -> None:
    event = {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}
    runner = CliRunner()
    done = runner.invoke(
        app, ["hook", "claude-code", "--style", "system_reminder"], input=json.dumps(event)
    )
    assert done.exit_code == 0, done.output
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<system-reminder>\n")
    bad = runner.invoke(app, ["hook", "claude-code"], input="not json")
    assert bad.exit_code == 1


# -- answer_hook on a store, in this process ----------------------------------------------


def event_of(tmp: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": "s", "transcript_path": "", "cwd": str(tmp), **fields}


@pytest.mark.anyio
async def test_tool_responses_of_every_shape(tmp_path: Path) -> None:
    async with MemoryStore() as store:

        async def after(tool: str, response: Any) -> str:
            event = event_of(
                tmp_path,
                hook_event_name="PostToolUse",
                tool_name=tool,
                tool_input={"command": "pytest -q"},
                tool_response=response,
            )
            return (await answer_hook(event, store=store)).text

        start = event_of(tmp_path, hook_event_name="SessionStart", source="startup")
        await answer_hook(start, store=store)
        # another tool's structured response is read as JSON: a failure line inside counts
        # only when a verification command produced it, and "Read" is no such command
        read = {"type": "text", "file": {"content": "FAILED a.py::t - x\n1 failed in 0.1s"}}
        assert await after("Read", read) == ""
        # an exit code or an interruption marks a run as failed (other hosts' shapes)
        assert "tool_error" in await after("Bash", {"stdout": "", "exit_code": 2})
        assert "tool_error" in await after("Bash", {"stdout": "boom", "interrupted": True})
        cut = {"stdout": "1\n", "persistedOutputPath": "/tmp/x.txt", "persistedOutputSize": -1}
        assert "unknown size" in await after("Bash", cut)


@pytest.mark.anyio
async def test_a_compaction_counts_claude_codes_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    rows = [{"type": "user"}, {"type": "assistant"}, {"type": "user", "isMeta": True}]
    transcript.write_text("\n".join(json.dumps(r) for r in rows) + "\n[]\nnot json\n")
    async with MemoryStore() as store:
        await answer_hook(event_of(tmp_path, hook_event_name="SessionStart"), store=store)
        event = event_of(tmp_path, hook_event_name="SessionStart", source="compact")
        event["transcript_path"] = str(transcript)
        text = (await answer_hook(event, store=store)).text
        assert "The conversation was compacted: 2 earlier messages were archived." in text
        written = [
            {"type": "system", "subtype": "compact_boundary"},
            {"type": "user", "isCompactSummary": True},
            {"type": "user"},
        ]
        with transcript.open("a") as out:
            out.writelines(json.dumps(r) + "\n" for r in written)
        text = (await answer_hook(event, store=store)).text
        assert "The conversation was compacted: 2 earlier messages were archived." in text
        # a transcript that cannot be read: no count, so no recap (in a session with none yet)
        event |= {"session_id": "s2", "transcript_path": str(tmp_path / "gone.jsonl")}
        text = (await answer_hook(event, store=store)).text
        assert "Primary workspace root" in text
        assert "The conversation was compacted" not in text


@pytest.mark.anyio
async def test_runs_of_one_session_wait_for_the_lease_and_give_up_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = event_of(tmp_path, hook_event_name="UserPromptSubmit", prompt="go")
    async with MemoryStore() as store:
        await answer_hook(event_of(tmp_path, hook_event_name="SessionStart"), store=store)
        assert await store.claim("s", "someone-else", 30) is None
        order: list[str] = []

        async def waiting() -> None:
            await answer_hook(prompt, store=store)  # waits for the lease
            order.append("answered")

        async def release() -> None:
            await anyio.sleep(0.05)
            order.append("released")
            assert await store.release("s", "someone-else")

        async with anyio.create_task_group() as group:
            group.start_soon(waiting)
            group.start_soon(release)
        assert order == ["released", "answered"]
        assert await store.claim("s", "stuck", 30) is None
        monkeypatch.setattr(_agent_hook, "LEASE_WAIT_SECONDS", 0.0)
        before = await store.load_session("s")
        with pytest.raises(ConfigError, match="held by 'stuck'"):
            await answer_hook(prompt, store=store)
        assert await store.load_session("s") == before


class RacingStore(MemoryStore):
    """A store where another hook run creates the session between our claim and create."""

    raced = False

    async def claim(self, session_id: str, owner: str, ttl_seconds: float) -> str | None:  # type: ignore[override]
        if not self.raced:
            self.raced = True
            await self.create_session(Session(session_id).state())
            raise UnknownSessionError(session_id)
        return await super().claim(session_id, owner, ttl_seconds)


@pytest.mark.anyio
async def test_a_first_run_that_loses_the_race_answers_on_the_stored_session(
    tmp_path: Path,
) -> None:
    async with RacingStore() as store:
        start = event_of(tmp_path, hook_event_name="SessionStart", source="startup")
        reply = await answer_hook(start, store=store)  # type: ignore[arg-type]
        assert "Primary workspace root" in reply.text  # the other run had not started it
        state = await store.load_session("s")
        assert state is not None
        assert state.started
