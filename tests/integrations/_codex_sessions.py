"""Scripted Codex CLI sessions against the fake Responses API, for the prompt-cache audit.

Plain functions, importable by a test (``sys.path`` holding ``tests/integrations``) or run as a
script (``python tests/integrations/_codex_sessions.py OUT_DIR [SCENARIO ...]``) to write the
fixtures under ``tests/fixtures/transcripts/codex/<scenario>/``: the rollout file(s) Codex wrote
(``sessions/YYYY/MM/DD/rollout-*.jsonl``, paths kept relative to ``$CODEX_HOME``) and
``runs.json`` (each run's arguments, exit status, session id and the indexes of the requests
it made). The temporary home is written as ``/home/dev`` everywhere. The request bodies and
the usage the fake reported stay in memory (``session.server.requests``, ``.usages``,
``.responses``): a ``*.jsonl`` request log next to the rollouts would be audited with them.

The server is :class:`_fake_responses.FakeResponses` with ``cache="by_key"``: it reports
``usage.input_tokens``, ``usage.input_tokens_details.cached_tokens`` (the longest run of
leading prompt items - ``tools``, ``instructions``, each ``input`` item - equal to the previous
request's with the same ``prompt_cache_key``) and ``output_tokens``. Codex streams Responses,
which ``agent_reminders.testing.RecordingModelServer`` does not, hence this fake.

Each scenario is one Codex session, driven by ``codex exec`` then ``codex exec resume <id>``:

- ``baseline``: a prompt whose answer is one ``exec_command`` call, then a second prompt;
- ``idle_wait``: a real 10-minute pause between the runs (the npm package's Linux binary is
  a static-pie musl executable: libfaketime's ``LD_PRELOAD`` never reaches it, so its clock
  cannot be moved);
- ``model_switch``: the resumed run with ``-m other-model``;
- ``compaction``: auto-compaction before the second prompt (the fake reports an
  ``input_tokens`` over ``model_auto_compact_token_limit`` at the end of the first turn);
- ``compaction_mid_turn``: the answer calling the tool reports the large prompt instead;
- ``no_usage``: no answer reports ``usage`` at all;
- ``agents_md``: ``AGENTS.md`` in the project changed between the two runs;
- ``hook_context``: a ``SessionStart`` hook whose ``additionalContext`` differs per run;
- ``tools_change``: the resumed run with ``--disable goals``;
- ``base_instructions``: the resumed run with ``-c model_instructions_file=...``.

:func:`prefix_report` says, for each request after the first of a ``prompt_cache_key``,
whether its ``instructions``, ``tools`` and ``input`` begin with the previous request's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _agent_clis import CODEX, ROOT, codex_env
from _fake_responses import FakeResponses, Reply, Request

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "codex"
HOME_ALIAS = "/home/dev"
COMPACT_AT = 100_000  # model_auto_compact_token_limit; the fake reports more to trigger it
# Codex's own summarization prompt (codex-rs/core/templates/compact/prompt.md)
COMPACTION_PROMPT = "CONTEXT CHECKPOINT COMPACTION"
SUMMARY = "Summary: the user listed the project files; there is a README."
TOOL_COMMAND = "ls"
CACHE_TTL = 300.0  # seconds the fake keeps an idle prompt cached


# -- the fake model --------------------------------------------------------------------------------


def texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c.get("text", "") for c in content if isinstance(c, dict)]


def last_user_text(body: dict[str, Any]) -> str:
    """The last user message's text, or ``""`` when a tool output came after it."""
    for item in reversed(body.get("input", [])):
        if item.get("type") == "function_call_output":
            return ""
        if item.get("type") == "message" and item.get("role") == "user":
            return "\n".join(texts(item))
    return ""


def is_compaction(body: dict[str, Any]) -> bool:
    return COMPACTION_PROMPT in last_user_text(body)


def _compacted(body: dict[str, Any]) -> bool:
    return SUMMARY in json.dumps(body.get("input"))


