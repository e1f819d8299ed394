"""``agent-reminders hook codex|gemini-cli|cursor``: each run a real process, fed hook inputs of
the shapes each agent sends (docs/coding-agents.md), answering on a real SQLite store."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders.facts import FactStore
from agent_reminders.storage import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
FAILING = "F.\nFAILED tests/test_math.py::test_add - assert 3 == 4\n1 failed, 1 passed in 0.03s\n"
PASSING = "..\n2 passed in 0.02s\n"


@dataclass(frozen=True)
class Agent:
    """One agent's hook protocol, as a test drives it."""

    name: str
    start: Callable[[str], dict[str, Any]]  # source -> input
    prompt: Callable[[str], dict[str, Any]] | None  # prompt text -> input (None: no such event)
    tool: Callable[[str, str, bool], dict[str, Any]]  # command, output, ok -> input
    pre_compact: Callable[[], dict[str, Any]]
    context: Callable[[str, dict[str, Any]], str | None]  # event, stdout JSON -> the context
    empty: str  # what it prints with nothing to add
    session_key: str
    project_env: str | None


def _codex_context(event: str, out: dict[str, Any]) -> str | None:
    # Codex's output schemas allow no other keys (additionalProperties: false)
    assert list(out) == ["hookSpecificOutput"]
    assert sorted(out["hookSpecificOutput"]) == ["additionalContext", "hookEventName"]
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


def _gemini_context(event: str, out: dict[str, Any]) -> str | None:
    if out == {}:
        return None
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


def _cursor_context(event: str, out: dict[str, Any]) -> str | None:
    if out == {}:
        return None
    assert list(out) == ["additional_context"]
    return str(out["additional_context"])


def _base(**fields: Any) -> dict[str, Any]:
    return {"transcript_path": None, "model": "gpt-5.1-codex", **fields}


CODEX = Agent(
    name="codex",
    start=lambda source: _base(hook_event_name="SessionStart", source=source),
    prompt=lambda text: _base(
        hook_event_name="UserPromptSubmit", prompt=text, turn_id="t", permission_mode="default"
    ),
    tool=lambda command, output, ok: _base(
        hook_event_name="PostToolUse",
        turn_id="t",
        tool_name="Bash",
        tool_input={"command": command},
        tool_response=output,
        tool_use_id="call_1",
    ),
    pre_compact=lambda: _base(hook_event_name="PreCompact", trigger="auto", turn_id="t"),
    context=_codex_context,
    empty="",
    session_key="session_id",
    project_env=None,
)
GEMINI = Agent(
    name="gemini-cli",
    # Gemini's first prompt does the session start's work (its SessionStart context would be
    # dropped with the first prompt at the next --resume)
    start=lambda source: {"hook_event_name": "BeforeAgent", "prompt": "hello"},
    prompt=lambda text: {"hook_event_name": "BeforeAgent", "prompt": text},
    tool=lambda command, output, ok: {
        "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command},
        "tool_response": {
            "llmContent": f"Output: {output}" + ("" if ok else "\nExit Code: 1"),
            "returnDisplay": output,
        },
    },
    pre_compact=lambda: {"hook_event_name": "PreCompress", "trigger": "auto"},
    context=_gemini_context,
    empty="{}",
    session_key="session_id",
    project_env="GEMINI_PROJECT_DIR",
)
CURSOR = Agent(
    name="cursor",
    start=lambda source: {
        "hook_event_name": "sessionStart",
        "session_id": "conv-1",
        "is_background_agent": False,
        "composer_mode": "agent",
    },
    prompt=None,
    tool=lambda command, output, ok: {
        "hook_event_name": "postToolUse",
        "tool_name": "Shell",
        "tool_input": {"command": command},
        "tool_output": json.dumps({"exitCode": 0 if ok else 1, "stdout": output}),
        "tool_use_id": "tool-1",
        "duration": 120,
    },
    pre_compact=lambda: {
        "hook_event_name": "preCompact",
        "trigger": "auto",
        "context_usage_percent": 91,
    },
    context=_cursor_context,
    empty="{}",
    session_key="conversation_id",
    project_env="CURSOR_PROJECT_DIR",
)
AGENTS = [CODEX, GEMINI, CURSOR]


