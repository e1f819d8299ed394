"""Scripted sessions of the real, pinned Claude Code CLI, for the prompt-cache audit's fixtures.

Each scenario runs ``claude -p`` (the same pinned native binary as
``test_claude_code_cli.py``, installed with npm into ``.venv/claude-code/``) offline against a
:class:`~agent_reminders.testing.RecordingModelServer`, with ``HOME`` in a scratch folder, and
keeps:

- the transcript files Claude Code wrote under ``$HOME/.claude/projects/<project-folder>/``
  (``<session-id>.jsonl`` and, for sub-agents, ``<session-id>/subagents/agent-*.jsonl``), with
  their relative layout;
- ``requests.jsonl``: every request the server received, one JSON object a line:
  ``{"run", "prompt", "path", "query", "body"}`` (``run`` counts the ``claude -p`` calls of
  the scenario from 0; ``body`` is the parsed request body).

Plain functions, no pytest: ``run_scenario(name, claude, root)`` runs one scenario into
``root`` and returns a :class:`Recorded`; ``save_fixture(recorded, dest)`` copies what it
wrote; ``prefix_report(bodies)`` compares successive requests of one conversation.
``python tests/integrations/_claude_code_sessions.py OUT [SCENARIO...]`` regenerates the
fixtures (``tests/fixtures/transcripts/claude-code/``) and prints the prefix report.

The idle-gap scenario shifts the CLI's clock with libfaketime (``LD_PRELOAD`` of
``libfaketime.so.1`` and ``FAKETIME="+10m"``); ``faketime_library()`` finds one from the
PyPI package ``libfaketime`` (which vendors and builds it) or Debian's ``libfaketime``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_reminders.testing import RecordedRequest, RecordingModelServer

CLAUDE_CODE = "@anthropic-ai/claude-code"
VERSION = "2.1.332"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".venv" / "claude-code"
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude-code"

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

# -- the CLI --------------------------------------------------------------------------------


def _candidates(prefix: Path) -> list[Path]:
    scope = prefix / "node_modules" / "@anthropic-ai"
    return [*sorted(scope.glob("claude-code-*/claude")), scope / "claude-code/bin/claude.exe"]


def find_claude(prefix: Path = CACHE) -> Path | None:
    """The pinned CLI's binary under ``prefix`` if it is installed and runs, else ``None``."""
    for binary in _candidates(prefix):
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            continue
        try:
            done = subprocess.run(
                [str(binary), "--version"], capture_output=True, text=True, timeout=60
            )
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.startswith(VERSION):
            return binary
    return None


def install_claude(prefix: Path = CACHE) -> Path | None:
    """``npm install`` the pinned CLI into ``prefix`` (about 400 MB) unless it is there."""
    found = find_claude(prefix)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        return None
    subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
         f"{CLAUDE_CODE}@{VERSION}"],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    return find_claude(prefix)


