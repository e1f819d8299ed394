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
gemini-cli --scope project``. ``--yolo`` lets the shell tool run without a prompt. The
hook runs start the library's resident hook server, as they do in real use; it gets a folder of
its own (``AGENT_REMINDERS_HOOK_DIR``) and is let go when the session is over.

One session is driven the way a person would: ``gemini -p hello --session-id S``; a reminder
pushed with ``agent-reminders remind --session latest``; ``gemini -p "run the tests" --resume
S``, in which the model runs the fake, failing ``pytest -q``; ``gemini -p "show me the failing
test" --resume S``, in which the compression happens; ``gemini -p "carry on" --resume S``.
A recording hook in the user settings keeps every hook input Gemini sent (and prints nothing);
``tests/fixtures/hook_inputs/gemini-cli/<Event>.json`` are the first of each event.

What Gemini CLI 0.61.0 does with a hook's context, read from its source and seen here:

- ``SessionStart`` fires at the start of every ``gemini -p`` run (``source`` ``startup``,
  then ``resume``). Headless, its context goes in front of the prompt, one text part:
  ``<hook_context>CONTEXT</hook_context>\\n\\nPROMPT``. On ``--resume`` Gemini leaves out
  every stored user message whose text starts with ``<hook_context>``: the first prompt of
  the session, and the facts with it, are in no request of a resumed run (the library's
  resumed SessionStart brings nothing new).
- ``BeforeAgent`` context is a text part after the prompt's,
  ``<hook_context>CONTEXT</hook_context>``. It is not for that turn only: the part is stored
  with the prompt, so the same text goes out with every later request of the run and, after
  ``--resume``, of the session — until a compression summarizes it away (or, had that
  prompt started with a SessionStart context, until the next resume drops it). Never twice in
  one request.
- ``AfterTool`` context is appended to the tool's result, ``\\n\\n<hook_context>CONTEXT
  </hook_context>`` at the end of the ``functionResponse``'s ``output``, and stays part of
  it. After ``--resume`` Gemini 0.61.0 (0.59 and 0.60 too) sends each earlier tool result
  twice — two identical ``functionResponse`` parts in one message, rebuilt from the tool
  call's stored result and from the stored function-response message — so the review is in
  such a request twice, byte for byte the same.
- Gemini escapes ``<`` and ``>`` in every ``additionalContext`` (``&lt;``/``&gt;``) and
  changes nothing else.
- ``PreCompress`` (``trigger: "auto"``) fires before *every* model turn with a history,
  compression or not: Gemini fires it before it compares the last prompt's token count with
  ``model.compressionThreshold`` (0.5 of the model's 1,048,576 tokens). It is advisory (no
  context is read from it) and nothing fires after a compression: the hook cannot know
  whether one happened. The compression here is triggered as a real one is: with the ``cat``
  call the fake model reports ``promptTokenCount`` 700,000, so before the next turn of that
  run Gemini asks for a ``<state_snapshot>`` (two ``generateContent`` requests) and sends the
  summary in place of the older history. ``/compress`` cannot do it headless: the command
  starts the compression in the background while the ``-p`` run sends ``/compress`` to the
  model as a prompt. So the library's hook is not installed for PreCompress (or for
  SessionStart, whose context a resume drops): its work comes with BeforeAgent and
  AfterTool, and after a compression nothing is restated (docs/gemini-cli.md).
- "Nothing to add" may be empty stdout or ``{}`` (the library prints ``{}``): Gemini parses
  stdout (else stderr) when not empty; an empty one is a success without output, ``{}`` an
  output without context. Plain text on stdout with exit 0 becomes a message to the user,
  exit 1 a warning; any other non-zero exit blocks.

Opt-in (``AGENT_REMINDERS_SLOW=1``, which CI sets): the first run downloads about 100 MB.
``AGENT_REMINDERS_GEMINI_CLI_CAPTURE=FILE`` also writes every model request to FILE;
``AGENT_REMINDERS_GEMINI_CLI_FIXTURES=1`` rewrites the hook-input fixtures.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _agent_clis import (
    FAILING_PYTEST,
    GEMINI_CLI,
    ROOT,
    agent_reminders,
    cli_env,
    fake_pytest,
    slow_only,
)
from _fake_gemini import FakeGemini, GeminiRequest, Reply, texts

