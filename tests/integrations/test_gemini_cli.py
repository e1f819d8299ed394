"""The real Gemini CLI, offline, with the hook installed (``agent-reminders hook gemini-cli``).

``npm install @google/gemini-cli@0.61.0`` (pinned: the newest release; its ``engines`` asks
for Node >= 20 and it runs on Node 20) into ``.venv/gemini-cli/``. ``gemini -p`` talks to the
fake Gemini API of ``_fake_gemini`` on 127.0.0.1: ``GOOGLE_GEMINI_BASE_URL`` is the base URL
the CLI gives its ``@google/genai`` client (``httpOptions.baseUrl``), with the auth type
``gemini-api-key`` (user settings ``security.auth.selectedType``) and a dummy
``GEMINI_API_KEY``. Everything of the user is kept out: a temporary ``HOME`` and
``GEMINI_CLI_HOME`` (Gemini's own home override), no system settings
(``GEMINI_CLI_SYSTEM_SETTINGS_PATH``), no proxy, usage statistics and telemetry off (usage
statistics would otherwise post to play.googleapis.com), no auto-update, no IDE, and none of
``GITHUB_SHA``/``SURFACE`` (with them Gemini redacts every variable not on its list, such as
``PYTHONPATH``, from what hooks and tools see). The model is pinned (``model.name``), so no
routing request is made. The project folder is trusted the way the trust dialog records it
(``~/.gemini/trustedFolders.json``); in a trusted folder Gemini runs the project's hooks
non-interactively — a new project hook only draws a warning on stderr and is fingerprinted
into ``~/.gemini/trusted_hooks.json`` — so the hooks are installed with ``hook install
gemini-cli --scope project``. ``--yolo`` lets the shell tool run without a prompt.

One session is driven the way a person would: ``gemini -p hello --session-id S``; a reminder
pushed with ``agent-reminders remind --session latest``; ``gemini -p "run the tests" --resume
S``, in which the model runs the fake, failing ``pytest -q``; ``gemini -p "show me the failing
test" --resume S``, in which the compression happens; ``gemini -p "carry on" --resume S``.
A recording hook in the user settings keeps every hook input Gemini sent (and prints nothing).

What Gemini CLI 0.61.0 does with a hook's context, read from its source and seen here:

- ``SessionStart`` fires for each ``gemini -p`` run (``source`` ``startup``, then
  ``resume``). Headless, its context is put in front of the prompt:
  ``<hook_context>CONTEXT</hook_context>\\n\\nPROMPT``, one text part. On ``--resume`` Gemini
  drops every stored user message whose text starts with ``<hook_context>`` — so the first
  prompt of the session, and the facts in it, are not in the history of a resumed run.
- ``BeforeAgent`` context is a second text part of the user message,
  ``<hook_context>CONTEXT</hook_context>``. "For this turn only" is not what happens: the part
  is stored with the message, so it is re-sent with every later request of the same run and,
  after ``--resume``, with every later request of the session — unless that message started
  with a SessionStart context (then it is dropped as above) or a compression summarized it.
- ``AfterTool`` context is appended to the tool's result: ``\\n\\n<hook_context>CONTEXT
  </hook_context>`` at the end of the ``functionResponse`` ``output``; it is part of the
  result from then on. After ``--resume`` Gemini 0.61.0 sends every earlier tool result
  twice (two identical ``functionResponse`` parts in one message: it rebuilds them both from
  the tool call's stored result and from the stored function-response message).
- Gemini escapes ``<`` and ``>`` in every ``additionalContext`` (``&lt;``/``&gt;``); nothing
  else is changed.
- ``PreCompress`` (``trigger: "auto"``) fires before *every* model turn whose history is not
  empty, whether or not a compression follows: Gemini fires it before it compares the last
  prompt's token count with ``model.compressionThreshold`` (0.5 of the model's 1,048,576
  tokens). It is advisory: Gemini reads no context from it, and there is no event after a
  compression. A compression is triggered here as a real one is: the fake model reports
  ``promptTokenCount`` 700,000 with a tool call, so at the next turn of that run Gemini asks
  the model for a ``<state_snapshot>`` (two ``generateContent`` calls) and replaces the older
  history with it. ``/compress`` is no way to do this headless: the command starts the
  compression in the background and the ``-p`` run sends ``/compress`` to the model as a
  prompt at the same time.
- With nothing to add a hook may print nothing at all or ``{}``: empty stdout (and stderr)
  with exit 0 is a success with no output; ``{}`` parses to an output without context.

Opt-in (``AGENT_REMINDERS_SLOW=1``, which CI sets): the first run downloads about 100 MB.
``AGENT_REMINDERS_GEMINI_CLI_CAPTURE=FILE`` also writes every model request to FILE.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _fake_gemini import FakeGemini, GeminiRequest, Reply, texts

from agent_reminders.facts import FactStore

pytestmark = pytest.mark.skipif(
    os.environ.get("AGENT_REMINDERS_SLOW") != "1",
    reason="runs the real Gemini CLI (an npm install of ~100 MB): set AGENT_REMINDERS_SLOW=1",
)

GEMINI_CLI = "@google/gemini-cli"
VERSION = "0.61.0"
PIN = ("--no-save", f"{GEMINI_CLI}@{VERSION}")
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".venv" / "gemini-cli"
SRC = ROOT / "src"
FIXTURES = ROOT / "tests" / "fixtures" / "hook_inputs" / "gemini-cli"
MODEL = "gemini-2.5-pro"
# Above model.compressionThreshold (0.5) of gemini-2.5-pro's 1,048,576 tokens.
NEARLY_FULL = 700_000

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
TEST_FILE = "from math_utils import add\n\n\ndef test_add():\n    assert add(1, 2) == 4\n"
FACT = "We use uv for packaging, never pip install into the system Python."
PUSHED = "The release branch is frozen: do not push to it."
SUMMARY = "<state_snapshot>The user is fixing test_add in tests/test_math.py.</state_snapshot>"
RUNS = ("hello", "run the tests", "show me the failing test", "carry on")


def _escaped(text: str) -> str:
    """``text`` as Gemini hands a hook's ``additionalContext`` to the model."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _entry(prefix: Path) -> Path:
    return prefix / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"