def faketime_library() -> Path | None:
    """A ``libfaketime.so.1`` to ``LD_PRELOAD``: ``$FAKETIME_LIB``, the PyPI package
    ``libfaketime`` in this or a scratch Python, or Debian's, else ``None``."""
    given = os.environ.get("FAKETIME_LIB")
    if given and Path(given).is_file():
        return Path(given)
    try:
        import libfaketime  # type: ignore[import-not-found]

        lib = Path(libfaketime.__file__).parent / "vendor/libfaketime/src/libfaketime.so.1"
        if lib.is_file():
            return lib
    except ImportError:
        pass
    patterns = [
        "/work/scratch/cc/ftvenv/lib/python3*/site-packages/libfaketime/vendor/"
        "libfaketime/src/libfaketime.so.1",
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/*/faketime/libfaketime.so.1",
    ]
    for pattern in patterns:
        for hit in sorted(glob.glob(pattern)):
            return Path(hit)
    return None


# -- the fake model -------------------------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def _last_user(body: dict[str, Any]) -> tuple[str, bool]:
    """The text of the last user message and whether it carries a tool result."""
    for message in reversed(body.get("messages") or []):
        if message["role"] == "user":
            content = message["content"]
            results = isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            )
            return "\n".join(_blocks(message)), results
    return "", False


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or []]


def subagent_tool(body: dict[str, Any]) -> str | None:
    """The name of Claude Code's sub-agent tool in a request's tools (``Agent`` or ``Task``)."""
    names = tool_names(body)
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
    tests", the ``/compact`` summarizer an ``<analysis>``/``<summary>`` answer (without the
    tags Claude Code asks once more), a text answer to a tool result, else "Noted."; a
    sub-agent (the request whose last user text is :data:`SUBAGENT_PROMPT`) answers
    :data:`SUBAGENT_ANSWER`; "delegate" asks for a sub-agent."""
    body = request.json
    text, has_result = _last_user(body)
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


# -- a prompt cache like Anthropic's --------------------------------------------------------


def _normal_content(message: Any) -> Any:
    """A message with string content as one text block (the API reads both alike; Claude Code
    sends the last message as blocks so it can carry ``cache_control``)."""
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return {**message, "content": [{"type": "text", "text": message["content"]}]}
    return message


class PromptCache:
    """The usage Anthropic would report, to answer with (``raw_usage``): the prompt is cut into
    items (tools, system, each message; ``cache_control`` removed, string content as a text
    block), a token is 4 bytes of an item's canonical JSON. Each request writes the prefixes
    ending at its breakpoints, per model; a request reads the longest prefix, up to its last
    breakpoint, that an earlier request of the same model wrote; the rest up to the last
    breakpoint is written (``ephemeral_1h`` when that breakpoint asks ``ttl: "1h"``, else
    ``ephemeral_5m``), and what follows is plain input. ``clear()`` forgets everything (a
    cache that expired)."""

    def __init__(self) -> None:
        self._written: dict[str, set[tuple[str, ...]]] = {}

    def clear(self) -> None:
        self._written.clear()

    def usage(self, body: dict[str, Any], output_tokens: int) -> dict[str, Any]:
        items = [canonical(_normal_content(v)) for _, v in parts(body)]
        sizes = [-(-len(t.encode("utf-8")) // 4) for t in items]
        marks = [i for i, (_, v) in enumerate(parts(body)) if _has_marker(v)]
        model = str(body.get("model"))
        seen = self._written.setdefault(model, set())
        end = marks[-1] + 1 if marks else 0
        read_to = max((e for e in range(end + 1) if tuple(items[:e]) in seen), default=0)
        for e in (m + 1 for m in marks):
            seen.add(tuple(items[:e]))
        read, written = sum(sizes[:read_to]), sum(sizes[read_to:end])
        ttl = _ttl_of(parts(body)[marks[-1]][1]) if marks else None
        return {
            "input_tokens": sum(sizes) - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if ttl == "1h" else written,
                "ephemeral_1h_input_tokens": written if ttl == "1h" else 0,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


def _has_marker(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(_has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_marker(v) for v in value)
    return False


def _ttl_of(value: Any) -> str | None:
    if isinstance(value, dict):
        marker = value.get("cache_control")
        found = [_ttl_of(v) for k, v in value.items() if k != "cache_control"]
        last = next((f for f in reversed(found) if f), None)
        return last or (marker.get("ttl", "5m") if isinstance(marker, dict) else None)
    if isinstance(value, list):
        return next((t for t in (_ttl_of(v) for v in reversed(value)) if t), None)
    return None


def with_usage(
    handler: Callable[[RecordedRequest], Any], cache: PromptCache
) -> Callable[[RecordedRequest], Any]:
    """``handler`` whose replies carry ``cache``'s usage, in the Messages API's shape."""

    def reply(request: RecordedRequest) -> Any:
        answer = handler(request)
        if isinstance(request.json, dict) and isinstance(answer, dict):
            out = max(1, len(json.dumps(answer)) // 4)
            answer = {**answer, "raw_usage": cache.usage(request.json, out)}
        return answer

    return reply


# -- a session --------------------------------------------------------------------------------


@dataclass
class Run:
    """One ``claude -p`` call: its prompt, extra arguments, JSON result and model requests."""

    prompt: str
    args: tuple[str, ...]
    result: Any
    returncode: int
    stderr: str
    requests: list[RecordedRequest] = field(default_factory=list)


@dataclass
class Recorded:
    """What one scenario left: its folders, session id and runs."""

    name: str
    root: Path
    home: Path
    project: Path
    session_id: str
    runs: list[Run]

    @property
    def projects(self) -> Path:
        """``$HOME/.claude/projects``."""
        return self.home / ".claude" / "projects"

    def transcript_files(self) -> list[Path]:
        return sorted(p for p in self.projects.rglob("*") if p.is_file())

    def request_lines(self) -> list[dict[str, Any]]:
        return [
            {"run": i, "prompt": run.prompt, "path": r.path, "query": r.query, "body": r.json}
            for i, run in enumerate(self.runs)
            for r in run.requests
        ]

    def bodies(self) -> list[dict[str, Any]]:
        return [line["body"] for line in self.request_lines()]


def env_for(home: Path, bindir: Path, base_url: str) -> dict[str, str]:
    """The environment of ``test_claude_code_cli._env``."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    keep.pop("LD_PRELOAD", None)
    keep.pop("FAKETIME", None)
    return {
        **keep,
        "HOME": str(home),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "src"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "x",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


class Session:
    """Folders, a recording server and ``claude -p`` calls for one scenario.

    ``root`` gets ``project/``, ``home/``, ``bin/`` (a fake failing ``pytest``) and
    ``settings.json`` (allows ``Bash(pytest:*)``, given with ``--settings``).
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
        fake = self.bindir / "pytest"
        fake.write_text(f"#!/bin/sh\ncat <<'OUT'\n{FAILING_PYTEST}OUT\nexit 1\n", encoding="utf-8")
        fake.chmod(0o755)
        self.settings = root / "settings.json"
        self.settings.write_text(json.dumps({"permissions": {"allow": ["Bash(pytest:*)"]}}))
        if project_settings is not None:
            (self.project / ".claude").mkdir()
            (self.project / ".claude" / "settings.json").write_text(
                json.dumps(project_settings, indent=1)
            )
        self.session_id = session_id or str(uuid.uuid4())
        self.cache = PromptCache()
        self.server = RecordingModelServer(with_usage(handler, self.cache))
        self.env = env_for(self.home, self.bindir, self.server.url)
        self.runs: list[Run] = []

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

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
        done = subprocess.run(
            [str(self.claude), "-p", prompt, "--output-format", "json", *args],
            capture_output=True,
            text=True,
            cwd=self.project,
            env={**self.env, **(env or {})},
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
        return Recorded(name, self.root, self.home, self.project, self.session_id, self.runs)


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
    lib = faketime_library()
    if lib is None:
        raise RuntimeError("no libfaketime.so.1: pip install libfaketime, or set FAKETIME_LIB")
    s.first("run the tests")
    shifted = {"LD_PRELOAD": str(lib), "FAKETIME": "+10m", "DONT_FAKE_MONOTONIC": "1"}
    s.cache.clear()  # ten minutes idle: the 5-minute cache has expired
    s.resume("what is left to do?", env=shifted)


def ttl_1h(s: Session) -> None:
    """The baseline with ``ENABLE_PROMPT_CACHING_1H=1`` (an environment variable the 2.1.332
    binary reads): do the breakpoints ask for ``ttl: "1h"``?"""
    one_hour = {"ENABLE_PROMPT_CACHING_1H": "1"}
    s.first("run the tests", env=one_hour)
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


PLACEHOLDER = "/tmp/claude-code-fixture"
# Where main() runs every scenario (one after the other, emptied first): a neutral path, so the
# fixtures need no scrubbing — scrubbing would break the sha256 message hashes that Claude Code
# writes into its ``api-request`` / ``api-request-blob`` transcript entries.
SCRATCH = Path(os.environ.get("CLAUDE_CODE_FIXTURE_ROOT", PLACEHOLDER))


def _folder_name(path: str) -> str:
    """Claude Code's project folder name for a working directory (non-alphanumerics → ``-``)."""
    return "".join(c if c.isalnum() else "-" for c in path)


def save_fixture(recorded: Recorded, dest: Path, *, scrub: bool = True) -> list[Path]:
    """Copy the transcripts (relative to ``$HOME/.claude/projects``) and ``requests.jsonl``
    into ``dest`` (emptied first); the files written. ``scrub`` replaces the scenario's root
    folder by :data:`PLACEHOLDER` in names and contents (so the project folder becomes
    ``-tmp-claude-code-fixture-project``); the token counts stay those of the real paths."""
    if dest.exists():
        shutil.rmtree(dest)
    root = str(recorded.root)

    def clean(text: str) -> str:
        if not scrub:
            return text
        return text.replace(root, PLACEHOLDER).replace(
            _folder_name(root), _folder_name(PLACEHOLDER)
        )

    written = []
    for path in recorded.transcript_files():
        target = dest / clean(str(path.relative_to(recorded.projects)))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(clean(path.read_text(encoding="utf-8")), encoding="utf-8")
        written.append(target)
    requests = dest / "requests.jsonl"
    requests.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(line, ensure_ascii=False) for line in recorded.request_lines()]
    requests.write_text(clean("".join(f"{x}\n" for x in lines)), encoding="utf-8")
    return [*written, requests]


# -- prefix analysis --------------------------------------------------------------------------


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def canonical(value: Any) -> str:
    return json.dumps(strip_cache_control(value), ensure_ascii=False, sort_keys=True,
                      separators=(",", ":"))  # fmt: skip


def parts(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The prompt as cache-prefix parts in the order the API reads them."""
    system = body.get("system")
    out: list[tuple[str, Any]] = [("tools", body.get("tools")), ("system", system)]
    out.extend((f"messages[{i}]", m) for i, m in enumerate(body.get("messages") or []))
    return out


def breakpoints(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Where ``cache_control`` markers are: (location, the marker)."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            if "cache_control" in value:
                found.append((where, value["cache_control"]))
            for k, v in value.items():
                if k != "cache_control":
                    walk(v, f"{where}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]")

    for key in ("tools", "system", "messages"):
        walk(body.get(key), key)
    return found


def _first_diff(a: str, b: str, width: int = 90) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return f"@{i}: was …{a[max(0, i - 30) : i + width]!r} now …{b[max(0, i - 30) : i + width]!r}"


def compare(prev: dict[str, Any], cur: dict[str, Any]) -> dict[str, Any]:
    """Whether ``cur`` begins with ``prev``'s tools, system and messages (cache_control
    removed, canonical JSON, a message's string content taken as one text block); else the
    first differing part and a short diff."""
    p, c = parts(prev), parts(cur)
    for i, (label, value) in enumerate(p):
        if i >= len(c):
            return {"prefix": False, "first_diff": label, "diff": "missing in the later request"}
        a, b = canonical(_normal_content(value)), canonical(_normal_content(c[i][1]))
        if a != b:
            return {"prefix": False, "first_diff": label, "diff": _first_diff(a, b)}
    extra = [label for label, _ in c[len(p) :]]
    return {"prefix": True, "appended": extra}


def message_hash(message: Any) -> str:
    """The sha256 Claude Code 2.1.332 writes for a wire message in its transcript's
    ``api-request`` (``tail``) and ``api-request-blob`` (``hash``) entries: of the message with
    ``cache_control`` removed and string content as one text block, as JSON with sorted keys,
    no spaces, UTF-8 (not ASCII-escaped)."""
    text = json.dumps(strip_cache_control(_normal_content(message)), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)  # fmt: skip
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def transcript_requests(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The model requests a transcript records, rebuilt from its ``api-request`` entries:
    each is ``{"id", "agentId", "model", "hashes", "messages", "shape", "cacheControl",
    "timestamp", "querySource"}``, ``hashes`` being the base request's first ``keep`` message
    hashes then ``tail``; ``messages`` the ``api-request-blob`` messages where a blob was
    written for a hash (else ``None`` in that place: the message is the transcript's own
    entry); ``shape`` the ``api-request-shape`` (``system`` without the billing header,
    ``tools``)."""
    entries = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()]
    blobs = {e["hash"]: e["message"] for e in entries if e.get("type") == "api-request-blob"}
    shapes = {e["shapeHash"]: e["shape"] for e in entries if e.get("type") == "api-request-shape"}
    built: dict[str, list[str]] = {}
    out = []
    for e in entries:
        if e.get("type") != "api-request":
            continue
        base = built[e["base"]][: e["keep"]] if e.get("base") else []
        hashes = [*base, *e["tail"]]
        built[e["id"]] = hashes
        out.append({
            "id": e["id"],
            "agentId": e.get("agentId"),
            "model": e["params"].get("model"),
            "hashes": hashes,
            "messages": [blobs.get(h) for h in hashes],
            "shape": shapes.get(e.get("shapeHash")),
            "cacheControl": e.get("cacheControl"),
            "timestamp": e.get("timestamp"),
            "querySource": e.get("querySource"),
        })  # fmt: skip
    return out


def kind_of(body: dict[str, Any]) -> str:
    """A guess at what a request is for: ``main``, ``subagent``, ``compact``, ``side``."""
    text = _system_text(body)
    last, _ = _last_user(body)
    if COMPACT_MARK in last:
        return "compact"
    if SUBAGENT_PROMPT in json.dumps(body.get("messages")):
        first = body["messages"][0]
        if SUBAGENT_PROMPT in json.dumps(first):
            return "subagent"
    if not body.get("tools") and "You are Claude Code" not in text:
        return "side"
    return "main"


def prefix_report(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each request, its kind, model, breakpoints and the comparison with the previous
    request of the same kind (``main``, ``subagent``, …)."""
    last: dict[str, dict[str, Any]] = {}
    rows = []
    for n, body in enumerate(bodies):
        kind = kind_of(body)
        row: dict[str, Any] = {
            "n": n,
            "kind": kind,
            "model": body.get("model"),
            "messages": len(body.get("messages") or []),
            "tools": len(body.get("tools") or []),
            "breakpoints": breakpoints(body),
        }
        if kind in last:
            row["vs_previous"] = compare(last[kind], body)
        last[kind] = body
        rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path("/work/scratch/cc/runs")
    names = argv[2:] or list(SCENARIOS)
    claude = install_claude()
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
        for row in prefix_report(recorded.bodies()):
            print("  ", json.dumps(row, ensure_ascii=False)[:600])
        for path in save_fixture(recorded, out / name, scrub=False):
            print("   saved", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