class Project:
    """A project folder with a fact, and an agent's hook run as that agent runs it."""

    def __init__(self, root: Path, agent: Agent) -> None:
        self.agent = agent
        self.dir = root / "project"
        self.dir.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        self.db = self.dir / ".agent-reminders" / "state.db"
        self.session = "agent-session-1"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CLAUDE", "GEMINI", "CURSOR", "CODEX"))
        }
        env.update(HOME=str(self.home), PYTHONPATH=str(ROOT / "src"))
        if self.agent.project_env:
            env[self.agent.project_env] = str(self.dir)
        return env

    def payload(self, event: dict[str, Any]) -> dict[str, Any]:
        common: dict[str, Any] = {self.agent.session_key: self.session, "cwd": str(self.dir)}
        if self.agent is CURSOR:
            common.update(
                generation_id="gen-1",
                workspace_roots=[str(self.dir)],
                cursor_version="2.4.0",
                user_email=None,
                transcript_path=None,
            )
        elif self.agent is GEMINI:
            common.update(transcript_path="", timestamp="2026-12-03T10:00:00Z")
        return {**common, **event}

    def raw(
        self, stdin: str, *args: str, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_reminders", "hook", self.agent.name, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd or self.dir,
            env=self.env(),
            timeout=60,
            check=False,
        )

    def context(self, event: dict[str, Any]) -> str | None:
        """The context one run adds (``None``: nothing), its output checked on the way."""
        done = self.raw(json.dumps(self.payload(event)))
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        if done.stdout.strip() == self.agent.empty:
            return None
        out = json.loads(done.stdout)
        assert isinstance(out, dict)
        return self.agent.context(event["hook_event_name"], out)

    def remind(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_reminders", "remind", *args],
            capture_output=True,
            text=True,
            cwd=self.dir,
            env=self.env(),
            timeout=60,
            check=True,
        )

    def md5(self) -> str:
        return hashlib.md5(self.db.read_bytes()).hexdigest()

    def next_turn(self) -> str | None:
        """The context at the agent's next chance to add some mid-conversation: its prompt
        event, or (Cursor, whose prompt event takes none) its next tool event."""
        if self.agent.prompt is not None:
            return self.context(self.agent.prompt("go on"))
        return self.context(self.agent.tool("ls", "README.md\n", True))


@pytest.fixture(params=AGENTS, ids=[a.name for a in AGENTS])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Project:
    return Project(tmp_path, request.param)


def _fact(project: Project) -> None:
    with FactStore(project.dir / ".agent-reminders" / "facts.db") as facts:
        facts.store_fact(
            {
                "kind": "convention",
                "claim": "We use uv for packaging, never pip install into the system Python.",
                "confidence": 0.9,
                "evidence": [{"kind": "file", "ref": "pyproject.toml"}],
            }
        )


def test_the_session_start_gives_the_project_facts_and_the_workspace(project: Project) -> None:
    (project.dir / ".agent-reminders").mkdir()
    _fact(project)
    context = project.context(project.agent.start("startup"))
    assert context is not None
    assert "We use uv for packaging" in context
    assert f"Primary workspace root: {project.dir}" in context
    # a resumed session keeps what it was told: nothing again
    if project.agent is not CURSOR:
        assert project.context(project.agent.start("resume")) is None


def test_a_pushed_reminder_arrives_once_at_the_next_turn(project: Project) -> None:
    project.context(project.agent.start("startup"))
    store = f"sqlite:{project.db}"
    project.remind("--store", store, "--session", "latest", "The release branch is frozen.")
    first = project.next_turn()
    assert first is not None
    assert first.count("The release branch is frozen.") == 1
    again = project.next_turn()
    assert again is None or "The release branch is frozen." not in again


def test_a_failing_test_run_gets_one_grounded_review(project: Project) -> None:
    project.context(project.agent.start("startup"))
    review = project.context(project.agent.tool("pytest -q", FAILING, False))
    assert review is not None
    assert review.count("Grounded review") == 1
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in review
    assert "command: pytest -q" in review
    # the same failure is not reviewed twice; a passing run gets no review
    later = project.context(project.agent.tool("pytest -q", PASSING, True))
    assert later is None or "Grounded review" not in later


def test_the_preserved_reminders_are_restated_after_compaction(project: Project) -> None:
    """Codex and Cursor restate them; Gemini gives no sign of a compaction (docs/gemini-cli.md)."""
    project.context(project.agent.start("startup"))
    store = f"sqlite:{project.db}"
    project.remind("--store", store, "--preserve-on-compact", "Never edit files under gen/.")
    assert "Never edit files under gen/." in (project.next_turn() or "")
    if project.agent is GEMINI:  # PreCompress comes before every turn: it says nothing
        assert project.context(project.agent.pre_compact()) is None
        assert project.next_turn() is None
        return
    if project.agent is CODEX:  # Codex: SessionStart with source "compact", after compaction
        restated = project.context(project.agent.start("compact"))
    else:  # Cursor: nothing at the pre-compaction event, the restatement after it
        assert project.context(project.agent.pre_compact()) is None
        restated = project.next_turn()
    assert restated is not None
    assert restated.count("Never edit files under gen/.") == 1
    # the compaction took the instructions' carrier too: the envelope explains itself again
    assert "These context directives come from the runtime" in restated


