"""The real Claude Code CLI, offline, with the hook installed (docs/claude-code.md).

``npm install @anthropic-ai/claude-code@2.1.332`` (pinned: on Node 20 an unpinned install
silently picks an old release) into ``.venv/claude-code/``; the package ships a native binary,
which runs whatever the installed Node (the package asks for Node >= 22 only for its
installer). ``claude -p`` talks to the recording server on 127.0.0.1 through
``ANTHROPIC_BASE_URL``: the server streams a ``Bash`` call of ``pytest -q`` (a fake, failing
``pytest`` first on ``PATH``), then text. One session is driven the way a person would: a
first prompt, a reminder pushed with ``agent-reminders remind --session latest``, a resumed
prompt, ``/compact``, and one more prompt; the tests read what reached the model.

Opt-in (``AGENT_REMINDERS_SLOW=1``, which CI sets): the first run downloads about 400 MB.
``AGENT_REMINDERS_CLAUDE_CODE_CAPTURE=FILE`` also writes every model request to FILE (the
example in ``docs/claude-code.md`` comes from there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _agent_clis import CLAUDE_CODE, agent_reminders, claude_env, fake_pytest, slow_only
from _claude_code_sessions import blocks, last_user

from agent_reminders.facts import FactStore
from agent_reminders.testing import RecordedRequest, RecordingModelServer

pytestmark = slow_only(CLAUDE_CODE)

FACT = "We use uv for packaging, never pip install into the system Python."
PUSHED = "The release branch is frozen: do not push to it."
PRESERVED = "Never edit the generated files under gen/."
# What Claude Code 2.1.3xx sends for a hook's additionalContext: a system-role message whose
# text is "<Event>[:<Tool>] hook additional context: <text>" (merged with other system text).
CONTEXT = re.compile(
    r"(\w+(?::\w+)?) hook additional context: "
    r"(<context-directives.*?</context-directives>|<system-reminder>.*?</system-reminder>)",
    re.DOTALL,
)


@pytest.fixture(scope="session")
def claude() -> Path:
    """The pinned Claude Code CLI, installed into its npm prefix on first use."""
    return CLAUDE_CODE.installed_or_skip()


def answer(request: RecordedRequest) -> dict[str, Any]:
    """The fake model: a Bash call of ``pytest -q`` for "run the tests", else text."""
    text, has_result = last_user(request.json)
    if has_result:
        return {"content": "test_add fails: add(1, 2) returns 3, the test expects 4."}
    if "run the tests" in text:
        call = {"command": "pytest -q", "description": "Run the test suite"}
        return {"tool_calls": [{"id": "toolu_01", "name": "Bash", "arguments": call}]}
    return {"content": "Noted."}


def contexts(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, label, text) of every hook additional context in a request, in order."""
    found: list[tuple[str, str, str]] = []
    for message in body["messages"]:
        for text in blocks(message):
            found.extend((message["role"], m[1], m[2]) for m in CONTEXT.finditer(text))
    return found


@dataclass
class Run:
    """One ``claude -p`` run: its JSON result and the model requests it made."""

    prompt: str
    result: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Scenario:
    project: Path
    session_id: str
    runs: list[Run]
    pushed_id: str
    queued: Any  # `pending --json` before the resumed run
    left: Any  # and after the last one

    def run(self, prompt: str) -> Run:
        return next(r for r in self.runs if r.prompt == prompt)


