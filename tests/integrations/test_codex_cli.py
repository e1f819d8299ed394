"""The real OpenAI Codex CLI, offline, with the library's hooks installed.

``npm install @openai/codex@0.171.0`` (pinned: the newest release when this was written; its
npm package ships a native musl binary, no postinstall) into ``.venv/codex/``. ``codex exec``
talks to the fake Responses API of ``_fake_responses.py`` on 127.0.0.1 through a custom model
provider in ``$CODEX_HOME/config.toml`` (``model_provider = "fake"``,
``[model_providers.fake] base_url = "http://127.0.0.1:PORT/v1"``, ``wire_api = "responses"``,
``env_key``, no retries), with ``HOME`` and ``CODEX_HOME`` temporary and ``features.plugins``
off (with plugins on, Codex looks up api.github.com and chatgpt.com at start).

The hooks go in with ``agent-reminders hook install codex --scope user`` into that
``config.toml``. Codex 0.171 runs a user or project hook only once its hash is trusted
(``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash``, written when a person
accepts "Hooks need review" in the TUI); ``codex exec`` has no such prompt and silently skips
an untrusted hook, so every run passes ``--dangerously-bypass-hook-trust`` ("for automation
that already vets hook sources"). A project install would also need the project trusted
(``codex exec --trust``, which writes ``[projects."<dir>"] trust_level = "trusted"`` into the
user config; without it Codex disables ``<project>/.codex/config.toml`` altogether), so the
user scope is the smaller step and keeps the project free of Codex files.

One session is driven the way a person would: ``codex exec`` with a first prompt, a reminder
pushed with ``agent-reminders remind --session latest`` (and one marked
``--preserve-on-compact``), ``codex exec resume --last`` in which the model runs ``pytest -q``
(a fake, failing ``pytest`` first on ``PATH``), and one more ``codex exec resume --last``.
Codex cannot be told to compact from ``codex exec`` (``/compact`` is a TUI command; a prompt
"/compact" is just text), but it compacts by itself before a turn when the last reported usage
reached ``model_auto_compact_token_limit``: the fake server reports a large ``input_tokens`` on
the answer that ends the ``pytest`` turn, so the last run starts with an automatic compaction
(local: Codex asks the model for a summary through ``/responses`` with its "CONTEXT CHECKPOINT
COMPACTION" prompt; ``PreCompact``/``PostCompact`` with ``trigger: auto``, then
``SessionStart`` with ``source: compact``).

Besides the library's hooks, a recorder hook (given with ``-c hooks=...``, a session-flags
layer, so the installed ``config.toml`` stays as the installer wrote it) saves every hook input
Codex sends. Opt-in (``AGENT_REMINDERS_SLOW=1``, which CI sets): the first run installs about
420 MB. ``AGENT_REMINDERS_CODEX_CAPTURE=DIR`` writes the model requests and one hook input per
event there (``tests/fixtures/hook_inputs/codex/`` comes from there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _agent_clis import CODEX, FAILING_PYTEST, agent_reminders, codex_env, fake_pytest, slow_only
from _codex_sessions import (
    COMPACT_AT,
    config_toml,
    is_compaction,
    last_user_text,
    session_id_in,
    texts,
)
from _fake_responses import FakeResponses, Reply, Request

from agent_reminders.facts import FactStore

pytestmark = slow_only(CODEX)

FACT = "We use uv for packaging, never pip install into the system Python."
PUSHED = "The release branch is frozen: do not push to it."
PRESERVED = "Never edit the generated files under gen/."
SUMMARY = "Summary: the user ran the tests; test_add fails (3 != 4)."
# A hook's additionalContext reaches the model as a developer message of its own, verbatim.
ENVELOPE = re.compile(r"\s*<(?:context-directives|system-reminder)\b")
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "PreModelRequest",
    "Stop",
    "SessionEnd",
)


@pytest.fixture(scope="session")
def codex() -> Path:
    """The pinned Codex CLI, installed into its npm prefix on first use."""
    return CODEX.installed_or_skip()


# -- reading a Responses request ------------------------------------------------------------------


def _messages(body: dict[str, Any], role: str) -> Iterator[str]:
    for item in body.get("input", []):
        if item.get("type") == "message" and item.get("role") == role:
            yield from texts(item)


def contexts(body: dict[str, Any]) -> list[str]:
    """Every hook additional context in a request, in order (developer messages)."""
    return [text for text in _messages(body, "developer") if ENVELOPE.match(text)]


def answer(request: Request) -> Reply:
    """The fake model: a shell call of ``pytest -q`` for "run the tests", a summary when asked
    to compact, else text. The answer that ends the ``pytest`` turn reports a prompt over the
    compaction limit, so Codex compacts before the next turn."""
    if request.path.endswith("/responses/compact"):  # remote compaction (not used for "fake")
        return Reply(text=SUMMARY)
    body = request.json
    text = last_user_text(body)
    if is_compaction(body):
        return Reply(text=SUMMARY)
    if text == "" and body.get("input", [{}])[-1].get("type") == "function_call_output":
        return Reply(
            text="test_add fails: add(1, 2) returns 3, the test expects 4.",
            input_tokens=COMPACT_AT + 20_000,
        )
    if "run the tests" in text:
        return Reply(call=("exec_command", {"cmd": "pytest -q"}))
    return Reply(text="Noted.")


def _count(body: dict[str, Any], text: str) -> int:
    return json.dumps(body, ensure_ascii=False).count(text)


# -- the session -----------------------------------------------------------------------------------


@dataclass
class Run:
    """One ``codex exec`` run: its prompt, what it printed and the model requests it made.

    Codex prints the last agent message on stdout and its transcript on stderr, with a
    ``session id: ...`` header and a ``hook: <Event> Completed|Failed|...`` line for each hook
    that ran (``--json`` leaves the hooks out, so the test reads the plain output)."""

    prompt: str
    stdout: str
    stderr: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def session_id(self) -> str | None:
        return session_id_in(self.stderr)

    @property
    def reply(self) -> str:
        return self.stdout.strip()

    @property
    def hooks(self) -> list[tuple[str, str]]:
        """(event, status) of every hook run, in order."""
        return re.findall(r"^hook: (\w+) (\w+)$", self.stderr, re.MULTILINE)


@dataclass
class Scenario:
    project: Path
    runs: list[Run]
    hook_inputs: list[dict[str, Any]]  # what the recorder hook was given, in order
    installed: str
    config: dict[str, Any]
    queued: Any  # `pending --json` before the resumed run
    left: Any  # and after the last one

    def run(self, prompt: str) -> Run:
        return next(r for r in self.runs if r.prompt == prompt)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [body for r in self.runs for body in r.requests]


RECORDER = """\
#!{python}
import json, os, sys, time
raw = sys.stdin.read()
event = json.loads(raw)["hook_event_name"]
folder = os.environ["RECORDED_HOOK_INPUTS"]
with open(os.path.join(folder, f"{{time.time_ns()}}-{{event}}.json"), "w") as f:
    f.write(raw)