def answer(
    request: Request,
    *,
    big_after_tool: bool = False,
    big_call: bool = False,
    usage: bool = True,
) -> Reply:
    """``exec_command ls`` for a prompt saying "list the files", the tool's answer after its
    output, a summary when asked to compact, else "Noted.". ``big_after_tool`` /
    ``big_call``: that answer reports an ``input_tokens`` over the compaction limit;
    ``usage=False``: no answer reports usage."""
    if not usage:
        return replace(answer(request), usage=False)
    if request.path.endswith("/responses/compact"):
        return Reply(text=SUMMARY)
    body = request.json
    if is_compaction(body):
        return Reply(text=SUMMARY)
    items = body.get("input") or [{}]
    if items[-1].get("type") == "function_call_output":
        return Reply(
            text="There is a README.md.",
            input_tokens=COMPACT_AT + 20_000 if big_after_tool else None,
        )
    if "list the files" in last_user_text(body):
        big = COMPACT_AT + 20_000 if big_call and not _compacted(body) else None
        return Reply(call=("exec_command", {"cmd": TOOL_COMMAND}), input_tokens=big)
    return Reply(text="Noted.")


# -- running Codex ---------------------------------------------------------------------------------


def config_toml(base_url: str, extra: str = "") -> str:
    """``$CODEX_HOME/config.toml``: the fake provider, no approvals, no sandbox, no plugins."""
    return f"""\
model = "gpt-fake"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
allow_login_shell = false
model_auto_compact_token_limit = {COMPACT_AT}
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake Responses API"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0
{extra}"""


def session_id_in(stderr: str) -> str | None:
    """The ``session id: ...`` header ``codex exec`` prints on stderr."""
    found = re.search(r"^session id: (\S+)$", stderr, re.MULTILINE)
    return found[1] if found else None