def test_a_codex_sub_agent_inherits_the_reminders(tmp_path: Path) -> None:
    project = Project(tmp_path, CODEX)
    project.context(CODEX.start("startup"))
    store = f"sqlite:{project.db}"
    project.remind("--store", store, "--propagate", "all", "Run the linters before committing.")
    project.next_turn()
    event = _base(
        hook_event_name="SubagentStart", turn_id="t", agent_id="child-1", agent_type="worker"
    )
    handed = project.context(event)
    assert handed is not None
    assert "Run the linters before committing." in handed


@pytest.mark.parametrize(
    "stdin",
    ["not json", "[1, 2]", "{}", json.dumps({"hook_event_name": "SessionStart"})],
    ids=["not-json", "not-an-object", "empty-object", "no-session"],
)
def test_bad_input_is_a_non_blocking_error_and_changes_nothing(
    project: Project, stdin: str
) -> None:
    project.context(project.agent.start("startup"))
    before = project.md5()
    done = project.raw(stdin)
    assert done.returncode == 1  # every agent's non-blocking error; 2 would block
    assert done.stdout == ""
    assert done.stderr.startswith("agent-reminders hook: ")
    assert done.stderr.count("\n") == 1
    assert project.md5() == before


def test_a_missing_field_is_a_non_blocking_error_and_changes_nothing(project: Project) -> None:
    project.context(project.agent.start("startup"))
    before = project.md5()
    event = project.payload(project.agent.tool("pytest -q", FAILING, False))
    event.pop(
        {"codex": "tool_response", "gemini-cli": "tool_response"}.get(
            project.agent.name, "tool_output"
        )
    )
    done = project.raw(json.dumps(event))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "has no" in done.stderr
    assert done.stderr.count("\n") == 1
    assert project.md5() == before


def test_an_unusable_store_is_a_non_blocking_error_and_changes_nothing(project: Project) -> None:
    project.context(project.agent.start("startup"))
    before = project.md5()
    bad = project.dir / "not-a-store.db"
    bad.write_bytes(b"this is not a SQLite file" * 100)
    event = json.dumps(project.payload(project.agent.tool("pytest -q", FAILING, False)))
    done = project.raw(event, "--store", f"sqlite:{bad}")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert bad.read_bytes() == b"this is not a SQLite file" * 100
    assert project.md5() == before


def test_concurrent_runs_of_one_session_lose_nothing(project: Project) -> None:
    project.context(project.agent.start("startup"))
    runs = 8

    def run(i: int) -> str | None:
        output = (
            f"F\nFAILED tests/test_{i}.py::test_case_{i} - assert {i} == 0\n1 failed in 0.01s\n"
        )
        return project.context(project.agent.tool(f"pytest tests/test_{i}.py", output, False))

    with ThreadPoolExecutor(max_workers=runs) as pool:
        contexts = [c or "" for c in pool.map(run, range(runs))]
    for i in range(runs):  # each run's review was delivered, once, by that run
        assert sum(f"tests/test_{i}.py::test_case_{i}" in c for c in contexts) == 1

    async def turn() -> int:
        async with SQLiteStore(project.db) as store:
            state = await store.load_session(project.session)
            assert state is not None
            return state.turn

    assert anyio.run(turn) == runs + 1  # every run's turn was saved


def test_a_session_made_by_a_hook_is_listed_with_its_agent(project: Project) -> None:
    project.context(project.agent.start("startup"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_reminders",
            "sessions",
            "--store",
            f"sqlite:{project.db}",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=project.env(),
        timeout=60,
        check=True,
    )
    [row] = json.loads(done.stdout)["sessions"]
    assert row["sessionId"] == project.session
    assert row["agent"] == project.agent.name


def test_cursor_finds_the_project_from_its_workspace_roots(tmp_path: Path) -> None:
    """A user-level Cursor hook runs in ~/.cursor/: the project comes from the input."""
    project = Project(tmp_path, CURSOR)
    elsewhere = tmp_path / "home" / ".cursor"
    elsewhere.mkdir()
    env_less = dict(project.env())
    env_less.pop("CURSOR_PROJECT_DIR")
    done = subprocess.run(
        [sys.executable, "-m", "agent_reminders", "hook", "cursor"],
        input=json.dumps(project.payload(CURSOR.start("startup"))),
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env_less,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert project.db.exists()
    assert f"Primary workspace root: {project.dir}" in json.loads(done.stdout)["additional_context"]