"""


def _recorder_flag(recorder: Path) -> list[str]:
    """``-c hooks={...}``: the recorder for every event, in Codex's session-flags layer."""
    entry = f'[{{hooks=[{{type="command",command="{recorder}"}}]}}]'
    return ["-c", "hooks={" + ", ".join(f"{event}={entry}" for event in EVENTS) + "}"]


def _capture(folder: Path, home: Path, scenario: Scenario) -> None:
    """The model requests and one hook input per event, with the temporary paths replaced."""
    folder.mkdir(parents=True, exist_ok=True)

    def tidy(value: Any) -> Any:
        return json.loads(json.dumps(value).replace(str(home), "/home/dev"))

    runs = [{"prompt": r.prompt, "requests": r.requests} for r in scenario.runs]
    (folder / "requests.json").write_text(json.dumps(tidy(runs), indent=1, ensure_ascii=False))
    seen: set[str] = set()
    for hook_input in scenario.hook_inputs:
        name = hook_input["hook_event_name"]  # SessionStart.json is startup's; also the others
        if name == "SessionStart" and hook_input["source"] != "startup":
            name = f"SessionStart-{hook_input['source']}"
        if name in seen:
            continue
        seen.add(name)
        text = json.dumps(tidy(hook_input), indent=2, ensure_ascii=False) + "\n"
        (folder / f"{name}.json").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def scenario(codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("codex")
    home, bindir, recorded = root / "home", root / "bin", root / "hook-inputs"
    project = home / "project"
    for folder in (home / ".codex", project, bindir, recorded):
        folder.mkdir(parents=True)
    fake_pytest(bindir)
    recorder = bindir / "record-hook-input"
    recorder.write_text(RECORDER.format(python=sys.executable), encoding="utf-8")
    recorder.chmod(0o755)
    facts = FactStore(project / ".agent-reminders" / "facts.db")
    facts.store_fact({"kind": "decision", "claim": FACT, "confidence": 0.9})
    facts.close()
    store = f"sqlite:{project / '.agent-reminders' / 'state.db'}"
    config_file = home / ".codex" / "config.toml"
    runs: list[Run] = []
    with FakeResponses(answer) as server:
        config_file.write_text(config_toml(server.url), encoding="utf-8")
        env = codex_env(home, bindir, {"RECORDED_HOOK_INPUTS": str(recorded)})

        def cli(*args: str) -> str:
            return agent_reminders(env, project, *args)

        installed = cli("hook", "install", "codex", "--scope", "user")
        config = tomllib.loads(config_file.read_text(encoding="utf-8"))
        flags = (
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            *_recorder_flag(recorder),
        )

        def codex_exec(prompt: str, *command: str) -> Run:
            before = len(server.requests)
            done = subprocess.run(
                [str(codex), "exec", *command, *flags, prompt],
                capture_output=True,
                text=True,
                cwd=project,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, done.stderr or done.stdout
            assert server.errors == []
            bodies = [r.json for r in server.requests[before:] if r.path.endswith("/responses")]
            run = Run(prompt, done.stdout, done.stderr, bodies)
            runs.append(run)
            return run

        codex_exec("what is this project?")
        remind = ("remind", "--store", store, "--session", "latest")
        cli(*remind, PUSHED)
        cli(*remind, "--preserve-on-compact", PRESERVED)
        pending = ("pending", "--store", store, "--session", "latest", "--json")
        queued = json.loads(cli(*pending))
        codex_exec("run the tests", "resume", "--last")
        codex_exec("carry on", "resume", "--last")
        left = json.loads(cli(*pending))
    hook_inputs = [json.loads(p.read_text()) for p in sorted(recorded.iterdir())]
    result = Scenario(project, runs, hook_inputs, installed, config, queued, left)
    capture = os.environ.get("AGENT_REMINDERS_CODEX_CAPTURE")
    if capture:
        _capture(Path(capture), home, result)
    return result


# -- the checks ------------------------------------------------------------------------------------


def test_codex_ran_one_thread_against_the_local_server(scenario: Scenario) -> None:
    first, second, third = scenario.runs
    assert first.session_id is not None
    assert {r.session_id for r in scenario.runs} == {first.session_id}
    assert {h["session_id"] for h in scenario.hook_inputs} == {first.session_id}
    assert first.reply == "Noted."
    assert second.reply.startswith("test_add fails")
    assert [len(r.requests) for r in scenario.runs] == [1, 2, 2]  # the last one compacts first
    assert is_compaction(third.requests[0])
    (output,) = [i for i in second.requests[1]["input"] if i["type"] == "function_call_output"]
    assert "Process exited with code 1" in output["output"]
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in output["output"]


def test_no_hook_failed(scenario: Scenario) -> None:
    """Codex marks a hook Failed on a non-zero exit or an output its schema refuses (an
    unknown field, a ``hookSpecificOutput`` for PreCompact, ...), and drops its context."""
    ran = [hook for run in scenario.runs for hook in run.hooks]
    assert ran
    assert [hook for hook in ran if hook[1] != "Completed"] == []


def test_the_installer_wrote_codex_hook_tables(scenario: Scenario) -> None:
    assert scenario.installed.startswith("installed for SessionStart, UserPromptSubmit")
    hooks = scenario.config["hooks"]
    assert scenario.config["model_provider"] == "fake"  # the rest of config.toml is kept
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
        commands = [h["command"] for group in hooks[event] for h in group["hooks"]]
        assert any("hook codex" in c for c in commands), (event, commands)


def test_codex_sent_the_hooks_what_its_docs_say(scenario: Scenario) -> None:
    fired = [
        (h["hook_event_name"], h.get("source") or h.get("trigger")) for h in scenario.hook_inputs
    ]
    starts = [s for e, s in fired if e == "SessionStart"]
    assert starts == ["startup", "resume", "resume", "compact"]
    assert ("PreCompact", "auto") in fired
    assert ("PostCompact", "auto") in fired
    assert sum(e == "UserPromptSubmit" for e, _ in fired) == 3
    (post,) = [h for h in scenario.hook_inputs if h["hook_event_name"] == "PostToolUse"]
    assert post["tool_name"] == "Bash"
    assert post["tool_input"] == {"command": "pytest -q"}
    assert post["tool_response"] == FAILING_PYTEST  # the output only: no exit code
    assert {h["cwd"] for h in scenario.hook_inputs} == {str(scenario.project)}


def test_the_first_request_carries_the_project_fact_once(scenario: Scenario) -> None:
    (first,) = scenario.run("what is this project?").requests
    found = [text for text in contexts(first) if FACT in text]
    assert len(found) == 1
    assert found[0].startswith('<context-directives speaker="harness">')
    assert f"Primary workspace root: {scenario.project}" in found[0]
    assert _count(first, FACT) == 1
    for body in scenario.requests[1:-1]:  # kept in the thread, never repeated, until compaction
        assert _count(body, FACT) == 1


def test_the_pushed_reminder_arrives_once_and_stays_once(scenario: Scenario) -> None:
    assert [i["body"] for i in scenario.queued["injections"]] == [PUSHED, PRESERVED]
    assert scenario.left["pendingCount"] == 0
    first = scenario.run("what is this project?").requests[0]
    assert _count(first, PUSHED) == 0
    later = scenario.run("run the tests").requests + scenario.run("carry on").requests[:1]
    for body in later:  # both requests of the pytest turn, and the summarizer's
        assert _count(body, PUSHED) == 1
        (found,) = [t for t in contexts(body) if PUSHED in t]
        assert f'<directive authority="contract">\n{PUSHED}' in found


def test_the_failing_tool_call_brings_one_grounded_review(scenario: Scenario) -> None:
    call, after = scenario.run("run the tests").requests
    assert _count(call, "Grounded review") == 0
    reviews = [t for t in contexts(after) if "Grounded review" in t]
    assert len(reviews) == 1
    assert "FAILED tests/test_math.py::test_add - assert 3 == 4" in reviews[0]
    assert "command: pytest -q" in reviews[0]
    assert 'ttl_turns="' in reviews[0]
    assert _count(after, "Grounded review") == 1
    summarizer = scenario.run("carry on").requests[0]
    assert [t for t in contexts(summarizer) if "Grounded review" in t] == reviews


def test_hook_contexts_are_resent_byte_identical_until_compaction(scenario: Scenario) -> None:
    before = [body for body in scenario.requests if not is_compaction(body)][:-1]
    before.append(scenario.run("carry on").requests[0])  # the summarizer sees the whole thread
    for n, body in enumerate(before):
        for text in contexts(body):
            for later in before[n + 1 :]:
                assert contexts(later).count(text) == 1, text[:200]


def test_after_compaction_the_preserved_reminder_is_restated(scenario: Scenario) -> None:
    summarizer, request = scenario.run("carry on").requests
    assert is_compaction(summarizer)
    assert SUMMARY in json.dumps(request)
    restated = [t for t in contexts(request) if PRESERVED in t]
    assert len(restated) == 1
    assert _count(request, PRESERVED) == 1
    assert FACT in restated[0]  # the compacted context gets the session start again
    assert _count(request, FACT) == 1
    assert _count(request, PUSHED) == 0  # compacted away: it was not preserved
    assert _count(request, "Grounded review") == 0