@dataclass
class Run:
    """One ``codex exec`` run: its arguments, output and the requests it made (indexes)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[int] = field(default_factory=list)

    @property
    def session_id(self) -> str | None:
        return session_id_in(self.stderr)


@dataclass
class Session:
    """A temporary ``HOME`` with ``CODEX_HOME`` and a project, and the fake server."""

    codex: Path
    home: Path
    server: FakeResponses
    runs: list[Run] = field(default_factory=list)

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def project(self) -> Path:
        return self.home / "project"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return codex_env(self.home, extra=extra)

    def exec(self, *args: str, env: dict[str, str] | None = None, timeout: int = 180) -> Run:
        """``codex exec ARGS`` in the project (``--skip-git-repo-check`` added)."""
        before = len(self.server.requests)
        command = [str(self.codex), "exec", *args]
        at = 2 + (1 if args and args[0] == "resume" else 0)
        command[at:at] = ["--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=self.project,
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        run = Run(list(args), done.returncode, done.stdout, done.stderr)
        run.requests = list(range(before, len(self.server.requests)))
        self.runs.append(run)
        return run

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"))

    def bodies(self) -> list[dict[str, Any]]:
        return [r.json for r in self.server.requests if r.path.endswith("/responses")]

    def save(self, folder: Path) -> None:
        """The rollout files and ``runs.json`` into ``folder``."""
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for path in self.rollouts():
            target = folder / path.relative_to(self.codex_home)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self._tidy(path.read_text(encoding="utf-8")), encoding="utf-8")
        runs = [
            {"args": r.args, "returncode": r.returncode, "requests": r.requests,
             "session_id": r.session_id}
            for r in self.runs
        ]  # fmt: skip
        (folder / "runs.json").write_text(self._tidy(json.dumps(runs, indent=1)) + "\n", "utf-8")

    def _tidy(self, text: str) -> str:
        return text.replace(str(self.home), HOME_ALIAS)


def start(
    codex: Path,
    root: Path,
    answer_fn: Callable[[Request], Reply] = answer,
    config_extra: str = "",
    cache_ttl: float | None = CACHE_TTL,
) -> Session:
    """A fresh home under ``root`` with a project (a README), config and a running server."""
    home = root / "home"
    if home.exists():
        shutil.rmtree(home)
    (home / ".codex").mkdir(parents=True)
    (home / "project").mkdir()
    (home / "project" / "README.md").write_text("# demo\n", encoding="utf-8")
    server = FakeResponses(answer_fn, cache="by_key", cache_ttl=cache_ttl)
    (home / ".codex" / "config.toml").write_text(config_toml(server.url, config_extra), "utf-8")
    return Session(codex, home, server)


# -- the scenarios ---------------------------------------------------------------------------------

FIRST = "list the files"
SECOND = "thanks, carry on"


def _two_runs(
    session: Session,
    resume_args: Sequence[str] = (),
    resume_env: dict[str, str] | None = None,
    between: Callable[[Session], None] | None = None,
) -> Session:
    """``codex exec FIRST`` then ``codex exec resume [ARGS] <id> SECOND``; the server is
    closed if a run fails, and left running (for ``records``) otherwise."""
    try:
        first = session.exec(FIRST)
        if first.returncode != 0 or first.session_id is None:
            raise RuntimeError(f"codex exec failed: {first.stderr[-2000:]}")
        if between is not None:
            between(session)
        second = session.exec("resume", *resume_args, first.session_id, SECOND, env=resume_env)
        if second.returncode != 0:
            raise RuntimeError(f"codex exec resume failed: {second.stderr[-2000:]}")
        if session.server.errors:
            raise RuntimeError(f"the fake server: {session.server.errors}")
    except BaseException:
        session.server.close()
        raise
    return session


def baseline(codex: Path, root: Path) -> Session:
    return _two_runs(start(codex, root))


def idle_wait(codex: Path, root: Path, seconds: float | None = None) -> Session:
    """A real pause (``$CODEX_IDLE_SECONDS``, default 600) between the two runs, longer than
    the fake's ``CACHE_TTL``: the resumed request's prefix is forgotten, as OpenAI forgets it."""
    pause = seconds if seconds is not None else float(os.environ.get("CODEX_IDLE_SECONDS", 600))
    return _two_runs(start(codex, root), between=lambda _: time.sleep(pause))


def model_switch(codex: Path, root: Path, model: str = "other-model") -> Session:
    return _two_runs(start(codex, root), resume_args=("-m", model))


def compaction(codex: Path, root: Path) -> Session:
    return _two_runs(start(codex, root, lambda r: answer(r, big_after_tool=True)))


def compaction_mid_turn(codex: Path, root: Path) -> Session:
    """The answer that calls the tool reports a prompt over the limit: Codex compacts within
    the turn, before it sends the tool's output."""
    return _two_runs(start(codex, root, lambda r: answer(r, big_call=True)))


def no_usage(codex: Path, root: Path) -> Session:
    """No response reports ``usage``."""
    return _two_runs(start(codex, root, lambda r: answer(r, usage=False)))