from agent_reminders.facts import FactStore

pytestmark = slow_only(GEMINI_CLI)

FIXTURES = ROOT / "tests" / "fixtures" / "hook_inputs" / "gemini-cli"
MODEL = "gemini-2.5-pro"
# Above model.compressionThreshold (0.5) of gemini-2.5-pro's 1,048,576 tokens.
NEARLY_FULL = 700_000

TEST_FILE = "from math_utils import add\n\n\ndef test_add():\n    assert add(1, 2) == 4\n"
FACT = "We use uv for packaging, never pip install into the system Python."
PUSHED = "The release branch is frozen: do not push to it."
SUMMARY = "<state_snapshot>The user is fixing test_add in tests/test_math.py.</state_snapshot>"
RUNS = ("hello", "run the tests", "show me the failing test", "carry on")


@pytest.fixture(scope="session")
def gemini() -> list[str]:
    """The command of the pinned Gemini CLI, installed into its npm prefix on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node/npm is not installed, so {GEMINI_CLI.pin} cannot run")
    return [node, str(GEMINI_CLI.installed_or_skip())]


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


_DROPPED = ("GEMINI_", "GOOGLE_", "CLOUD_SHELL", "VSCODE_", "TERM_PROGRAM")
_DROPPED_NAMES = {"GITHUB_SHA", "SURFACE", "CI", "DEBUG", "NODE_OPTIONS"}


def _dropped(name: str) -> bool:
    """The user's Gemini and Google settings, IDE markers, proxies and the like."""
    return name.startswith(_DROPPED) or name in _DROPPED_NAMES or name.lower().endswith("_proxy")


EVENTS = ("SessionStart", "BeforeAgent", "AfterTool", "PreCompress")