def _working(prefix: Path, node: str) -> Path | None:
    entry = _entry(prefix)
    if not entry.is_file():
        return None
    try:
        done = subprocess.run(
            [node, str(entry), "--version"], capture_output=True, text=True, timeout=120
        )
    except OSError:
        return None
    return entry if done.returncode == 0 and done.stdout.strip() == VERSION else None


@pytest.fixture(scope="session")
def gemini() -> list[str]:
    """The command of the pinned Gemini CLI, installed into the cache on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node/npm is not installed, so {GEMINI_CLI}@{VERSION} cannot run")
    found = _working(CACHE, node)
    if found is None:
        done = subprocess.run(
            [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", *PIN],
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        found = _working(CACHE, node)
        if found is None:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"npm could not install {GEMINI_CLI}@{VERSION}: {said}")
    return [node, str(found)]


# -- the fake model -----------------------------------------------------------------------------


def _responses(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in content.get("parts") or [] if "functionResponse" in p]


def _calls(request: GeminiRequest) -> list[dict[str, Any]]:
    return [
        p["functionCall"]
        for c in request.contents
        for p in c.get("parts") or []
        if "functionCall" in p
    ]


def answer(request: GeminiRequest) -> Reply:
    """The fake model: ``pytest -q`` for "run the tests", ``cat`` of the test file (with a
    nearly full context) for "show me the failing test", a summary for the compression, else
    text."""
    if not request.streamed:  # Gemini's side requests: here only the compression's two
        return SUMMARY
    last = request.contents[-1]
    if _responses(last):
        command = _calls(request)[-1]["args"]["command"]
        if command.startswith("pytest"):
            return "test_add fails: add(1, 2) returns 3, the test expects 4."
        return "The test expects add(1, 2) == 4."
    said = "\n".join(texts(last))
    if "run the tests" in said:
        return {"function_call": {"name": "run_shell_command", "args": {"command": "pytest -q"}}}
    if "show me the failing test" in said:
        cat = {"name": "run_shell_command", "args": {"command": "cat tests/test_math.py"}}
        return {"function_call": cat, "usage": {"promptTokenCount": NEARLY_FULL}}
    return "Noted."


# -- the session --------------------------------------------------------------------------------


@dataclass
class Run:
    """One ``gemini -p`` run: its JSON result and what it sent the model."""

    prompt: str
    result: dict[str, Any]
    stderr: str
    requests: list[GeminiRequest] = field(default_factory=list)

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The bodies of the run's chat requests (``streamGenerateContent``), in order."""
        return [r.body for r in self.requests if r.streamed]

    @property
    def side(self) -> list[GeminiRequest]:
        """Its other requests (``generateContent``)."""
        return [r for r in self.requests if r.rpc == "generateContent"]