def agents_md(codex: Path, root: Path) -> Session:
    session = start(codex, root)
    (session.project / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")

    def change(s: Session) -> None:
        (s.project / "AGENTS.md").write_text("Use spaces, four of them.\n", encoding="utf-8")

    return _two_runs(session, between=change)


HOOK = """\
#!{python}
import json, sys
event = json.load(sys.stdin)
print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "SessionStart",
    "additionalContext": "Context from the hook, source " + event.get("source", "?")}}}}))
"""


def hook_context(codex: Path, root: Path) -> Session:
    """A ``SessionStart`` hook (user config) adding a context that names the start source."""
    root.mkdir(parents=True, exist_ok=True)
    hook = root / "session-start-hook"
    hook.write_text(HOOK.format(python=sys.executable), encoding="utf-8")
    hook.chmod(0o755)
    extra = (
        "\n[[hooks.SessionStart]]\n[[hooks.SessionStart.hooks]]\n"
        f'type = "command"\ncommand = "{hook}"\n'
    )
    return _two_runs(start(codex, root, config_extra=extra))


def tools_change(codex: Path, root: Path) -> Session:
    """The resumed run with ``--disable goals`` (the goal tools gone)."""
    return _two_runs(start(codex, root), resume_args=("--disable", "goals"))


def base_instructions(codex: Path, root: Path) -> Session:
    """The resumed run with ``-c model_instructions_file=...``: new base instructions."""
    session = start(codex, root)
    instructions = session.home / "instructions.md"
    instructions.write_text("You are a terse coding agent.\n", encoding="utf-8")
    setting = f'model_instructions_file="{instructions}"'
    return _two_runs(session, resume_args=("-c", setting))


SCENARIOS: dict[str, Callable[[Path, Path], Session]] = {
    "baseline": baseline,
    "idle_wait": idle_wait,
    "model_switch": model_switch,
    "compaction": compaction,
    "compaction_mid_turn": compaction_mid_turn,
    "no_usage": no_usage,
    "agents_md": agents_md,
    "hook_context": hook_context,
    "tools_change": tools_change,
    "base_instructions": base_instructions,
}


# -- the prefix check ------------------------------------------------------------------------------


def canonical(value: Any) -> str:
    """Compact JSON in the body's own key order: a stand-in for the bytes on the wire."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _first_difference(old: str, new: str, width: int = 60) -> dict[str, Any]:
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    if at is None:
        at = min(len(old), len(new))
    start = max(0, at - 20)
    return {"offset": at, "before": old[start : at + width], "after": new[start : at + width]}


def _compare_input(old: list[Any], new: list[Any]) -> dict[str, Any]:
    common = 0
    while common < min(len(old), len(new)) and canonical(old[common]) == canonical(new[common]):
        common += 1
    result: dict[str, Any] = {"prefix": common == len(old), "common_items": common,
                              "old_items": len(old), "new_items": len(new)}  # fmt: skip
    if common < len(old):
        mine = canonical(new[common]) if common < len(new) else ""
        difference = _first_difference(canonical(old[common]), mine)
        result["first_difference"] = {"item": common, **difference}
    return result


def prefix_report(bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each request after the first of its ``prompt_cache_key``: does it begin with the
    previous request of that key (``instructions`` and ``tools`` equal, ``input`` a prefix)?"""
    previous: dict[str, tuple[int, dict[str, Any]]] = {}
    report: list[dict[str, Any]] = []
    for n, body in enumerate(bodies):
        key = str(body.get("prompt_cache_key") or "")
        if key in previous:
            m, old = previous[key]
            entry: dict[str, Any] = {"request": n, "after": m, "prompt_cache_key": key}
            for name in ("instructions", "tools"):
                a, b = canonical(old.get(name)), canonical(body.get(name))
                entry[name] = {"same": a == b}
                if a != b:
                    entry[name]["first_difference"] = _first_difference(a, b)
            entry["input"] = _compare_input(old.get("input") or [], body.get("input") or [])
            entry["model"] = [old.get("model"), body.get("model")]
            report.append(entry)
        previous[key] = (n, body)
    return report


def main(argv: Sequence[str]) -> int:
    out = Path(argv[0]) if argv else FIXTURES
    names = list(argv[1:]) or list(SCENARIOS)
    codex = CODEX.install()[0]
    if codex is None:
        print(f"{CODEX.pin} is not installed and npm could not install it", file=sys.stderr)
        return 1
    scratch = Path(os.environ.get("CODEX_SESSIONS_SCRATCH", "/tmp/codex-sessions"))
    for name in names:
        session = SCENARIOS[name](codex, scratch / name)
        try:
            session.save(out / name)
            report = prefix_report(session.bodies())
            print(json.dumps({"scenario": name, "prefix": report}, indent=1))
        finally:
            session.server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
