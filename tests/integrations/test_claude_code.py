"""``agent-reminders hook claude-code`` driven exactly as Claude Code drives it: one JSON object
on stdin per run, cwd = the project, ``CLAUDE_PROJECT_DIR`` set, a temporary ``HOME``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from _agent_clis import FAILING_PYTEST, cli_env

from agent_reminders.facts import FactStore
from agent_reminders.queue import QueueItem, normalize_mode, validate_reminder_payload
from agent_reminders.storage import SQLiteStore


class Project:
    """A project directory with a temporary HOME, and the hook run as Claude Code runs it."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "project"
        self.dir.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        self.db = self.dir / ".agent-reminders" / "state.db"

    def env(self) -> dict[str, str]:
        return cli_env(self.home, ("CLAUDE",), extra={"CLAUDE_PROJECT_DIR": str(self.dir)})

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
        fields = validate_reminder_payload({"body": body, **options}, grant="contract")  # type: ignore[arg-type]
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


def failed_bash(command: str, output: str) -> dict[str, Any]:
    """A Bash call that exited non-zero, as Claude Code reports it: ``PostToolUseFailure``
    with the ``error`` text and no ``tool_response``."""
    return {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_use_id": "toolu_9",
        "error": f"Exit code 1\n{output}",
        "is_interrupt": False,
    }


def test_a_failed_bash_call_gets_the_review_and_a_pass_or_a_cat_gets_none(
    project: Project,
) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    passing = "..\n2 passed in 0.01s\n"
    assert project.context(bash("pytest -q", passing)) is None
    assert project.context(bash("cat out.txt", FAILING_PYTEST, tool_use_id="toolu_2")) is None
    review = project.context(failed_bash("pytest -q", FAILING_PYTEST))
    assert review is not None
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in review


def test_an_output_claude_code_cut_to_a_preview_gets_the_truncation_notice(
    project: Project,
) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    event = bash("seq 1 100000", "1\n2\n3\n")
    event["tool_response"] |= {
        "persistedOutputPath": str(project.home / "tool-results" / "b1.txt"),
        "persistedOutputSize": 588895,
    }
    notice = project.context(event)
    assert notice is not None
    assert "The output of tool 'Bash' was truncated (original output: 588895 characters)" in notice


def test_two_sessions_are_kept_apart(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    other = {"session_id": "cc-session-2"}
    project.context({"hook_event_name": "SessionStart", "source": "startup", **other})
    project.push("Only for the first session.")
    second = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "x", **other})
    assert second is None
    first = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "x"})
    assert first is not None
    assert "Only for the first session." in first


def test_session_start_waits_for_the_prompt_and_a_resume_repeats_nothing(
    project: Project,
) -> None:
    facts = FactStore(project.dir / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": "We use uv for packaging.", "confidence": 0.9})
    facts.close()
    assert project.context({"hook_event_name": "SessionStart", "source": "startup"}) is not None
    project.push("Pushed before the prompt.")
    # a resumed session: Claude Code reloads its transcript, which holds what was said
    resumed = {"hook_event_name": "SessionStart", "source": "resume", "context_tokens": 12784}
    assert project.context(resumed) is None
    text = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    assert text is not None
    assert "Pushed before the prompt." in text
    assert "We use uv for packaging." not in text


def test_the_recap_counts_the_messages_claude_code_summarized(project: Project) -> None:
    transcript = project.home / "t.jsonl"
    entries = [
        {"type": "user", "message": {"content": "run the tests"}},
        {"type": "attachment"},
        {"type": "assistant", "message": {"content": []}},
        {"type": "user", "message": {"content": []}},
        {"type": "user", "isMeta": True, "message": {"content": "caveat"}},
        {"type": "assistant", "message": {"content": []}},
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n")
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("Never edit the generated files under gen/.", preserve_on_compact=True)
    project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    after = project.context({"hook_event_name": "SessionStart", "source": "compact"})
    assert after is not None
    assert "The conversation was compacted: 4 earlier messages were archived." in after
    # once Claude Code wrote its boundary and summary, the count is of the part before it
    summary = {"type": "user", "isCompactSummary": True, "message": {"content": "..."}}
    with transcript.open("a") as out:
        out.write(json.dumps({"type": "system", "subtype": "compact_boundary"}) + "\n")
        out.write(json.dumps(summary) + "\n")
        out.write(json.dumps({"type": "user", "message": {"content": "carry on"}}) + "\n")
        out.write(json.dumps({"type": "assistant", "message": {"content": []}}) + "\n")
    again = project.context({"hook_event_name": "SessionStart", "source": "compact"})
    assert again is not None
    assert "The conversation was compacted: 4 earlier messages were archived." in again


def test_a_subagent_inherits_session_reminders_but_not_none(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    project.push("Run the linters before you finish.", propagate="session")
    project.push("Parent-only note.", propagate="none")
    project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    text = project.context(
        {"hook_event_name": "SubagentStart", "agent_id": "a2", "agent_type": "general-purpose"}
    )
    assert text is not None
    assert "Run the linters before you finish." in text
    assert "Parent-only note." not in text


def test_ten_concurrent_remind_processes_are_all_delivered(project: Project) -> None:
    project.context({"hook_event_name": "SessionStart", "source": "startup"})
    options = ("--store", f"sqlite:{project.db}", "--session", "latest", "--ttl-turns", "5")

    def remind(i: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "agent_reminders",
                "remind",
                f"Note {i} from a watcher.",
                *options,
            ],
            capture_output=True,
            text=True,
            cwd=project.dir,
            env=project.env(),
            timeout=120,
            check=False,
        )

    with ThreadPoolExecutor(max_workers=10) as pool:
        done = list(pool.map(remind, range(10)))
    assert [d.returncode for d in done] == [0] * 10, [d.stderr for d in done]
    text = project.context({"hook_event_name": "UserPromptSubmit", "prompt": "go"})
    assert text is not None
    for i in range(10):
        assert text.count(f"Note {i} from a watcher.") == 1
    assert text.count('ttl_turns="5"') == 10


def test_concurrent_first_runs_create_the_session_once(project: Project) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(
            pool.map(
                lambda _: project.run({"hook_event_name": "SessionStart", "source": "startup"}),
                range(4),
            )
        )
    assert [r.returncode for r in runs] == [0] * 4, [r.stderr for r in runs]
    # one run started the session (the workspace anchor); the others found it started
    assert sum("Primary workspace root" in r.stdout for r in runs) == 1


def test_usage_errors_are_one_line_and_help_is_not_an_error(project: Project) -> None:
    bad = project.raw("{}", "--colour")
    assert (bad.returncode, bad.stdout, bad.stderr.count("\n")) == (1, "", 1)
    assert "unknown argument '--colour'" in bad.stderr
    missing = project.raw("{}", "--store")
    assert (missing.returncode, missing.stderr.count("\n")) == (1, 1)
    helped = project.raw("", "--help")
    assert helped.returncode == 0
    assert "--store URL" in helped.stdout
