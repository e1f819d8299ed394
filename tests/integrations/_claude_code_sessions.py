"""Scripted sessions of the real, pinned Claude Code CLI, for the prompt-cache audit.

Each scenario runs ``claude -p`` (the same pinned native binary as
``test_claude_code_cli.py``: ``_agent_clis.CLAUDE_CODE``, installed with npm into
``.venv/claude-code/``, and run with the same environment) offline against a
:class:`~agent_reminders.testing.RecordingModelServer` whose answers carry the usage of the
library's simulated prompt cache (``prompt_cache=AnthropicPromptCache(clock=FakeClock())``:
the one cache rule, kept in one place), with ``HOME`` in a scratch folder. What a scenario
leaves (a :class:`Recorded`): the transcript files Claude Code wrote under
``$HOME/.claude/projects/<project-folder>/`` (``<session-id>.jsonl`` and, for sub-agents,
``<session-id>/subagents/agent-*.jsonl``), and the server's requests and replies.

An idle gap moves both clocks: the cache's :class:`~agent_reminders.testing.FakeClock` is
advanced, and the next ``claude -p`` runs under libfaketime (``LD_PRELOAD`` of
``libfaketime.so.1``, ``FAKETIME=+10m``, ``DONT_FAKE_MONOTONIC=1``) so the transcript's
timestamps move too; :func:`faketime_library` takes the library from the PyPI package
``libfaketime`` (the ``dev`` extra), which builds and vendors it.

Plain functions, no pytest: ``run_scenario(name, claude, root)`` runs one scenario into
``root``; ``save_fixture(recorded, dest)`` copies its transcripts.
``python tests/integrations/_claude_code_sessions.py [OUT [SCENARIO...]]`` regenerates the
fixtures (default ``tests/fixtures/transcripts/claude-code/``), running each scenario under
the neutral :data:`SCRATCH` path, and prints what the audit finds in each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _agent_clis import CLAUDE_CODE, ROOT, claude_env, fake_pytest

from agent_reminders.testing import (
    AnthropicPromptCache,
    FakeClock,
    RecordedRequest,
    RecordingModelServer,
)

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude-code"

# -- the CLI's clock ------------------------------------------------------------------------


def faketime_library() -> Path | None:
    """The ``libfaketime.so.1`` the PyPI package ``libfaketime`` built (``None``: not
    installed, or not built for this platform)."""
    try:
        import libfaketime  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        _, env = libfaketime.get_reload_information()
    except RuntimeError:  # a platform it does not support
        return None
    folder = env.get("LD_LIBRARY_PATH")
    lib = Path(folder) / "libfaketime.so.1" if folder else None
    return lib if lib is not None and lib.is_file() else None


# -- the fake model -------------------------------------------------------------------------


def blocks(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def last_user(body: dict[str, Any]) -> tuple[str, bool]:
    """The text of the last user message and whether it carries a tool result."""
    for message in reversed(body.get("messages") or []):
        if message["role"] == "user":
            content = message["content"]
            results = isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            )
            return "\n".join(blocks(message)), results
    return "", False


def subagent_tool(body: dict[str, Any]) -> str | None:
    """The name of Claude Code's sub-agent tool in a request's tools (``Agent`` or ``Task``)."""
    names = [t.get("name", "") for t in body.get("tools") or []]
    return next((n for n in ("Agent", "Task") if n in names), None)


COMPACT_MARK = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."
COMPACT_SUMMARY = (
    "<analysis>The user asked to run the tests; pytest -q failed.</analysis>\n"
    "<summary>1. Primary request: run the tests.\n2. Result: test_add fails, add(1, 2) "
    "returns 3 and the test expects 4.\n3. Pending: none.</summary>"
)
SUBAGENT_PROMPT = "Find where add() is defined and report the file name."
SUBAGENT_ANSWER = "add() is defined in src/math_utils.py."


def answer(request: RecordedRequest) -> dict[str, Any]:
    """The fake model of ``test_claude_code_cli.py``: a Bash call of ``pytest -q`` for "run the
    tests", the ``/compact`` summarizer an ``<analysis>``/``<summary>`` answer, a text answer
    to a tool result, else "Noted."; a sub-agent (the request whose last user text is
    :data:`SUBAGENT_PROMPT`) answers :data:`SUBAGENT_ANSWER`; "delegate" asks for a
    sub-agent. The server adds the usage its prompt cache counts."""
    body = request.json
    text, has_result = last_user(body)
    if COMPACT_MARK in text:  # the /compact summarizer: it wants <analysis> and <summary>
        return {"content": COMPACT_SUMMARY}
    if has_result:
        return {"content": "test_add fails: add(1, 2) returns 3, the test expects 4."}
    if SUBAGENT_PROMPT in text:
        return {"content": SUBAGENT_ANSWER}
    if "delegate" in text:
        tool = subagent_tool(body) or "Agent"
        call = {
            "description": "Find add()",
            "prompt": SUBAGENT_PROMPT,
            "subagent_type": "general-purpose",
        }
        return {"tool_calls": [{"id": "toolu_02", "name": tool, "arguments": call}]}
    if "run the tests" in text:
        call = {"command": "pytest -q", "description": "Run the test suite"}
        return {"tool_calls": [{"id": "toolu_01", "name": "Bash", "arguments": call}]}
    return {"content": "Noted."}


# -- a session --------------------------------------------------------------------------------


@dataclass
class Run:
    """One ``claude -p`` call: its prompt, extra arguments, JSON result and model requests."""

    prompt: str
    args: tuple[str, ...]
    result: Any
    returncode: int
    stderr: str
    requests: list[RecordedRequest]


@dataclass
class Recorded:
    """What one scenario left: its folders, session id, runs, and every request the server
    received with what it answered (``replies[i]`` is ``(status, body)`` of ``requests[i]``;
    a message's usage is its cache's)."""

    name: str
    root: Path
    home: Path
    project: Path
    session_id: str
    runs: list[Run]
    requests: list[RecordedRequest]
    replies: list[tuple[int, Any]]

    @property
    def projects(self) -> Path:
        """``$HOME/.claude/projects``."""
        return self.home / ".claude" / "projects"

    @property
    def folder(self) -> Path:
        """The project folder Claude Code wrote the session into (what the audit reads)."""
        (folder,) = [p for p in self.projects.iterdir() if p.is_dir()]
        return folder

    def transcript_files(self) -> list[Path]:
        return sorted(p for p in self.projects.rglob("*") if p.is_file())


FAKETIME = ("LD_PRELOAD", "FAKETIME", "DONT_FAKE_MONOTONIC")


class Session:
    """Folders, a recording server with a simulated prompt cache, and ``claude -p`` calls for
    one scenario.

    ``root`` gets ``project/``, ``home/``, ``bin/`` (a fake failing ``pytest``) and
    ``settings.json`` (allows ``Bash(pytest:*)``, given with ``--settings``). ``clock`` is the
    cache's; it moves only in :meth:`idle`.
    """

    def __init__(
        self,
        claude: Path,
        root: Path,
        *,
        session_id: str | None = None,
        handler: Callable[[RecordedRequest], Any] = answer,
        project_settings: dict[str, Any] | None = None,
    ) -> None:
        self.claude = claude
        self.root = root
        if root.exists():
            shutil.rmtree(root)
        self.project, self.home, self.bindir = root / "project", root / "home", root / "bin"
        for folder in (self.project, self.home, self.bindir):
            folder.mkdir(parents=True)
        fake_pytest(self.bindir)
        self.settings = root / "settings.json"
        self.settings.write_text(json.dumps({"permissions": {"allow": ["Bash(pytest:*)"]}}))
        if project_settings is not None:
            (self.project / ".claude").mkdir()
            (self.project / ".claude" / "settings.json").write_text(
                json.dumps(project_settings, indent=1)
            )
        self.session_id = session_id or str(uuid.uuid4())
        self.clock = FakeClock()
        self.server = RecordingModelServer(
            handler, prompt_cache=AnthropicPromptCache(clock=self.clock)
        )
        self.env = claude_env(self.home, self.bindir, self.server.url)
        for name in FAKETIME:  # only idle() moves the CLI's clock
            self.env.pop(name, None)
        self.runs: list[Run] = []
        self._shift = 0  # minutes the CLI's clock runs ahead (libfaketime)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    def idle(self, minutes: int) -> None:
        """``minutes`` pass with nothing sent: the cache's clock moves, and every later
        ``claude -p`` runs that much ahead under libfaketime."""
        if faketime_library() is None:
            raise RuntimeError("no libfaketime.so.1: pip install libfaketime (the dev extra)")
        self.clock.advance(minutes * 60)
        self._shift += minutes

    def claude_p(
        self,
        prompt: str,
        *extra: str,
        env: dict[str, str] | None = None,
        options: Iterable[str] = ("--allowedTools", "Bash"),
    ) -> Run:
        """``claude -p PROMPT --output-format json --settings … [options] [extra]``."""
        before = len(self.server.requests)
        args = ("--settings", str(self.settings), *options, *extra)
        shifted: dict[str, str] = {}
        if self._shift:
            shifted = {
                "LD_PRELOAD": str(faketime_library()),
                "FAKETIME": f"+{self._shift}m",
                "DONT_FAKE_MONOTONIC": "1",
            }
        done = subprocess.run(
            [str(self.claude), "-p", prompt, "--output-format", "json", *args],
            capture_output=True,
            text=True,
            cwd=self.project,
            env={**self.env, **shifted, **(env or {})},
            timeout=180,
            check=False,
        )
        try:
            result: Any = json.loads(done.stdout)
        except ValueError:
            result = done.stdout
        run = Run(prompt, tuple(extra), result, done.returncode, done.stderr,
                  list(self.server.requests[before:]))  # fmt: skip
        self.runs.append(run)
        return run

    def first(self, prompt: str, *extra: str, **kw: Any) -> Run:
        return self.claude_p(prompt, "--session-id", self.session_id, *extra, **kw)

    def resume(self, prompt: str, *extra: str, **kw: Any) -> Run:
        return self.claude_p(prompt, "--resume", self.session_id, *extra, **kw)

    def recorded(self, name: str) -> Recorded:
        return Recorded(name, self.root, self.home, self.project, self.session_id, self.runs,
                        list(self.server.requests), list(self.server.replies))  # fmt: skip


# -- the scenarios ----------------------------------------------------------------------------

# a project hook whose additionalContext differs at every run (a counter kept in a file)
COUNTER_HOOK = r"""#!/bin/sh
count="$(dirname "$0")/count"
n=$(cat "$count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$count"
event=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["hook_event_name"])')
out='{"hookSpecificOutput": {"hookEventName": "%s", "additionalContext": "hook run %s at %s"}}'
printf "$out\n" "$event" "$n" "$(date +%H:%M:%S.%N)"
"""


def _session_uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agent-reminders/claude-code/{name}"))


def baseline(s: Session) -> None:
    s.first("run the tests")
    s.resume("what is left to do?")


def idle_gap(s: Session) -> None:
    """Ten minutes idle: the 5-minute entries have expired."""
    s.first("run the tests")
    s.idle(minutes=10)
    s.resume("what is left to do?")


def ttl_1h(s: Session) -> None:
    """The idle gap with ``ENABLE_PROMPT_CACHING_1H=1`` (an environment variable the 2.1.332
    binary reads): its breakpoints ask for ``ttl: "1h"``, so the entries outlive the gap."""
    one_hour = {"ENABLE_PROMPT_CACHING_1H": "1"}
    s.first("run the tests", env=one_hour)
    s.idle(minutes=10)
    s.resume("what is left to do?", env=one_hour)


def compact(s: Session) -> None:
    s.first("run the tests")
    s.resume("/compact")
    s.resume("carry on")


def model_switch(s: Session) -> None:
    s.first("run the tests", "--model", "claude-sonnet-4-5")
    s.resume("what is left to do?", "--model", "claude-opus-4-1")
    s.resume("and now?", "--model", "claude-haiku-4-5")


def subagent(s: Session) -> None:
    s.first("delegate: find add()", options=())
    s.resume("thanks", options=())


def hook_context(s: Session) -> None:
    s.first("run the tests")
    s.resume("what is left to do?")
    s.resume("anything else?")


def _hook_settings(root: Path) -> dict[str, Any]:
    script = root / "project" / ".claude" / "hooks" / "counter.sh"
    command = {"type": "command", "command": f"sh {script}"}
    return {
        "hooks": {event: [{"hooks": [command]}] for event in ("SessionStart", "UserPromptSubmit")}
    }


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "baseline": baseline,
    "idle-gap": idle_gap,
    "ttl-1h": ttl_1h,
    "compact": compact,
    "model-switch": model_switch,
    "subagent": subagent,
    "hook-context": hook_context,
}


def run_scenario(name: str, claude: Path, root: Path) -> Recorded:
    """Run scenario ``name`` with folders under ``root`` (emptied first)."""
    settings = _hook_settings(root) if name == "hook-context" else None
    with Session(claude, root, session_id=_session_uuid(name), project_settings=settings) as s:
        if settings is not None:
            hooks = s.project / ".claude" / "hooks"
            hooks.mkdir()
            (hooks / "counter.sh").write_text(COUNTER_HOOK)
        SCENARIOS[name](s)
        return s.recorded(name)


# Where main() runs every scenario (one after the other, emptied first): a neutral path, so the
# fixtures need no scrubbing — scrubbing would break the sha256 message hashes that Claude Code
# writes into its ``api-request`` / ``api-request-blob`` transcript entries. The project folder
# is ``-tmp-claude-code-fixture-project``.
SCRATCH = Path(os.environ.get("CLAUDE_CODE_FIXTURE_ROOT", "/tmp/claude-code-fixture"))


def save_fixture(recorded: Recorded, dest: Path) -> list[Path]:
    """Copy the transcripts (relative to ``$HOME/.claude/projects``) into ``dest`` (emptied
    first); the files written."""
    if dest.exists():
        shutil.rmtree(dest)
    written = []
    for path in recorded.transcript_files():
        target = dest / path.relative_to(recorded.projects)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    from agent_reminders.audit import audit_file

    out = Path(argv[1]) if len(argv) > 1 else FIXTURES
    names = argv[2:] or list(SCENARIOS)
    claude = CLAUDE_CODE.install()[0]
    if claude is None:
        print("the pinned Claude Code CLI could not be installed", file=sys.stderr)
        return 1
    for name in names:
        recorded = run_scenario(name, claude, SCRATCH)
        print(f"== {name}: session {recorded.session_id}")
        for i, run in enumerate(recorded.runs):
            result = run.result if isinstance(run.result, dict) else {}
            print(f"  run {i} {run.prompt!r} {run.args} rc={run.returncode} "
                  f"requests={len(run.requests)} result={str(result.get('result'))[:60]!r} "
                  f"err={run.stderr.strip()[-200:]!r}")  # fmt: skip
        billed = audit_file(recorded.folder).billed
        for miss in billed.misses if billed is not None else ():
            print(f"  miss at request {miss.request}: {miss.cause} ({miss.detail})")
        for path in save_fixture(recorded, out / name):
            print("   saved", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
