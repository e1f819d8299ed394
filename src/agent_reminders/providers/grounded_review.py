"""Canonical provider ``grounded_review``: concrete failure evidence to address
(see docs/session-loop.md, "Canonical providers").

It fires only on evidence a reviewer could point at: a tool result with ``ok=False``, failing
verifier signals, error diagnostics, or failure lines printed by a verification command (pytest,
cargo, go test, tsc, mypy, ruff, eslint, npm/pnpm/yarn test, make test). It never reads meaning
into text the agent merely looked at (file-viewing tools), never counts warnings unless asked to,
and never treats a line that reports success as a failure.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .base import (
    ConfigSchema,
    ProviderContext,
    ProviderResult,
    ProviderSpec,
    canonical_reminder,
    command_of,
    mapping_or_empty,
)

__all__ = ["CONFIG", "DEFAULT_MAX_FINDINGS", "PROVIDER", "evaluate"]

DEFAULT_MAX_FINDINGS = 6
_MIN_FINDINGS, _MAX_FINDINGS = 1, 20
_SUMMARY_CHARS = 200
_COMMAND_CHARS = 80


_Where = Callable[[], str]  # the provenance of a record's findings, built on first use


class _Finding(NamedTuple):
    source: str  # tool_error | verifier | diagnostic | verification_output
    summary: str
    provenance: str


# Failure (and warning) line formats per tool: (severity, pattern). A pattern matches from the
# start of a line; "warning" rows only count when the config sets include_warnings.
_E, _W = "error", "warning"
_PATTERN_SOURCE: dict[str, tuple[tuple[str, str], ...]] = {
    "pytest": (
        (_E, r"(?:FAILED|ERROR):? \S"),  # short summary lines, usage errors
        (_E, r"\S+::\S.*\s(?:FAILED|ERROR)\b"),  # -v progress lines
        (_E, r"(?=.*\b[1-9]\d* (?:failed|errors?)\b)(?:=+ )?\d+ \w+.* in [\d.]+s\b"),
        (_E, r"!+ Interrupted: .+"),
    ),
    "cargo": (
        (_E, r"error(?:\[E\d+\])?: .+"),
        (_E, r"test result: FAILED\."),
        (_E, r"test \S+ \.\.\. FAILED$"),
        (_W, r"warning: .+"),
    ),
    "go": (
        (_E, r"\s*--- FAIL: \S"),
        (_E, r"FAIL\s+\S"),  # "FAIL\tpkg\t0.012s" (a bare "FAIL" says nothing new)
        (_E, r"\S+\.go:\d+:\d+: \S"),  # compile errors
        (_E, r"panic: .+"),
    ),
    "tsc": (
        (_E, r"\S.*\(\d+,\d+\): error TS\d+: "),
        (_E, r"\S.*:\d+:\d+ - error TS\d+: "),
        (_E, r"error TS\d+: "),
        (_E, r"(?:\[[^\]]+\] )?Found [1-9]\d* errors?\b"),
    ),
    "mypy": (
        (_E, r"\S+:(?:\d+:){0,2} error: .+"),
        (_E, r"Found [1-9]\d* errors? in \d+ files?"),
    ),
    "ruff": (
        (_E, r"\S+:\d+:\d+: (?:[A-Z]{1,6}\d{2,4}\b|SyntaxError:)"),
        (_E, r"[A-Z]{1,6}\d{2,4} (?:\[\*\] )?\S"),  # ruff >= 0.12: code first, "-->" below
        (_E, r"Found [1-9]\d* errors?\b"),
    ),
    "eslint": (
        (_E, r"\s+\d+:\d+\s+error\s+\S"),
        (_W, r"\s+\d+:\d+\s+warning\s+\S"),
        (_E, r"✖ \d+ problems? \([1-9]\d* errors?"),
    ),
    "npm": (
        (_E, r"npm (?:ERR!|error) (?:Test failed|code |Exit status|Failed at|command failed)"),
        (_E, r"\s*(?:ELIFECYCLE|ERR_PNPM_\w+)\s+\S"),
        (_E, r"error Command failed with exit code \d+"),  # yarn
        (_E, r"\s*FAIL\s+\S"),  # jest / vitest
        (_E, r"\s*(?:Tests|Test Files|Test Suites):?\s+[1-9]\d* failed\b"),
        (_E, r"\s*[1-9]\d* failing$"),  # mocha
    ),
    "make": ((_E, r"g?make(?:\[\d+\])?: \*\*\* .+"),),
}


@functools.cache
def _patterns(tool: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """``tool``'s rows of ``_PATTERN_SOURCE``, compiled when output is first read (a hook
    process for a prompt reads none, and the patterns of every tool cost milliseconds)."""
    return tuple((sev, re.compile(rx)) for sev, rx in _PATTERN_SOURCE[tool])


# npm and make run other tools, so their output is read with every tool's patterns.
_WRAPPERS = frozenset({"npm", "make"})

# Without a known command, output must carry one of these unmistakable marks to be read at all.
_SIGNATURE_SOURCE = {
    "pytest": r"^=+ (?:test session starts|FAILURES|ERRORS|short test summary info) =+$"
    r"|^(?:=+ )?\d+ (?:passed|failed|errors?)\b.* in [\d.]+s\b",
    "cargo": r"^test result: (?:ok|FAILED)\.|^error\[E\d{4}\]: |^error: could not compile "
    r"|^\s+(?:Compiling|Checking) \S+ v\d+\.\d+",
    "go": r"^--- (?:FAIL|PASS): \S|^(?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[)",
    "tsc": r"^\S.*(?:\(\d+,\d+\):|:\d+:\d+ -) error TS\d+: |^error TS\d+: ",
    "mypy": r"^Found \d+ errors? in \d+ files? \(checked |^Success: no issues found in "
    r"|^\S+\.pyi?:\d+:(?:\d+:)? error: .*\[[\w-]+\]$",
    "ruff": r"^\S+:\d+:\d+: [A-Z]{1,6}\d{2,4} |^[A-Z]{1,6}\d{2,4} .*\n\s*--> \S+:\d+:\d+$",
    "eslint": r"^✖ \d+ problems? \(",
    "npm": r"^> \S+ test(?:[:\-]\S*)?(?: \S+)?$|^npm (?:ERR!|error) Test failed"
    r"|^\s*ELIFECYCLE\s+Test failed|^(?:Tests|Test Suites):\s+\d",
    "make": r"^g?make(?:\[\d+\])?: \*\*\* ",
}


@functools.cache
def _signatures() -> dict[str, re.Pattern[str]]:
    """``_SIGNATURE_SOURCE`` compiled, when output is first read (as ``_patterns``)."""
    return {tool: re.compile(rx, re.MULTILINE) for tool, rx in _SIGNATURE_SOURCE.items()}


# Lines that report success never count, even when a failure pattern would match them.
_SUCCESS = re.compile(
    r"(?i:(?<![\w.:])0 (?:failed|failures?|errors?|problems?|remaining)\b|\bfailures?: 0\b)"
    r"|^test result: ok\b|\bSuccess: no issues found|\bAll checks passed!|^ok\s+\S|^\s*--- PASS\b"
)
# Test runners end a passing line with PASSED / ok ("... ok", "PASSED  [ 50%]"); a FAILED or
# ERROR summary line may quote an "ok" at its end and still be a failure.
_TRAILING_OK = re.compile(r"(?!(?:FAILED|ERROR)\b).*(?:^|\s)(?:PASSED|ok)(?:\s+\[\s*\d+%\])?\s*$")
_ESLINT_ROW = re.compile(r"\s+\d+:\d+\s")
_LOCATION = re.compile(r"\s*--> (\S+)")  # rustc / clippy / ruff put the location below
_BANNER = re.compile(r"^[=!]{3,} | [=!]{3,}$")  # pytest's "=== ... ===" decoration
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERRORISH = re.compile(r"(?i)error|exception|fail|fatal|denied|not found|no such|invalid|cannot")

# File-viewing tools: what they show is file content, not something that happened in the run.
_VIEWERS = frozenset(
    {
        *("read", "read_file", "read_files", "read_many_files", "view", "view_file", "open"),
        *("open_file", "cat", "head", "tail", "less", "more", "bat", "batcat", "nl", "grep"),
        *("egrep", "fgrep", "rg", "ripgrep", "ag", "grep_search", "search_files", "find"),
        *("find_files", "fd", "glob", "ls", "list_dir", "list_files", "list_directory", "tree"),
    }
)
_NOT_PROGRAMS = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "true"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", "(", ")", ";;"})
_PREFIXES = frozenset({"time", "nice", "nohup", "sudo", "command", "exec", "stdbuf", "env"})
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})  # "<runner> run ..."
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?$")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_TEST_SCRIPT = re.compile(r"test(?:[:\-_.]\S*)?$")
_MAKE_TARGET = re.compile(r"(?:test|tests|check)(?:[-_:.]\S*)?$")
_VALUE_FLAGS = frozenset({"-C", "-f", "--file", "--directory", "--filter", "-F", "--dir", "--cwd"})
_RUFF_OTHER = frozenset({"format", "server", "rule", "config", "linter", "clean", "version"})


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _oneline(text: str, limit: int = _SUMMARY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1].lower()


def _drop_options(words: list[str]) -> list[str]:
    while words and words[0].startswith("-"):
        words = words[1:]
    return words


def _positional(args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in args:
        if skip or word.startswith(("-", "+")) or _ASSIGNMENT.match(word):
            skip = word in _VALUE_FLAGS
            continue
        if word == "--":
            break
        out.append(word)
    return out


def _unwrap(words: list[str]) -> list[str]:
    """Strip env assignments and wrappers (``timeout 60``, ``uv run``, ``npx``, ``python -m``)."""
    while words:
        head, rest = _base(words[0]), words[1:]
        if _ASSIGNMENT.match(words[0]):
            words = rest
        elif head in _PREFIXES:
            words = _drop_options(rest)
        elif head == "timeout":
            words = _drop_options(rest)[1:]
        elif head in _RUNNERS and rest[:1] == ["run"]:
            words = _drop_options(rest[1:])
        elif head in ("npx", "bunx", "pnpx"):
            words = _drop_options(rest)
        elif head in ("npm", "pnpm", "yarn") and rest[:1] in (["exec"], ["dlx"], ["x"]):
            words = _drop_options(rest[1:])
        elif head in ("pnpm", "yarn") and rest[:1] in (["tsc"], ["eslint"]):
            words = rest
        elif _PYTHON.match(head) and rest[:1] == ["-m"]:
            words = rest[1:]
        else:
            break
    return words


# What shlex treats specially on one line (quotes, escape, comment, punctuation), and the
# characters it splits words on: a line with none of the former splits on the latter alone.
_SHELL_SPECIAL = re.compile(r"[\"'\\#();<>|&]")
_SHELL_WORD = re.compile(r"[^ \t\r\n]+")


def _shell_words(line: str) -> list[str]:
    """The words of one shell line, as ``shlex`` (POSIX, punctuation split off) gives them.

    A line without quotes, escapes, comments or punctuation — most commands an agent runs —
    is split on whitespace directly: the same words, without shlex's per-character loop.
    """
    if _SHELL_SPECIAL.search(line) is None:
        return _SHELL_WORD.findall(line)
    import shlex  # only for such a line: most commands, and most hook processes, need none

    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True  # keep "+nightly", "test:unit", "a::b" whole
        return list(lexer)
    except ValueError:  # unbalanced quotes: a rough split is still good enough here
        return re.sub(r"(&&|\|\||[;|&()])", r" \1 ", line).split()


def _simple_commands(command: str, depth: int = 0) -> list[list[str]]:
    """Split a shell command line into its simple commands, each unwrapped to its program."""
    out: list[list[str]] = []
    for line in command.splitlines():
        tokens = _shell_words(line)
        current: list[str] = []
        for token in [*tokens, ";"]:
            if token not in _SEPARATORS:
                current.append(token)
                continue
            words = _unwrap(current)
            current = []
            if words and _base(words[0]) in _SHELLS and depth < 3:
                script = next((w for w in words[1:] if not w.startswith("-")), "")
                out.extend(_simple_commands(script, depth + 1))
            elif words:
                out.append(words)
    return out


def _verifier_of(words: list[str]) -> str | None:
    """Name the verification tool a simple command runs, or ``None``."""
    head, args = _base(words[0]), _positional(words[1:])
    sub = args[0] if args else None
    if head in ("pytest", "py.test"):
        return "pytest"
    if head == "cargo" and sub in ("test", "t", "check", "c", "clippy"):
        return "cargo"
    if head == "go" and sub == "test":
        return "go"
    if head in ("tsc", "mypy", "eslint"):
        return head
    if head == "dmypy":
        return "mypy"
    if head == "ruff" and sub not in _RUFF_OTHER:  # "ruff check" or the legacy bare "ruff ."
        return "ruff"
    if head in ("npm", "pnpm", "yarn") and sub is not None:
        script = args[1] if len(args) > 1 else ""
        is_run = sub in ("run", "run-script") and bool(_TEST_SCRIPT.match(script))
        return "npm" if sub in ("test", "t", "tst") or is_run else None
    if head in ("make", "gmake") and any(_MAKE_TARGET.match(a) for a in args):
        return "make"
    return None


@functools.lru_cache(maxsize=512)
def _classify(tool: str, command: str | None) -> tuple[str | None, bool]:
    """Return ``(verification tool or None, is_file_viewer)`` for one tool call.

    A pure function of its arguments, remembered: one tool call is classified for
    ``post_tool_use`` and again for ``post_step``, and shell-splitting is the costly part.
    """
    name = re.split(r"__|\.", tool.lower().replace("-", "_"))[-1]
    if name in _VIEWERS:
        return None, True
    if command is None:
        return None, False
    commands = _simple_commands(command)
    for words in commands:
        verifier = _verifier_of(words)
        if verifier:
            return verifier, False
    main = next((w for w in commands if _base(w[0]) not in _NOT_PROGRAMS), None)
    if main is None:
        return None, False
    head = _base(main[0])
    quiet_sed = head == "sed" and any(w in ("-n", "--quiet", "--silent") for w in main[1:])
    return None, head in _VIEWERS or quiet_sed


def _failure_lines(content: str, tools: tuple[str, ...], include_warnings: bool) -> list[str]:
    """Extract failure lines, in order, using the patterns of ``tools``."""
    if any(t in _WRAPPERS for t in tools):
        tools = tuple(_PATTERN_SOURCE)
    patterns = [row for t in tools for row in _patterns(t)]
    lines = _ANSI.sub("", content).splitlines()
    header = ""  # eslint prints the file once, above its rows
    out: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _SUCCESS.search(line) or _TRAILING_OK.match(line):
            continue
        severity = next((sev for sev, rx in patterns if rx.match(line)), None)
        if severity is None:
            header = header if line[0].isspace() else line.strip()
            continue
        if severity == _W and not include_warnings:
            continue
        text = _BANNER.sub("", line.strip())
        if header and _ESLINT_ROW.match(line):
            text = f"{header}: {text}"
        for follow in lines[index + 1 : index + 3]:
            found = _LOCATION.match(follow)
            if found:
                text = f"{text} ({found.group(1)})"
                break
        out.append(_oneline(text))
    return out


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):  # content blocks: keep their text parts
        parts = [
            b if isinstance(b, str) else b.get("text") if isinstance(b, Mapping) else None
            for b in content
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _error_summary(content: str) -> str:
    lines = [line.strip() for line in _ANSI.sub("", content).splitlines() if line.strip()]
    if not lines:
        return "the tool reported an error (no output)"
    # The last error-looking line is usually the conclusion (a traceback's exception line).
    errorish = [line for line in lines if _ERRORISH.search(line)]
    return _oneline(errorish[-1] if errorish else lines[0])


def _command_text(value: object) -> str | None:
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        value = " ".join(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _command_of(record: Mapping[str, Any]) -> str | None:
    # The payload's own command first (hosts send it), then the tool call's arguments.
    given = _command_text(record.get("command"))
    return given if given is not None else _command_text(command_of(record.get("arguments")))


def _signals(value: object) -> list[Mapping[str, Any]]:
    if value is None:  # the usual case: the key is absent
        return []
    items = [value] if isinstance(value, Mapping) else value
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list | tuple) else []


def _verifier_findings(record: Mapping[str, Any], where: _Where) -> list[_Finding]:
    out: list[_Finding] = []
    for key in ("verifier", "verifier_signals"):
        for signal in _signals(record.get(key)):
            status = _text(signal.get("status")).lower()
            if status not in ("failed", "fail", "failure", "error", "errored") and (
                signal.get("passed") is not False
            ):
                continue
            name = _text(signal.get("name")) or "verifier"
            detail = _text(signal.get("summary"))
            text = f"{name} {status or 'failed'}" + (f": {detail}" if detail else "")
            out.append(_Finding("verifier", _oneline(text), where()))
    return out


def _severity(value: object) -> str | None:
    # LSP numbers severities: 1 error, 2 warning.
    if isinstance(value, int) and not isinstance(value, bool):
        return {1: _E, 2: _W}.get(value)
    level = _text(value).lower()
    if level in ("error", "fatal", "critical"):
        return _E
    return _W if level in ("warning", "warn") else None


def _diagnostic_findings(
    record: Mapping[str, Any], where: _Where, warnings: bool
) -> list[_Finding]:
    out: list[_Finding] = []
    for diag in _signals(record.get("diagnostics")):
        level, message = _severity(diag.get("severity")), _text(diag.get("message"))
        if not message or level is None or (level == _W and not warnings):
            continue
        line = diag.get("line")
        place = _text(diag.get("file"))
        if place and isinstance(line, int) and not isinstance(line, bool):
            place = f"{place}:{line}"
        source = _text(diag.get("source"))
        text = (f"{place}: " if place else "") + f"{level}: {message}"
        out.append(
            _Finding("diagnostic", _oneline(text + (f" [{source}]" if source else "")), where())
        )
    return out


# The keys a record's findings are read from: without any of them it has none.
_SIGNAL_KEYS = frozenset({"verifier", "verifier_signals", "diagnostics"})
_EVIDENCE_KEYS = _SIGNAL_KEYS | {"result"}


def _record_findings(record: Mapping[str, Any], event: str, warnings: bool) -> list[_Finding]:
    """Findings from one tool-call-shaped mapping (or an event payload) in order."""
    if _EVIDENCE_KEYS.isdisjoint(record):  # a bare tool call: nothing to examine
        return []
    tool = _text(record.get("tool_name"))
    command = _command_of(record)
    verifier, viewer = _classify(tool, command)
    if viewer:  # file content is not run evidence, whatever it says
        return []
    made: list[str] = []

    def where() -> str:  # the provenance, built only when there is a finding
        if not made:
            text = f"event {event}" + (f"; tool {tool}" if tool else "")
            made.append(
                text + (f"; command: {_oneline(command, _COMMAND_CHARS)}" if command else "")
            )
        return made[0]

    out: list[_Finding] = []
    result = record.get("result")
    if type(result) is dict or isinstance(result, Mapping):
        content = _content_text(result.get("content"))
        tools: tuple[str, ...] = (verifier,) if verifier else ()
        recognised = verifier is None and command is None
        if recognised:
            tools = tuple(t for t, sig in _signatures().items() if sig.search(content))
        lines = _failure_lines(content, tools, warnings) if tools else []
        if lines:
            origin = f"{where()}; output recognised as {'/'.join(tools)}" if recognised else where()
            out += [_Finding("verification_output", line, origin) for line in lines]
        elif result.get("ok") is False:
            out.append(_Finding("tool_error", _error_summary(content), where()))
    if not _SIGNAL_KEYS.isdisjoint(record):  # most tool results carry no signals
        out += _verifier_findings(record, where)
        out += _diagnostic_findings(record, where, warnings)
    return out


def _passed(record: Mapping[str, Any]) -> str | None:
    """The verification command ``record`` ran and that passed (no failure line, not
    ``ok=False``), as its reminders name it; else ``None``."""
    result, command = record.get("result"), _command_of(record)
    if command is None or not isinstance(result, Mapping) or result.get("ok") is False:
        return None
    verifier, _ = _classify(_text(record.get("tool_name")), command)
    if verifier is None or _failure_lines(_content_text(result.get("content")), (verifier,), True):
        return None
    return _oneline(command, _COMMAND_CHARS)


def _resolutions(ctx: ProviderContext, records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """For each verification command that now passes, the earlier findings it ends: each
    pending review whose every finding came from that command is resolved, with a note."""
    passed = {command for record in records if (command := _passed(record)) is not None}
    out: list[Mapping[str, Any]] = []
    for reminder in ctx.pending if passed else ():
        if "grounded_review" not in reminder.tags or reminder.dedupe_key is None:
            continue
        findings = [line for line in reminder.body.splitlines() if line.startswith("- [")]
        for command in passed:
            if findings and all(line.endswith(f"; command: {command}") for line in findings):
                note = f"Resolved: `{command}` now passes; the failures it reported are fixed."
                out.append({"resolved": reminder.dedupe_key, "body": note})
    return out


def _max_findings(config: Mapping[str, Any]) -> int:
    value = config.get("max_findings")
    if type(value) is not int:  # bool, float, str...: fall back rather than guess
        return DEFAULT_MAX_FINDINGS
    return min(max(value, _MIN_FINDINGS), _MAX_FINDINGS)


def _mapping(value: object) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def evaluate(ctx: ProviderContext) -> ProviderResult:
    """Report concrete failure evidence carried by the event payload.

    Each entry of ``tool_calls`` (``post_step``) is examined like a ``post_tool_use`` payload,
    then the payload itself (its tool result and the generic ``verifier``, ``verifier_signals``
    and ``diagnostics`` keys).

    Args:
        ctx: The evaluation context; ``ctx.config`` may set ``max_findings`` (default 6,
            clamped to 1-20) and ``include_warnings`` (default ``False``).

    Returns:
        One reminder mapping listing the findings; without failure evidence, under
        ``restraint``, a resolution of each earlier review whose command now passes (with a
        one-line note); else ``None``.
    """
    payload = ctx.payload
    if type(payload) is not dict and not isinstance(payload, Mapping):
        return None
    config = mapping_or_empty(ctx.config)
    warnings = config.get("include_warnings") is True
    event = ctx.event if isinstance(ctx.event, str) and ctx.event else "unknown"

    calls = payload.get("tool_calls")
    records = [c for c in (calls if isinstance(calls, list | tuple) else ()) if _mapping(c)]
    records.append(payload)
    findings = [f for record in records for f in _record_findings(record, event, warnings)]

    unique: dict[str, _Finding] = {}  # same summary once, first occurrence wins
    for finding in findings:
        unique.setdefault(finding.summary, finding)
    if not unique:
        return (_resolutions(ctx, records) or None) if ctx.options.restraint else None
    limit = _max_findings(config)
    lines = [
        "Grounded review: concrete failure signals observed in this run (not guesses). "
        "Address each one before claiming success:"
    ]
    shown = list(unique.values())[:limit]
    lines += [f"- [{f.source}] {f.summary} — {f.provenance}" for f in shown]
    if len(unique) > limit:
        more = len(unique) - limit
        lines.append(f"- … and {more} more finding{'s' if more != 1 else ''} omitted.")
    # The key follows the findings: the same evidence replaces itself, new evidence is new.
    digest = hashlib.sha256("\n".join(unique).encode()).hexdigest()[:12]
    return canonical_reminder(
        "grounded_review",
        "\n".join(lines),
        ttl_turns=2,
        tags=["grounded_review", "code_review"],
        dedupe_key=f"grounded_review:{event}:{digest}",
        propagate="none",
        role_hint="developer",
    )


# Keys of reminders.config['grounded_review'] and their types (checked at parse time).
CONFIG: ConfigSchema = {"max_findings": (int,), "include_warnings": (bool,)}

PROVIDER = ProviderSpec(
    id="grounded_review",
    subscribes_to=("post_tool_use", "post_step", "post_agent_turn"),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    description=(
        "Lists concrete failure evidence from the run (error results, failing verifiers, error "
        "diagnostics, failing test/lint/type-check output) to address before claiming success."
    ),
)