@dataclass
class Scenario:
    project: Path
    session_id: str
    runs: list[Run]
    hook_inputs: list[dict[str, Any]]  # every hook input Gemini sent, in order
    pushed_id: str
    queued: Any  # `pending --json` before the resumed run
    installed: str

    def run(self, prompt: str) -> Run:
        return next(r for r in self.runs if r.prompt == prompt)

    @property
    def turns(self) -> list[dict[str, Any]]:
        """Every chat request of the session, in order."""
        return [body for run in self.runs for body in run.turns]


_DROPPED = ("GEMINI_", "GOOGLE_", "CLOUD_SHELL", "VSCODE_", "TERM_PROGRAM")
_DROPPED_NAMES = {"GITHUB_SHA", "SURFACE", "CI", "DEBUG", "NODE_OPTIONS"}


def _env(home: Path, bindir: Path, base_url: str) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROPPED)
        and k not in _DROPPED_NAMES
        and not k.lower().endswith("_proxy")
    }
    return {
        **keep,
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(home / "no-system-settings.json"),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(SRC),  # the hook command runs this checkout's code
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": "x",
        "NO_COLOR": "1",
    }


def _cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agent_reminders", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _recorder(path: Path, into: Path) -> dict[str, Any]:
    """A user-level hook entry that keeps each hook input in ``into`` and prints nothing."""
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys, time, pathlib\n"
        f"into = pathlib.Path({str(into)!r})\n"
        "data = sys.stdin.read()\n"
        "(into / f'{time.time_ns()}.json').write_text(data, encoding='utf-8')\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    entry = [{"hooks": [{"type": "command", "command": str(path), "name": "recorder"}]}]
    return dict.fromkeys(("SessionStart", "BeforeAgent", "AfterTool", "PreCompress"), entry)