class GeminiSession:
    """A project with a fact, a temporary home whose settings point Gemini at ``server``,
    the library's hooks installed in the project, and one Gemini session driven by
    :meth:`prompt`."""

    def __init__(self, gemini: list[str], root: Path, server: FakeGemini) -> None:
        self.gemini, self.server = gemini, server
        self.project, self.home, bindir, self.inputs = (
            root / n for n in ("project", "home", "bin", "inputs")
        )
        for folder in (self.project / "tests", self.home / ".gemini", bindir, self.inputs):
            folder.mkdir(parents=True)
        (self.project / "tests" / "test_math.py").write_text(TEST_FILE, encoding="utf-8")
        fake_pytest(bindir)
        facts = FactStore(self.project / ".agent-reminders" / "facts.db")
        facts.store_fact({"kind": "decision", "claim": FACT, "confidence": 0.9})
        facts.close()
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "model": {"name": MODEL},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "ide": {"enabled": False},
            "hooks": self._recorder(root / "record-hook-input"),
        }
        gemini_home = self.home / ".gemini"
        (gemini_home / "settings.json").write_text(json.dumps(settings, indent=1))
        (gemini_home / "trustedFolders.json").write_text(
            json.dumps({str(self.project): "TRUST_FOLDER"})
        )
        gemini_env = {
            "GEMINI_CLI_HOME": str(self.home),
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(self.home / "no-system-settings.json"),
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "x",
            "NO_COLOR": "1",
            # the resident hook server the hook runs start: this session's own
            "AGENT_REMINDERS_HOOK_DIR": str(root / "hook-server"),
            "AGENT_REMINDERS_HOOK_SERVER_IDLE": "60",
        }
        self.env = cli_env(self.home, _dropped, bindir, gemini_env)
        self.store = f"sqlite:{self.project / '.agent-reminders' / 'state.db'}"
        self.session_id = str(uuid.uuid4())
        self.runs: list[Run] = []

    def _recorder(self, path: Path) -> dict[str, Any]:
        """User-level hook entries that keep each hook input in ``inputs`` and print
        nothing."""
        path.write_text(
            f"#!{sys.executable}\n"
            "import sys, time, pathlib\n"
            f"into = pathlib.Path({str(self.inputs)!r})\n"
            "data = sys.stdin.read()\n"
            "(into / f'{time.time_ns()}.json').write_text(data, encoding='utf-8')\n",
            encoding="utf-8",
        )
        path.chmod(0o755)
        entry = [{"hooks": [{"type": "command", "command": str(path), "name": "recorder"}]}]
        return dict.fromkeys(EVENTS, entry)

    def cli(self, *args: str) -> str:
        """``agent-reminders ARGS`` in the project; its stdout."""
        return agent_reminders(self.env, self.project, *args)

    def prompt(self, prompt: str) -> Run:
        """``gemini -p PROMPT``: the session's first run, or ``--resume`` it."""
        before = len(self.server.requests)
        session = ("--resume" if self.runs else "--session-id", self.session_id)
        done = subprocess.run(
            [*self.gemini, "-p", prompt, "--output-format", "json", "--yolo", *session],
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr or done.stdout
        assert self.server.errors == []
        run = Run(prompt, json.loads(done.stdout), done.stderr, self.server.requests[before:])
        self.runs.append(run)
        return run

    def close(self) -> None:
        """Let the resident hook server go (the first hook run started it, as in real use):
        it steps aside when its socket is taken away, at its next connection."""
        for path in Path(self.env["AGENT_REMINDERS_HOOK_DIR"]).glob("*.sock"):
            with socket.socket(socket.AF_UNIX) as client:
                try:
                    client.connect(str(path))
                except OSError:
                    continue
                path.unlink()

    def hook_inputs(self) -> list[dict[str, Any]]:
        """Every hook input Gemini sent, in order."""
        files = sorted(self.inputs.iterdir(), key=lambda p: int(p.stem))
        return [json.loads(p.read_text(encoding="utf-8")) for p in files]


@dataclass
class Scenario:
    project: Path
    session_id: str
    runs: list[Run]
    hook_inputs: list[dict[str, Any]]
    pushed_id: str
    queued: Any  # `pending --json` before the resumed run
    installed: str

    def run(self, prompt: str) -> Run:
        return next(r for r in self.runs if r.prompt == prompt)

    @property
    def turns(self) -> list[dict[str, Any]]:
        """Every chat request of the session, in order."""
        return [body for run in self.runs for body in run.turns]


@pytest.fixture(scope="module")
def scenario(gemini: list[str], tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    with FakeGemini(answer) as server:
        session = GeminiSession(gemini, tmp_path_factory.mktemp("gemini-cli"), server)
        try:
            installed = session.cli("hook", "install", "gemini-cli", "--scope", "project")
            session.prompt(RUNS[0])
            remind = ("remind", "--store", session.store, "--session", "latest")
            pushed_id = session.cli(*remind, PUSHED)
            pending = ("pending", "--store", session.store, "--session", session.session_id)
            queued = json.loads(session.cli(*pending, "--json"))
            for prompt in RUNS[1:]:
                session.prompt(prompt)
        finally:
            session.close()
    runs, hook_inputs = session.runs, session.hook_inputs()
    capture = os.environ.get("AGENT_REMINDERS_GEMINI_CLI_CAPTURE")
    if capture:  # what the model was sent, and what the hooks were given
        dump = {
            "runs": [
                {
                    "prompt": r.prompt,
                    "stderr": r.stderr,
                    "requests": [{"path": q.path, "body": q.body} for q in r.requests],
                }
                for r in runs
            ],
            "hook_inputs": hook_inputs,
        }
        Path(capture).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")
    return Scenario(
        session.project, session.session_id, runs, hook_inputs, pushed_id, queued, installed
    )


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
# The session's chat requests, in order (``scenario.turns``):
#   0  hello                       (startup)
#   1  run the tests               (resumed) -> the model calls pytest -q
#   2  its tool result
#   3  show me the failing test    (resumed) -> the model calls cat, "context nearly full"
#      (then the compression's two generateContent requests)
#   4  its tool result, over the compressed history
#   5  carry on                    (resumed)


def test_every_run_talked_only_to_the_local_server(scenario: Scenario) -> None:
    assert scenario.installed.startswith("installed for BeforeAgent, AfterTool in ")
    for run in scenario.runs:
        assert run.result["session_id"] == scenario.session_id
        assert "error" not in run.result
        assert all(r.model == MODEL for r in run.requests if r.rpc)
        assert "Hook(s) [" not in run.stderr  # no hook failed
    assert scenario.run("hello").result["response"] == "Noted."
    assert scenario.run("run the tests").result["response"].startswith("test_add fails")
    assert [len(r.turns) for r in scenario.runs] == [1, 2, 2, 1]
    assert [len(r.side) for r in scenario.runs] == [0, 0, 2, 0]  # the compression's two
    # a new project hook is trusted with a warning the first time, silently after that
    warning = "WARNING: The following project-level hooks have been detected"
    assert [warning in r.stderr for r in scenario.runs] == [True, False, False, False]


def test_the_hooks_gemini_ran(scenario: Scenario) -> None:
    """Which events fired, in order, with which inputs (the recorder saw what the library's
    hook saw: Gemini gives every matching hook the same input)."""
    fired = [
        (i["hook_event_name"], i.get("source") or i.get("trigger") or i.get("tool_name"))
        for i in scenario.hook_inputs
    ]
    # PreCompress comes before every model turn, whether or not Gemini compresses
    one = [("BeforeAgent", None), ("PreCompress", "auto")]
    tool = [*one, ("AfterTool", "run_shell_command"), ("PreCompress", "auto")]
    start, resume = ("SessionStart", "startup"), ("SessionStart", "resume")
    assert fired == [start, *one, resume, *tool, resume, *tool, resume, *one]
    for hook_input in scenario.hook_inputs:
        assert hook_input["session_id"] == scenario.session_id
        assert hook_input["cwd"] == str(scenario.project)
        assert hook_input["transcript_path"].endswith(".jsonl")
    after = [i for i in scenario.hook_inputs if i["hook_event_name"] == "AfterTool"]
    assert after[0]["tool_input"] == {"command": "pytest -q"}
    response = after[0]["tool_response"]
    assert response["returnDisplay"] == FAILING_PYTEST.rstrip("\n")
    assert response["llmContent"].startswith(f"<untrusted_context>\nOutput: {FAILING_PYTEST}")
    assert "\nExit Code: 1\n" in response["llmContent"]
    if os.environ.get("AGENT_REMINDERS_GEMINI_CLI_FIXTURES") == "1":  # refresh the fixtures
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for name in EVENTS:
            first = next(i for i in scenario.hook_inputs if i["hook_event_name"] == name)
            text = json.dumps(first, indent=2, ensure_ascii=False) + "\n"
            (FIXTURES / f"{name}.json").write_text(text, encoding="utf-8")


def test_the_first_prompt_brings_the_fact_and_it_stays(scenario: Scenario) -> None:
    """The session start's work comes with the first BeforeAgent (a SessionStart context
    would be glued in front of the prompt, and both dropped at the next --resume)."""
    first = scenario.turns[0]
    (part,) = [t for t in _user_texts(first) if FACT in t]
    assert _user_texts(first)[-2:] == ["hello", part]  # a part after the prompt
    assert part.startswith('<hook_context>&lt;context-directives speaker="harness"&gt;\n')
    assert part.endswith("&lt;/context-directives&gt;</hook_context>")
    assert "<" not in part[len("<hook_context>") : -len("</hook_context>")]
    assert f"Primary workspace root: {scenario.project}" in part
    # kept with the prompt, resumed runs included, once per request, until the compression
    assert [_count(body, FACT) for body in scenario.turns] == [1, 1, 1, 1, 0, 0]
    for body in scenario.turns[:4]:
        assert [t for t in _user_texts(body) if FACT in t] == [part]


def test_the_pushed_reminder_arrives_once_at_the_next_prompt(scenario: Scenario) -> None:
    assert [i["body"] for i in scenario.queued["injections"]] == [PUSHED]
    assert scenario.queued["injections"][0]["id"] == scenario.pushed_id
    first = scenario.turns[1]
    parts = [t for t in _user_texts(first) if PUSHED in t]
    assert _user_texts(first)[-2:] == ["run the tests", *parts]  # a part after the prompt
    (part,) = parts
    assert part.startswith('<hook_context>&lt;context-directives speaker="harness"&gt;\n')
    assert f'&lt;directive authority="contract"&gt;\n{PUSHED}\n&lt;/directive&gt;' in part
    assert part.endswith("&lt;/context-directives&gt;</hook_context>")
    # Not for this turn only: the part is stored with the prompt, so the same text goes out
    # with the run's next request and, resumed, with every request until the compression
    # summarized it (also to the summarizer), never twice in one request.
    assert [_count(body, PUSHED) for body in scenario.turns] == [0, 1, 1, 1, 0, 0]
    for body in scenario.turns[1:4]:
        assert [t for t in _user_texts(body) if PUSHED in t] == parts
    summarize, verify = scenario.run("show me the failing test").side
    assert _count(summarize.body, PUSHED) == _count(verify.body, PUSHED) == 1


def test_the_review_follows_the_failing_pytest_once(scenario: Scenario) -> None:
    second = scenario.turns[2]
    (output,) = _outputs(second, "pytest -q")
    result, _, context = output.partition("\n\n<hook_context>")
    assert result.startswith(f"<untrusted_context>\nOutput: {FAILING_PYTEST}")
    assert result.endswith("</untrusted_context>")
    assert context.startswith('&lt;context-directives speaker="harness"&gt;\n')
    assert context.endswith("&lt;/context-directives&gt;</hook_context>")
    assert "<" not in context.removesuffix("</hook_context>")  # escaped: &lt; &gt;
    assert "Grounded review: concrete failure signals" in context
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in context
    assert 'ttl_turns="2"' in context
    # Once in the request after the tool call; resumed, Gemini 0.61.0 sends the stored tool
    # result twice (both copies byte for byte the first); gone once compressed.
    assert [_count(body, "Grounded review") for body in scenario.turns] == [0, 0, 1, 2, 0, 0]
    assert [_outputs(body, "pytest -q") for body in scenario.turns[2:4]] == [
        [output],
        [output, output],
    ]


def test_the_compression(scenario: Scenario) -> None:
    """Triggered by the reported prompt size; PreCompress had fired before it (and before
    every other turn); nothing follows it but the next model request."""
    run = scenario.run("show me the failing test")
    summarize, verify = run.side
    assert "state_snapshot" in summarize.system
    assert "Generate a new <state_snapshot>" in "".join(texts(summarize.contents[-1]))
    assert verify.contents[-2]["parts"][0]["text"] == SUMMARY
    assert run.requests.index(summarize) == 1  # between the cat call and its result
    second = run.turns[1]
    assert [_count(body, SUMMARY) for body in scenario.turns] == [0, 0, 0, 0, 1, 1]
    assert _user_texts(second)[1:3] == [SUMMARY, "show me the failing test"]
    assert _outputs(second, "cat tests/test_math.py")[0].startswith(
        f"<untrusted_context>\nOutput: {TEST_FILE}"
    )
    assert "<hook_context>" not in json.dumps(second["contents"])  # nothing new from hooks


# -- a reminder marked preserve_on_compact ------------------------------------------------------

PRESERVED = "Never edit the generated files under gen/."


@pytest.fixture(scope="module")
def preserved(gemini: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    with FakeGemini(answer) as server:
        session = GeminiSession(gemini, tmp_path_factory.mktemp("gemini-cli-preserved"), server)
        try:
            session.cli("hook", "install", "gemini-cli", "--scope", "project")
            session.prompt("hello")
            remind = ("remind", "--store", session.store, "--session", session.session_id)
            session.cli(*remind, "--preserve-on-compact", PRESERVED)
            session.prompt("run the tests")
        finally:
            session.close()
    return session.runs


def test_a_preserved_reminder_is_not_repeated_without_a_compression(
    preserved: list[Run],
) -> None:
    """PreCompress fires before every model turn, compression or not: the hook does not read
    it as one, so a preserve_on_compact reminder is stated once and kept, not again."""
    counts = [_count(body, PRESERVED) for run in preserved for body in run.turns]
    assert counts == [0, 1, 1]
