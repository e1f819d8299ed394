"""``agent-reminders hook claude-code`` driven exactly as Claude Code drives it: one JSON object
on stdin per run, cwd = the project, ``CLAUDE_PROJECT_DIR`` set, a temporary ``HOME``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders.facts import FactStore
from agent_reminders.queue import QueueItem, normalize_mode, validate_reminder_payload
from agent_reminders.storage import SQLiteStore

FAILING_PYTEST = """\
F.
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 2) == 4
E       assert 3 == 4

tests/test_math.py:4: AssertionError
=========================== short test summary info ============================
FAILED tests/test_math.py::test_add - assert 3 == 4
1 failed, 1 passed in 0.03s
"""


class Project:
    """A project directory with a temporary HOME, and the hook run as Claude Code runs it."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "project"
        self.dir.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        self.db = self.dir / ".agent-reminders" / "state.db"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
        env.update(
            CLAUDE_PROJECT_DIR=str(self.dir),
            HOME=str(self.home),
            PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"),
        )
        return env

    def run(self, event: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        payload = {
            "session_id": "cc-session-1",
            "transcript_path": str(self.home / "t.jsonl"),
            "cwd": str(self.dir),
            "permission_mode": "default",
            **event,
        }
        return self.raw(json.dumps(payload), *args)

    def raw(self, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_reminders", "hook", "claude-code", *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.dir,
            env=self.env(),
            timeout=60,
            check=False,
        )

    def context(self, event: dict[str, Any], *args: str) -> str | None:
        """The additionalContext of one run (``None`` when it printed nothing)."""
        done = self.run(event, *args)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        if not done.stdout:
            return None
        out = json.loads(done.stdout)
        assert list(out) == ["hookSpecificOutput"]
        assert out["hookSpecificOutput"]["hookEventName"] == event["hook_event_name"]
        return str(out["hookSpecificOutput"]["additionalContext"])

    def push(self, body: str, **options: Any) -> str:
        """Queue a reminder for the session straight into the store (another process would
        use ``agent-reminders remind --store``)."""

        mode = normalize_mode(options.pop("mode", None))
        fields = validate_reminder_payload({"body": body, **options}, grant="contract")
        fields["id"] = fields["id"] or f"pushed-{len(body)}-{abs(hash(body)) % 10**8}"
        item = QueueItem(kind="reminder", id=fields["id"], mode=mode, payload=fields)

        async def go() -> str:
            async with SQLiteStore(self.db) as store:
                return await store.enqueue("cc-session-1", item)

        return anyio.run(go)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def bash(command: str, stdout: str, *, tool_use_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
        "tool_use_id": tool_use_id,
    }


def test_session_start_brings_the_facts_and_the_workspace(project: Project) -> None:
    facts = FactStore(project.dir / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": "We use uv for packaging.", "confidence": 0.9})
    facts.close()
    text = project.context({"hook_event_name": "SessionStart", "source": "startup"})
    assert text is not None
    assert text.startswith('<context-directives speaker="harness">')
    assert "We use uv for packaging." in text
    assert f"Primary workspace root: {project.dir}" in text
    assert project.db.exists()


def test_a_failing_bash_test_run_gets_a_grounded_review_once(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.context({"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"})
    review = project.context(bash("pytest -q", FAILING_PYTEST))
    assert review is not None
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in review
    assert 'ttl_turns="' in review
    # the next tool call says nothing new: the review was delivered
    assert project.context(bash("ls", "a.py b.py", tool_use_id="toolu_2")) is None


def test_a_pushed_reminder_is_delivered_once_at_the_next_prompt(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("The release branch is frozen: do not push to it.", ttl_turns=3)
    text = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "ship it"})
    assert text is not None
    assert "The release branch is frozen" in text
    assert project.context({"hook_event_name": "UserPromptSubmit", "prompt": "again"}) is None

    async def pending() -> list[dict[str, Any]]:
        async with SQLiteStore(project.db) as store:
            return await store.pending("cc-session-1")

    assert anyio.run(pending) == []


def test_system_reminder_style(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("Use the staging database only.")
    text = project.context(
        {"hook_event_name": "UserPromptSubmit", "prompt": "go"}, "--style", "system_reminder"
    )
    assert text is not None
    assert text.startswith("<system-reminder>\n")
    assert "Use the staging database only." in text


def test_precompact_lists_the_preserved_reminders_and_compaction_restates_them(
    project: Project,
) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("Never edit the generated files under gen/.", preserve_on_compact=True)
    project.push("Short note for now.", ttl_turns=5)
    first = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    assert first is not None
    assert "Never edit the generated files" in first
    done = project.run({"hook_event_name": "PreCompact", "trigger": "auto"})
    assert done.returncode == 0, done.stderr
    assert "Never edit the generated files under gen/." in done.stdout
    assert "Short note for now." not in done.stdout
    assert not done.stdout.lstrip().startswith("{")  # plain text for the summarizer
    after = project.context({"hook_event_name": "SessionStart", "source": "compact"})
    assert after is not None
    assert "Never edit the generated files under gen/." in after
    assert "Short note for now." not in after


def test_subagent_start_hands_the_inherited_reminders_over(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("Every change needs a test.", propagate="all")
    project.push("Parent-only note.", propagate="none")
    project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    text = project.context(
        {"hook_event_name": "SubagentStart", "agent_id": "a1", "agent_type": "Explore"}
    )
    assert text is not None
    assert "Every change needs a test." in text
    assert "Parent-only note." not in text


def test_other_events_print_nothing(project: Project) -> None:
    done = project.run({"hook_event_name": "Stop", "stop_hook_active": False})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.parametrize(
    ("stdin", "fragment"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"hook_event_name": "UserPromptSubmit", "prompt": "x"}', "'session_id'"),
        ('{"session_id": "s", "hook_event_name": "UserPromptSubmit"}', "'prompt'"),
        ('{"session_id": "s", "hook_event_name": "PostToolUse"}', "'tool_name'"),
    ],
)
def test_bad_input_exits_1_with_one_line_and_leaves_the_store(
    project: Project, stdin: str, fragment: str
) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    before = _digest(project.db)
    done = project.raw(stdin)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert fragment in done.stderr
    assert _digest(project.db) == before


def test_a_store_that_cannot_be_opened_exits_1(project: Project) -> None:
    bad = project.dir / "garbage.db"
    bad.write_bytes(b"this is not a database" * 100)
    before = _digest(bad)
    done = project.run(
        {"hook_event_name": "UserPromptSubmit", "prompt": "x"}, "--store", f"sqlite:{bad}"
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert str(bad) in done.stderr
    assert done.stderr.count("\n") == 1
    assert _digest(bad) == before


def test_a_bad_option_exits_1_never_2(project: Project) -> None:
    done = project.run({"hook_event_name": "Stop"}, "--style", "loud")
    assert done.returncode == 1
    assert done.stdout == ""


def test_concurrent_runs_of_one_session_lose_no_write(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    bodies = [f"Pushed note number {i}." for i in range(12)]
    for body in bodies:
        project.push(body, ttl_turns=50)
    with ThreadPoolExecutor(max_workers=6) as pool:
        texts = list(
            pool.map(
                lambda i: project.context(
                    {"hook_event_name": "UserPromptSubmit", "prompt": f"p{i}"}
                ),
                range(6),
            )
        )
    delivered = "\n".join(t for t in texts if t)
    for body in bodies:
        assert delivered.count(body) == 1, body

    async def saved() -> Any:
        async with SQLiteStore(project.db) as store:
            return await store.load_session("cc-session-1")

    state = anyio.run(saved)
    assert state is not None
    history = "\n".join(str(m["content"]) for m in state.transcript.messages)
    for body in bodies:
        assert history.count(body) == 1, body
    assert state.turn >= 6