@pytest.fixture(scope="module")
def scenario(gemini: list[str], tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("gemini-cli")
    project, home, bindir, inputs = (root / n for n in ("project", "home", "bin", "inputs"))
    for folder in (project, home / ".gemini", bindir, inputs, project / "tests"):
        folder.mkdir(parents=True)
    (project / "tests" / "test_math.py").write_text(TEST_FILE, encoding="utf-8")
    fake = bindir / "pytest"
    fake.write_text(f"#!/bin/sh\ncat <<'OUT'\n{FAILING_PYTEST}OUT\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    facts = FactStore(project / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": FACT, "confidence": 0.9})
    facts.close()
    user_settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": MODEL},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "ide": {"enabled": False},
        "hooks": _recorder(root / "record-hook-input", inputs),
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(user_settings, indent=1))
    trusted = {str(project): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    store = f"sqlite:{project / '.agent-reminders' / 'state.db'}"
    session_id = str(uuid.uuid4())
    runs: list[Run] = []
    with FakeGemini(answer) as server:
        env = _env(home, bindir, server.url)
        installed = _cli(env, project, "hook", "install", "gemini-cli", "--scope", "project")

        def gemini_p(prompt: str, *session: str) -> Run:
            before = len(server.requests)
            done = subprocess.run(
                [*gemini, "-p", prompt, "--output-format", "json", "--yolo", *session],
                capture_output=True,
                text=True,
                cwd=project,
                env=env,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, done.stderr or done.stdout
            assert server.errors == []
            run = Run(prompt, json.loads(done.stdout), done.stderr, server.requests[before:])
            runs.append(run)
            return run

        gemini_p("hello", "--session-id", session_id)
        remind = ("remind", "--store", store, "--session", "latest")
        pushed_id = _cli(env, project, *remind, PUSHED)
        pending = ("pending", "--store", store, "--session", session_id, "--json")
        queued = json.loads(_cli(env, project, *pending))
        for prompt in RUNS[1:]:
            gemini_p(prompt, "--resume", session_id)
    hook_inputs = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(inputs.iterdir(), key=lambda p: int(p.stem))
    ]
    capture = os.environ.get("AGENT_REMINDERS_GEMINI_CLI_CAPTURE")
    if capture:  # what the model was sent, and what the hooks were given
        dump = {
            "runs": [
                {
                    "prompt": r.prompt,
                    "requests": [{"path": q.path, "body": q.body} for q in r.requests],
                }
                for r in runs
            ],
            "hook_inputs": hook_inputs,
        }
        Path(capture).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    return Scenario(project, session_id, runs, hook_inputs, pushed_id, queued, installed)


# -- reading the requests -----------------------------------------------------------------------


def _count(body: Any, text: str) -> int:
    return json.dumps(body, ensure_ascii=False).count(text)


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [
        p["text"]
        for c in body["contents"]
        if c["role"] == "user"
        for p in c["parts"]
        if "text" in p
    ]


def _outputs(body: dict[str, Any], command: str) -> list[str]:
    """The ``output`` of every function response to a ``run_shell_command`` of ``command``
    (matched by the call's id) in a request."""
    ids = {
        p["functionCall"].get("id")
        for c in body["contents"]
        for p in c["parts"]
        if "functionCall" in p and p["functionCall"]["args"].get("command") == command
    }
    return [
        p["functionResponse"]["response"]["output"]
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p and p["functionResponse"].get("id") in ids
    ]


# -- the checks ---------------------------------------------------------------------------------


def test_every_run_talked_only_to_the_local_server(scenario: Scenario) -> None:
    assert "SessionStart" in scenario.installed
    for run in scenario.runs:
        assert run.result["session_id"] == scenario.session_id
        assert "error" not in run.result
        assert all(r.model == MODEL for r in run.requests if r.rpc)
    assert scenario.run("hello").result["response"] == "Noted."
    assert scenario.run("run the tests").result["response"].startswith("test_add fails")
    assert [len(r.turns) for r in scenario.runs] == [1, 2, 2, 1]
    assert [len(r.side) for r in scenario.runs] == [0, 0, 2, 0]  # the compression's two


def test_the_hooks_gemini_ran(scenario: Scenario) -> None:
    """Which events fired, in order, with which inputs (the recorder saw what the library's
    hook saw: Gemini gives every matching hook the same input)."""
    fired = [
        (i["hook_event_name"], i.get("source") or i.get("trigger") or i.get("tool_name"))
        for i in scenario.hook_inputs
    ]
    one_turn = [("BeforeAgent", None), ("PreCompress", "auto")]
    tool_turn = [*one_turn, ("AfterTool", "run_shell_command"), ("PreCompress", "auto")]
    assert fired == [
        ("SessionStart", "startup"),
        *one_turn,
        ("SessionStart", "resume"),
        *tool_turn,
        ("SessionStart", "resume"),
        *tool_turn,
        ("SessionStart", "resume"),
        *one_turn,
    ]
    for hook_input in scenario.hook_inputs:
        assert hook_input["session_id"] == scenario.session_id
        assert hook_input["cwd"] == str(scenario.project)
    after = [i for i in scenario.hook_inputs if i["hook_event_name"] == "AfterTool"]
    assert after[0]["tool_input"] == {"command": "pytest -q"}
    response = after[0]["tool_response"]
    assert response["returnDisplay"] == FAILING_PYTEST.rstrip("\n")
    assert response["llmContent"].startswith(f"<untrusted_context>\nOutput: {FAILING_PYTEST}")
    assert "\nExit Code: 1\n" in response["llmContent"]
    if os.environ.get("AGENT_REMINDERS_GEMINI_CLI_FIXTURES") == "1":  # refresh the fixtures
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for name in ("SessionStart", "BeforeAgent", "AfterTool", "PreCompress"):
            first = next(i for i in scenario.hook_inputs if i["hook_event_name"] == name)
            text = json.dumps(first, indent=2, ensure_ascii=False) + "\n"
            (FIXTURES / f"{name}.json").write_text(text, encoding="utf-8")


def test_session_start_brings_the_fact_in_front_of_the_first_prompt(scenario: Scenario) -> None:
    (first,) = scenario.run("hello").turns
    assert _count(first, FACT) == 1
    (prompt,) = [t for t in _user_texts(first) if FACT in t]
    assert prompt.startswith("<hook_context>&lt;")
    assert prompt.endswith("</hook_context>\n\nhello")
    assert "<" not in prompt[len("<hook_context>") : -len("</hook_context>\n\nhello")]


def test_the_pushed_reminder_arrives_once_at_the_next_prompt(scenario: Scenario) -> None:
    assert [i["body"] for i in scenario.queued["injections"]] == [PUSHED]
    assert scenario.queued["injections"][0]["id"] == scenario.pushed_id
    first, second = scenario.run("run the tests").turns
    parts = [t for t in _user_texts(first) if PUSHED in t]
    assert len(parts) == 1
    assert parts[0].startswith("<hook_context>")
    assert parts[0].endswith("</hook_context>")
    assert _user_texts(first)[-1] == parts[0]  # the part after the prompt
    assert _user_texts(first)[-2] == "run the tests"
    # the BeforeAgent part stays in the stored message: the same text in later requests
    assert [t for t in _user_texts(second) if PUSHED in t] == parts
    for body in scenario.turns:
        assert _count(body, PUSHED) <= 1


def test_the_review_follows_the_failing_pytest_once(scenario: Scenario) -> None:
    first, second = scenario.run("run the tests").turns
    assert _count(first, "Grounded review") == 0
    (output,) = _outputs(second, "pytest -q")
    result, _, context = output.partition("\n\n<hook_context>")
    assert result.startswith(f"<untrusted_context>\nOutput: {FAILING_PYTEST}")
    assert context.endswith("</hook_context>")
    assert "Grounded review" in context
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in context
    assert "<" not in context.removesuffix("</hook_context>")  # escaped: &lt; &gt;
    assert _count(second, "Grounded review") == 1
    # every later request that re-sends the tool result carries the same bytes, once per copy
    later = scenario.turns[scenario.turns.index(second) + 1 :]
    for body in later:
        copies = _outputs(body, "pytest -q")
        assert set(copies) <= {output}
        assert _count(body, "Grounded review") == len(copies)


def test_the_compression(scenario: Scenario) -> None:
    run = scenario.run("show me the failing test")
    summarize, verify = run.side
    assert "state_snapshot" in summarize.system
    assert "Generate a new <state_snapshot>" in "".join(texts(summarize.contents[-1]))
    assert verify.contents[-2]["parts"][0]["text"] == SUMMARY
    first, second = run.turns
    assert _count(first, SUMMARY) == 0
    assert _count(second, SUMMARY) == 1  # the older history is now the summary