@pytest.fixture(scope="module")
def scenario(claude: Path, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("claude-code")
    project, home, bindir = root / "project", root / "home", root / "bin"
    for folder in (project, home, bindir):
        folder.mkdir()
    fake_pytest(bindir)
    facts = FactStore(project / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": FACT, "confidence": 0.9})
    facts.close()
    settings = root / "settings.json"  # given to claude --settings, beside the project's
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(pytest:*)"]}}))
    store = f"sqlite:{project / '.agent-reminders' / 'state.db'}"
    session_id = str(uuid.uuid4())
    runs: list[Run] = []
    with RecordingModelServer(answer) as server:
        env = claude_env(home, bindir, server.url)

        def cli(*args: str) -> str:
            return agent_reminders(env, project, *args)

        installed = cli("hook", "install", "claude-code", "--scope", "project")
        assert "installed for SessionStart" in installed

        options = ("--settings", str(settings), "--allowedTools", "Bash")

        def claude_p(prompt: str, *extra: str) -> Run:
            before = len(server.requests)
            done = subprocess.run(
                [str(claude), "-p", prompt, "--output-format", "json", *options, *extra],
                capture_output=True,
                text=True,
                cwd=project,
                env=env,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, done.stderr or done.stdout
            assert server.errors == []
            run = Run(prompt, json.loads(done.stdout), server.bodies()[before:])
            runs.append(run)
            return run

        claude_p("run the tests", "--session-id", session_id)
        remind = ("remind", "--store", store)
        pushed_id = cli(*remind, "--session", "latest", "--ttl-turns", "2", PUSHED)
        cli(*remind, "--session", session_id, "--preserve-on-compact", PRESERVED)
        pending = ("pending", "--store", store, "--session", session_id, "--json")
        queued = json.loads(cli(*pending))
        claude_p("what is left to do?", "--resume", session_id)
        claude_p("/compact", "--resume", session_id)
        claude_p("carry on", "--resume", session_id)
        left = json.loads(cli(*pending))
    capture = os.environ.get("AGENT_REMINDERS_CLAUDE_CODE_CAPTURE")
    if capture:  # what the model was sent, for docs/claude-code.md
        dump = [{"prompt": r.prompt, "requests": r.requests} for r in runs]
        Path(capture).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    return Scenario(project, session_id, runs, pushed_id, queued, left)


def _count(body: dict[str, Any], text: str) -> int:
    return json.dumps(body, ensure_ascii=False).count(text)


def test_every_run_talked_only_to_the_local_server(scenario: Scenario) -> None:
    first = scenario.run("run the tests")
    assert first.result["session_id"] == scenario.session_id
    assert first.result["is_error"] is False
    assert first.result["result"].startswith("test_add fails")
    assert len(first.requests) == 2  # the Bash call, then the answer


def test_session_start_brings_the_facts_and_the_workspace_once(scenario: Scenario) -> None:
    first, second = scenario.run("run the tests").requests
    (role, label, text), *_ = contexts(first)
    assert (role, label) == ("system", "SessionStart")
    assert text.startswith('<context-directives speaker="harness">')
    assert FACT in text
    assert f"Primary workspace root: {scenario.project}" in text
    assert _count(first, FACT) == 1
    assert _count(second, FACT) == 1  # Claude Code keeps it; the hook never repeats it


def test_the_second_request_carries_the_grounded_review_once(scenario: Scenario) -> None:
    second = scenario.run("run the tests").requests[1]
    reviews = [c for c in contexts(second) if c[1] == "PostToolUseFailure:Bash"]
    assert len(reviews) == 1
    role, _, text = reviews[0]
    assert role == "system"
    assert "Grounded review" in text
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in text
    assert 'ttl_turns="' in text
    assert _count(second, "Grounded review") == 1


def test_the_pushed_reminder_arrives_once_at_the_next_prompt(scenario: Scenario) -> None:
    assert [i["body"] for i in scenario.queued["injections"]] == [PUSHED, PRESERVED]
    assert scenario.queued["injections"][0]["id"] == scenario.pushed_id
    assert scenario.left == {"injections": [], "pendingCount": 0}
    (request,) = scenario.run("what is left to do?").requests
    found = [c for c in contexts(request) if PUSHED in c[2]]
    assert [c[:2] for c in found] == [("system", "UserPromptSubmit")]
    assert f'<directive authority="contract" ttl_turns="2">\n{PUSHED}' in found[0][2]
    assert _count(request, PUSHED) == 1
    assert _count(request, FACT) == 1  # a resumed session is not told its facts again
    later = scenario.run("carry on").requests[-1]
    assert _count(later, PUSHED) == 0  # compacted away: it was not preserved


def test_precompact_tells_the_summarizer_what_to_keep(scenario: Scenario) -> None:
    summarizer = scenario.run("/compact").requests[-1]
    text = "\n".join(t for m in summarizer["messages"] for t in blocks(m))
    assert "When you summarize this conversation, keep these standing instructions" in text
    assert f"- [contract] {PRESERVED}" in text
    assert PUSHED.split(":")[0] not in text.split("When you summarize")[1]


def test_after_compaction_the_preserved_reminder_is_restated(scenario: Scenario) -> None:
    request = scenario.run("carry on").requests[-1]
    restated = [c for c in contexts(request) if PRESERVED in c[2]]
    assert [c[:2] for c in restated] == [("system", "SessionStart")]
    assert "The conversation was compacted:" in restated[0][2]
    assert FACT in restated[0][2]  # the compacted context gets the session start again
    # besides: Claude Code shows the model the /compact command's output, which quotes what
    # the PreCompact hook printed
    outputs = [t for m in request["messages"] for t in blocks(m) if "<local-command-stdout>" in t]
    assert sum(PRESERVED in t for t in outputs) == 1
    assert _count(request, PRESERVED) == 2
