"""The canonical ``grounded_review`` provider (docs/session-loop.md, "Canonical providers"):
concrete failure evidence only."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import Authority, Propagate, RoleHint
from agent_reminders.config import ReminderOptions
from agent_reminders.providers import OPTION_KEYS, grounded_review, parse_reminder_options
from agent_reminders.providers.base import ProviderContext
from agent_reminders.providers.grounded_review import PROVIDER, evaluate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verifier_output"
ALL_FIXTURES = sorted(p.name for p in FIXTURES.iterdir() if p.is_file())


class Failing(NamedTuple):
    command: str
    expected: tuple[str, ...]  # failure lines (whitespace-collapsed) that must be reported
    absent: tuple[str, ...] = ()  # text from the same output that must not be reported


FAILING: dict[str, Failing] = {
    "pytest_failed.txt": Failing(
        "pytest",
        (
            "FAILED tests/test_parser.py::test_parse_date - AssertionError: "
            "assert datetime.date(2024, 3, 1) is None",
            "1 failed, 4 passed in 0.31s",
        ),
        ("test session starts", "tests/test_parser.py:18: AssertionError"),
    ),
    "pytest_verbose_failed.txt": Failing(
        "python -m pytest -v",
        (
            "tests/test_cart.py::test_discount_rounding FAILED [ 75%]",
            "FAILED tests/test_cart.py::test_discount_rounding - AssertionError",
            "1 failed, 3 passed in 0.08s",
        ),
        ("test_empty_cart", "test_add_item", "test_remove_item"),
    ),
    "pytest_collection_error.txt": Failing(
        "uv run pytest tests",
        ("ERROR tests/test_api.py", "Interrupted: 1 error during collection", "1 error in 0.12s"),
    ),
    "cargo_test_failed.txt": Failing(
        "cargo test",
        (
            "test tests::parses_negative ... FAILED",
            "test result: FAILED. 3 passed; 1 failed; 0 ignored",
            "error: test failed, to rerun pass `--lib`",
        ),
        ("parses_empty", "parses_positive", "rounds_half_even"),
    ),
    "cargo_check_error.txt": Failing(
        "cargo check --all-targets",
        (
            "error[E0308]: mismatched types (src/main.rs:4:5)",
            'error: could not compile `ledger` (bin "ledger") due to 1 previous error',
        ),
        ("rustc --explain",),
    ),
    "go_test_failed.txt": Failing(
        "go test ./...",
        ("--- FAIL: TestParse (0.00s)", "FAIL github.com/acme/durations 0.012s"),
        ("internal/clock", "no test files"),
    ),
    "tsc_errors.txt": Failing(
        "npx tsc --noEmit",
        (
            "src/app.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            "src/routes/users.ts(48,21): error TS2339: Property 'emial' does not exist",
        ),
    ),
    "mypy_errors.txt": Failing(
        "mypy app",
        (
            'app/models.py:41: error: Incompatible return value type (got "str | None", '
            'expected "str") [return-value]',
            "Found 2 errors in 1 file (checked 12 source files)",
        ),
    ),
    "ruff_errors.txt": Failing(
        "ruff check .",
        (
            "app/x.py:1:8: F401 [*] `os` imported but unused",
            "app/x.py:14:5: E741",
            "Found 3 errors.",
        ),
        ("fixable with the `--fix` option",),
    ),
    "ruff_errors_full.txt": Failing(
        "ruff check",
        ("F401 [*] `os` imported but unused (app/x.py:1:8)", "E741 Ambiguous variable name"),
        ("help: Remove unused import",),
    ),
    "eslint_errors.txt": Failing(
        "npx eslint src",
        (
            "/home/dev/web/src/app.js: 3:10 error 'x' is defined but never used no-unused-vars",
            "✖ 2 problems (2 errors, 0 warnings)",
        ),
        ("potentially fixable",),
    ),
    "npm_test_failed.txt": Failing(
        "npm test",
        (
            "FAIL src/cart.test.js",
            "Tests: 1 failed, 7 passed, 8 total",
            "npm ERR! Test failed.",
        ),
        ("PASS src/utils/date.test.js", "Snapshots"),
    ),
    "pnpm_test_failed.txt": Failing(
        "pnpm test",
        (
            "FAIL src/cart.test.ts > cart > applies discount",
            "Tests 1 failed | 7 passed (8)",
            "ELIFECYCLE Test failed.",
        ),
        ("src/utils/date.test.ts",),
    ),
    "make_test_failed.txt": Failing(
        "make test",
        (
            "FAILED tests/test_text.py::test_slugify - AssertionError",
            "make: *** [Makefile:14: test] Error 1",
        ),
    ),
}

# Warning-only output: silent unless include_warnings is true; then these lines are reported.
WARNING_ONLY: dict[str, tuple[str, tuple[str, ...]]] = {
    "cargo_clippy_warnings.txt": (
        "cargo clippy --all-targets",
        (
            "warning: this `if` has identical blocks (src/lib.rs:22:23)",
            "warning: redundant clone (src/report.rs:9:30)",
        ),
    ),
    "eslint_warnings_only.txt": (
        "npx eslint src",
        (
            "/home/dev/web/src/logger.js: 12:5 warning Unexpected console statement no-console",
            "/home/dev/web/src/utils/date.js: 4:7 warning 'formatError' is assigned a value",
        ),
    ),
}

PASSING: dict[str, str] = {
    "pytest_passed.txt": "pytest -v",
    "pytest_quiet_passed.txt": "python3 -m pytest -q",
    "cargo_test_ok.txt": "cargo test",
    "cargo_check_clean.txt": "cargo check",
    "go_test_ok.txt": "go test -v ./...",
    "tsc_clean.txt": "npx tsc --noEmit --watch",
    "mypy_success.txt": "mypy app",
    "ruff_clean.txt": "ruff check .",
    "npm_test_passed.txt": "npm test",
    "make_test_passed.txt": "make test",
}

# Output of file-viewing commands: file content that merely mentions failures.
VIEWING: dict[str, str] = {
    "cat_source_file.txt": "cat src/report/summary.py",
    "rg_search_output.txt": "rg -n 'error:' src docs",
}

VIEWERS: list[tuple[str, str | None]] = [
    ("read_file", None),
    ("Read", None),
    ("view_file", None),
    ("mcp__filesystem__read_file", None),
    ("glob", None),
    ("grep", None),
    ("bash", "cat test-output.log"),
    ("bash", "head -n 200 pytest.log"),
    ("bash", "tail -n 80 build.log"),
    ("bash", "less ci.log"),
    ("bash", "grep -n FAILED ci.log"),
    ("shell", "rg --no-heading 'error\\[' target/"),
    ("bash", "find . -name '*.log'"),
    ("bash", "ls -la"),
    ("bash", "sed -n '1,120p' ci.log"),
    ("bash", "bat --plain ci.log"),
    ("bash", "cd /repo && cat pytest.log | grep -A3 FAILED"),
    ("str_replace_based_edit_tool", "view"),
]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def tool_call(
    content: Any,
    *,
    tool: Any = "bash",
    command: Any = None,
    ok: Any = True,
    arguments: Any = None,
) -> dict[str, Any]:
    if arguments is None:
        arguments = {"command": command} if command is not None else {}
    return {
        "tool_name": tool,
        "arguments": arguments,
        "command": command,
        "result": {"content": content, "ok": ok, "truncated": False, "original_size": None},
    }


def run(payload: Any, *, event: str = "post_tool_use", config: Any = None) -> dict[str, Any] | None:
    ctx = ProviderContext(
        event=event, session_id="s", payload=payload, options=ReminderOptions(), config=config
    )
    result = evaluate(ctx)  # no transcript: nothing pending to resolve, so one mapping or None
    assert result is None or isinstance(result, dict)
    return result


def fire(payload: Any, *, event: str = "post_tool_use", config: Any = None) -> dict[str, Any]:
    result = run(payload, event=event, config=config)
    assert result is not None, "expected the provider to fire"
    return result


def findings(reminder: Mapping[str, Any]) -> list[str]:
    """The finding lines of a body (not the header, not the omitted-count line)."""
    return [line for line in reminder["body"].splitlines()[1:] if line.startswith("- [")]


def classes(reminder: Mapping[str, Any]) -> list[str]:
    return [line[3:].split("]", 1)[0] for line in findings(reminder)]


# --- every fixture -------------------------------------------------------------------------


def test_every_fixture_has_an_expectation() -> None:
    groups = [set(FAILING), set(WARNING_ONLY), set(PASSING), set(VIEWING)]
    assert set(ALL_FIXTURES) == set().union(*groups)
    assert sum(len(g) for g in groups) == len(ALL_FIXTURES)  # no file is in two groups
    required = {
        "pytest_failed.txt",
        "pytest_passed.txt",
        "pytest_collection_error.txt",
        "cargo_test_failed.txt",
        "cargo_test_ok.txt",
        "cargo_check_error.txt",
        "cargo_clippy_warnings.txt",
        "go_test_failed.txt",
        "go_test_ok.txt",
        "tsc_errors.txt",
        "tsc_clean.txt",
        "mypy_errors.txt",
        "mypy_success.txt",
        "ruff_errors.txt",
        "ruff_clean.txt",
        "eslint_errors.txt",
        "eslint_warnings_only.txt",
        "npm_test_failed.txt",
        "make_test_failed.txt",
    }
    assert required <= set(ALL_FIXTURES)


@pytest.mark.parametrize("sniffed", [False, True], ids=["command", "no_command"])
@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture(name: str, sniffed: bool) -> None:
    """Failing output fires; passing, warning-only and file-viewing output never does.

    With ``sniffed`` the command is unknown and the output has to be recognised by its format.
    """
    content = fixture(name)
    if name in FAILING:
        spec = FAILING[name]
        payload = tool_call(content, command=None if sniffed else spec.command)
        for config in (None, {"include_warnings": False}, {"include_warnings": True}):
            reminder = fire(payload, config={**(config or {}), "max_findings": 20})
            assert set(classes(reminder)) == {"verification_output"}
            for line in spec.expected:
                assert line in reminder["body"]
            for text in spec.absent:
                assert text not in reminder["body"]
            parse_reminder_options(reminder)
    elif name in WARNING_ONLY:
        command, expected = WARNING_ONLY[name]
        payload = tool_call(content, command=None if sniffed else command)
        assert run(payload) is None
        assert run(payload, config={"include_warnings": False}) is None
        reminder = fire(payload, config={"include_warnings": True})
        assert set(classes(reminder)) == {"verification_output"}
        for line in expected:
            assert line in reminder["body"]
    elif name in PASSING:
        payload = tool_call(content, command=None if sniffed else PASSING[name])
        for config in (None, {"include_warnings": False}, {"include_warnings": True}):
            assert run(payload, config=config) is None
    else:
        payload = tool_call(content, command=None if sniffed else VIEWING[name])
        # Without a command nothing says the bash call was a viewer, so ok=False would be a
        # genuine tool error there; only the known viewing command is silent on both.
        for ok in (True,) if sniffed else (True, False):
            payload["result"]["ok"] = ok
            for config in (None, {"include_warnings": False}, {"include_warnings": True}):
                assert run(payload, config=config) is None


@pytest.mark.parametrize(("tool", "command"), VIEWERS)
def test_file_viewing_tools_never_fire(tool: str, command: str | None) -> None:
    for name in [*FAILING, *WARNING_ONLY, *VIEWING]:
        for ok in (True, False):
            payload = tool_call(fixture(name), tool=tool, command=command, ok=ok)
            assert run(payload, config={"include_warnings": True}) is None, name


@pytest.mark.parametrize("tool", ["read_file", "cat", "view", "grep", "ls"])
def test_error_result_from_a_viewer_never_fires(tool: str) -> None:
    payload = tool_call("Error: No such file or directory: 'src/missing.py'", tool=tool, ok=False)
    assert run(payload) is None
    by_command = tool_call("cat: src/missing.py: No such file or directory", command="cat x")
    by_command["result"]["ok"] = False
    assert run(by_command) is None


# --- tool errors ----------------------------------------------------------------------------


def test_error_result_from_a_non_viewing_tool_fires_tool_error() -> None:
    content = (
        "To github.com:acme/ledger.git\n"
        " ! [rejected]        main -> main (fetch first)\n"
        "error: failed to push some refs to 'github.com:acme/ledger.git'\n"
    )
    reminder = fire(tool_call(content, command="git push origin main", ok=False))
    assert classes(reminder) == ["tool_error"]
    assert "error: failed to push some refs to 'github.com:acme/ledger.git'" in reminder["body"]
    assert "tool bash" in reminder["body"]
    assert "command: git push origin main" in reminder["body"]


def test_tool_error_summary_prefers_the_concluding_error_line() -> None:
    content = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/migrate.py", line 12, in <module>\n'
        "    run()\n"
        "sqlite3.OperationalError: no such table: invoices\n"
    )
    reminder = fire(tool_call(content, tool="run_migration", ok=False))
    assert findings(reminder)[0].startswith(
        "- [tool_error] sqlite3.OperationalError: no such table: invoices — "
    )


def test_tool_error_without_output_still_fires() -> None:
    reminder = fire(tool_call("", tool="web_fetch", ok=False))
    assert classes(reminder) == ["tool_error"]
    assert "no output" in reminder["body"]
    assert "tool web_fetch" in reminder["body"]


def test_ok_must_be_literally_false() -> None:
    for ok in (None, 0, "false", True):
        assert run(tool_call("Error: something odd", tool="deploy", ok=ok)) is None


def test_failing_verification_reports_its_lines_rather_than_a_tool_error() -> None:
    reminder = fire(tool_call(fixture("pytest_failed.txt"), command="pytest", ok=False))
    assert set(classes(reminder)) == {"verification_output"}


def test_verification_command_failing_without_failure_lines_is_a_tool_error() -> None:
    content = "============================ no tests ran in 0.01s =============================\n"
    reminder = fire(tool_call(content, command="pytest -k nothing_matches", ok=False))
    assert classes(reminder) == ["tool_error"]
    assert "no tests ran in 0.01s" in reminder["body"]


# --- which commands count -------------------------------------------------------------------

RECOGNISED: list[tuple[str, str]] = [
    ("python -m pytest -x", "pytest_failed.txt"),
    ("python3.12 -m pytest", "pytest_failed.txt"),
    ("uv run pytest -q", "pytest_failed.txt"),
    ("poetry run pytest", "pytest_failed.txt"),
    (".venv/bin/pytest tests/test_parser.py", "pytest_failed.txt"),
    ("PYTHONPATH=src timeout 300 pytest", "pytest_failed.txt"),
    ("cd /home/dev/invoice && pytest 2>&1 | tail -n 40", "pytest_failed.txt"),
    ('bash -lc "cd /home/dev/invoice && pytest -q"', "pytest_failed.txt"),
    ("cargo test --workspace", "cargo_test_failed.txt"),
    ("cargo +nightly check", "cargo_check_error.txt"),
    ("cargo clippy --all-targets -- -D warnings", "cargo_check_error.txt"),
    ("go test -race ./...", "go_test_failed.txt"),
    ("tsc -p tsconfig.json", "tsc_errors.txt"),
    ("yarn tsc --noEmit", "tsc_errors.txt"),
    ("pnpm exec tsc", "tsc_errors.txt"),
    ("mypy --strict src", "mypy_errors.txt"),
    ("python -m mypy app", "mypy_errors.txt"),
    ("ruff check src tests", "ruff_errors.txt"),
    ("ruff .", "ruff_errors.txt"),
    ("eslint 'src/**/*.js'", "eslint_errors.txt"),
    ("npx --yes eslint src", "eslint_errors.txt"),
    ("npm run test", "npm_test_failed.txt"),
    ("npm run test:unit -- --ci", "npm_test_failed.txt"),
    ("yarn test", "npm_test_failed.txt"),
    ("pnpm --filter web test", "pnpm_test_failed.txt"),
    ("make -C build test", "make_test_failed.txt"),
    ("make test-unit", "make_test_failed.txt"),
]


@pytest.mark.parametrize(("command", "name"), RECOGNISED)
def test_verification_commands_are_recognised(command: str, name: str) -> None:
    reminder = fire(tool_call(fixture(name), command=command), config={"max_findings": 20})
    assert set(classes(reminder)) == {"verification_output"}
    assert FAILING[name].expected[0] in reminder["body"]
    assert "output recognised as" not in reminder["body"]  # the command said what ran


def test_command_is_read_from_the_arguments_too() -> None:
    payload = tool_call(fixture("mypy_errors.txt"), arguments={"cmd": ["mypy", "--strict", "app"]})
    reminder = fire(payload)
    assert "command: mypy --strict app" in reminder["body"]
    assert "app/models.py:41: error" in reminder["body"]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python scripts/summarise.py", "pytest_failed.txt"),
        ("cargo build --release", "cargo_check_error.txt"),
        ("ruff format --check .", "ruff_errors.txt"),
        ("npm install", "npm_test_failed.txt"),
        ("make build", "make_test_failed.txt"),
        ("go build ./...", "go_test_failed.txt"),
        ("echo done", "mypy_errors.txt"),
    ],
)
def test_other_commands_output_is_not_scanned(command: str, name: str) -> None:
    """Only verification commands (or unmistakable output with no command) are scanned."""
    assert run(tool_call(fixture(name), command=command)) is None


def test_unrecognisable_output_without_a_command_does_not_fire() -> None:
    content = "FAILED to reach the mirror, retrying\nerror: 3 attempts left\nFound 2 errors.\n"
    assert run(tool_call(content, tool="bash")) is None


def test_recognised_output_names_the_format_in_the_provenance() -> None:
    reminder = fire(tool_call(fixture("go_test_failed.txt"), tool="shell"))
    assert "output recognised as go" in reminder["body"]


# --- success and warnings -------------------------------------------------------------------

SUCCESS_LINES = [
    "test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
    "Success: no issues found in 12 source files",
    "All checks passed!",
    "[9:41:07 AM] Found 0 errors. Watching for file changes.",
    "ok  \tgithub.com/acme/durations\t0.010s",
    "✖ 0 problems (0 errors, 0 warnings)",
    "integration suite: 12 passed, 0 failed",
    "link check: 42 links, failures: 0",
    "tests/test_report.py::test_label[exit 1 FAILED] PASSED                 [ 50%]",
    "test tests::error_paths ... ok",
    "    --- PASS: TestFormat/FAIL_case (0.00s)",
    "Found 3 errors (3 fixed, 0 remaining).",
]


@pytest.mark.parametrize("line", SUCCESS_LINES)
@pytest.mark.parametrize("command", ["make test", "pytest -v", "ruff check --fix .", None])
def test_lines_that_report_success_never_fire(line: str, command: str | None) -> None:
    assert run(tool_call(line + "\n", command=command), config={"include_warnings": True}) is None


def test_a_remaining_ruff_error_still_fires() -> None:
    reminder = fire(
        tool_call("Found 4 errors (3 fixed, 1 remaining).\n", command="ruff check --fix")
    )
    assert "Found 4 errors (3 fixed, 1 remaining)." in reminder["body"]


def test_ansi_colour_codes_are_ignored() -> None:
    coloured = "\x1b[31mFAILED\x1b[0m tests/test_x.py::test_y - assert 1 == 2\n"
    reminder = fire(tool_call(coloured, command="pytest --color=yes"))
    assert "FAILED tests/test_x.py::test_y - assert 1 == 2" in reminder["body"]
    assert "\x1b" not in reminder["body"]


def test_content_blocks_are_read() -> None:
    blocks = [{"type": "text", "text": fixture("tsc_errors.txt")}, {"type": "image"}]
    reminder = fire(tool_call(blocks, command="tsc"))
    assert "error TS2322" in reminder["body"]


def test_long_failure_lines_are_trimmed() -> None:
    line = "FAILED tests/test_x.py::test_y - AssertionError: " + "x" * 500
    body_line = findings(fire(tool_call(line, command="pytest")))[0]
    summary = body_line.removeprefix("- [verification_output] ").split(" — ")[0]
    assert len(summary) <= 200
    assert summary.endswith("…")


# --- verifier signals and diagnostics -------------------------------------------------------


@pytest.mark.parametrize(
    "signal",
    [
        {"name": "unit tests", "status": "failed"},
        {"name": "unit tests", "status": "FAIL"},
        {"name": "unit tests", "status": "failure"},
        {"name": "unit tests", "status": "error"},
        {"name": "unit tests", "status": "errored"},
        {"name": "unit tests", "passed": False},
        {"name": "unit tests", "status": "passed", "passed": False},
    ],
)
def test_failing_verifier_signals_fire(signal: dict[str, Any]) -> None:
    payload = {"iteration": 3, "final_message": {"role": "assistant", "content": "Done!"}}
    reminder = fire(
        {**payload, "verifier": {**signal, "summary": "2 of 40 tests failed"}},
        event="post_agent_turn",
    )
    assert classes(reminder) == ["verifier"]
    assert "unit tests" in reminder["body"]
    assert "2 of 40 tests failed" in reminder["body"]
    assert "event post_agent_turn" in reminder["body"]
    assert reminder["dedupe_key"].startswith("grounded_review:post_agent_turn:")


@pytest.mark.parametrize(
    "signal",
    [
        {"name": "unit tests", "status": "passed"},
        {"name": "unit tests", "status": "ok", "passed": True},
        {"name": "unit tests", "status": "skipped"},
        {"name": "unit tests", "passed": True},
        {"name": "unit tests"},
        {"name": "unit tests", "passed": None, "status": None},
    ],
)
def test_passing_or_unknown_verifier_signals_do_not_fire(signal: dict[str, Any]) -> None:
    assert run({"verifier": signal}, event="post_agent_turn") is None
    assert run({"verifier_signals": [signal]}, event="post_agent_turn") is None


def test_verifier_signal_lists_report_only_the_failures() -> None:
    signals = [
        {"name": "lint", "status": "passed", "summary": "clean"},
        None,
        "failed",
        {"name": "e2e", "status": "failed", "summary": "checkout flow times out"},
        {"status": "error"},
    ]
    reminder = fire({"verifier_signals": signals}, event="post_agent_turn")
    assert classes(reminder) == ["verifier", "verifier"]
    assert "e2e failed: checkout flow times out" in reminder["body"]
    assert "verifier error" in reminder["body"]  # a nameless signal still counts
    assert "lint" not in reminder["body"]


def test_error_diagnostics_fire_and_warnings_need_include_warnings() -> None:
    diagnostics = [
        {
            "severity": "error",
            "message": "Undefined name `totl`",
            "file": "app/x.py",
            "line": 3,
            "source": "pyright",
        },
        {"severity": "warning", "message": "Unused import `os`", "file": "app/x.py", "line": 1},
        {"severity": "information", "message": "Consider a dataclass"},
        {"severity": "hint", "message": "Unreachable code"},
    ]
    reminder = fire({"diagnostics": diagnostics})
    assert classes(reminder) == ["diagnostic"]
    assert "app/x.py:3: error: Undefined name `totl` [pyright]" in reminder["body"]
    assert "Unused import" not in reminder["body"]

    with_warnings = fire({"diagnostics": diagnostics}, config={"include_warnings": True})
    assert classes(with_warnings) == ["diagnostic", "diagnostic"]
    assert "app/x.py:1: warning: Unused import `os`" in with_warnings["body"]
    assert "Consider a dataclass" not in with_warnings["body"]

    assert run({"diagnostics": diagnostics[1:]}) is None
    assert run({"diagnostics": diagnostics[1:]}, config={"include_warnings": False}) is None


def test_lsp_numeric_severities_are_understood() -> None:
    reminder = fire({"diagnostics": [{"severity": 1, "message": "Cannot find name 'foo'."}]})
    assert "error: Cannot find name 'foo'." in reminder["body"]
    assert run({"diagnostics": [{"severity": 2, "message": "Deprecated API"}]}) is None
    assert run({"diagnostics": [{"severity": True, "message": "bool is not a severity"}]}) is None


def test_generic_evidence_rides_on_a_tool_call_too() -> None:
    payload = tool_call("wrote 3 files", tool="apply_patch")
    payload["diagnostics"] = [{"severity": "error", "message": "Expected ';'", "file": "a.ts"}]
    reminder = fire(payload)
    assert "a.ts: error: Expected ';'" in reminder["body"]
    assert "tool apply_patch" in reminder["body"]


# --- post_step aggregation, de-duplication, limits ------------------------------------------


def test_post_step_aggregates_every_tool_call_in_order() -> None:
    calls = [
        tool_call(fixture("pytest_failed.txt"), command="pytest"),
        tool_call(fixture("pytest_failed.txt"), tool="read_file", ok=False),
        tool_call(fixture("mypy_success.txt"), command="mypy app"),
        tool_call(fixture("ruff_errors.txt"), command="ruff check ."),
        tool_call("error: failed to push some refs", command="git push", ok=False),
        "not a tool call",
        None,
    ]
    reminder = fire(
        {"iteration": 2, "tool_calls": calls}, event="post_step", config={"max_findings": 20}
    )
    lines = findings(reminder)
    assert classes(reminder) == ["verification_output"] * 6 + ["tool_error"]
    assert "FAILED tests/test_parser.py::test_parse_date" in lines[0]
    assert "command: pytest" in lines[0]
    assert "app/x.py:1:8: F401" in lines[2]
    assert "command: ruff check ." in lines[2]
    assert "command: git push" in lines[-1]
    assert all("event post_step" in line for line in lines)
    assert "read_file" not in reminder["body"]
    assert reminder["dedupe_key"].startswith("grounded_review:post_step:")


def test_the_same_finding_is_reported_once() -> None:
    call = tool_call(fixture("go_test_failed.txt"), command="go test ./...")
    reminder = fire({"tool_calls": [call, call, call]}, event="post_step")
    assert len(findings(reminder)) == 2
    assert reminder["body"].count("--- FAIL: TestParse") == 1


def many_diagnostics(count: int) -> dict[str, Any]:
    return {"diagnostics": [{"severity": "error", "message": f"problem {i}"} for i in range(count)]}


@pytest.mark.parametrize(
    ("max_findings", "shown"),
    [(None, 6), (2, 2), (1, 1), (0, 1), (-5, 1), (20, 20), (99, 20), ("3", 6), (2.0, 6), (True, 6)],
)
def test_max_findings_is_clamped(max_findings: Any, shown: int) -> None:
    reminder = fire(many_diagnostics(25), config={"max_findings": max_findings})
    lines = findings(reminder)
    assert lines == [line for line in lines if "problem" in line]
    assert len(lines) == shown
    assert "problem 0" in lines[0]  # order of appearance
    assert reminder["body"].splitlines()[-1] == f"- … and {25 - shown} more findings omitted."


def test_no_omitted_line_when_everything_fits() -> None:
    reminder = fire(many_diagnostics(6))
    assert len(findings(reminder)) == 6
    assert "omitted" not in reminder["body"]
    one_more = fire(many_diagnostics(7))
    assert one_more["body"].splitlines()[-1] == "- … and 1 more finding omitted."


# --- the reminder itself --------------------------------------------------------------------


def test_reminder_shape_and_lifecycle() -> None:
    reminder = fire(tool_call(fixture("pytest_failed.txt"), command="pytest -q"))
    assert set(reminder) <= OPTION_KEYS
    parsed = parse_reminder_options(reminder)
    assert parsed.tags == ("grounded_review", "code_review")
    assert parsed.ttl_turns == 2
    assert parsed.preserve_on_compact is False
    assert parsed.propagate is Propagate.NONE
    assert parsed.role_hint is RoleHint.DEVELOPER
    assert parsed.authority is Authority.CONTRACT
    assert re.fullmatch(r"grounded_review:post_tool_use:[0-9a-f]{12}", parsed.dedupe_key or "")


def test_body_says_these_are_concrete_signals_with_provenance() -> None:
    reminder = fire(tool_call(fixture("cargo_check_error.txt"), command="cargo check"))
    header, first = reminder["body"].splitlines()[:2]
    assert "concrete" in header
    assert "not guesses" in header
    assert "before claiming success" in header
    assert first.startswith("- [verification_output] error[E0308]: mismatched types")
    assert first.endswith("— event post_tool_use; tool bash; command: cargo check")


def test_dedupe_key_follows_the_findings() -> None:
    payload = tool_call(fixture("tsc_errors.txt"), command="tsc")
    key = fire(payload)["dedupe_key"]
    assert fire(payload)["dedupe_key"] == key
    # The same evidence through another tool spelling keeps the key: it hashes the findings.
    assert fire(tool_call(fixture("tsc_errors.txt"), command="npx tsc -p ."))["dedupe_key"] == key
    assert fire(tool_call(fixture("mypy_errors.txt"), command="mypy"))["dedupe_key"] != key
    fewer = fixture("tsc_errors.txt").splitlines()[0]
    assert fire(tool_call(fewer, command="tsc"))["dedupe_key"] != key
    step = fire({"tool_calls": [payload]}, event="post_step")["dedupe_key"]
    assert step.rsplit(":", 1)[1] == key.rsplit(":", 1)[1]
    assert step != key


def test_provider_spec() -> None:
    assert PROVIDER.id == "grounded_review"
    assert PROVIDER.subscribes_to == ("post_tool_use", "post_step", "post_agent_turn")
    assert PROVIDER.evaluate is evaluate
    assert PROVIDER.canonical is True
    assert PROVIDER.description


# --- odd payloads ---------------------------------------------------------------------------

ODD_PAYLOADS: list[Any] = [
    None,
    [],
    "FAILED tests/test_x.py::test_y",
    42,
    {},
    {"tool_name": None, "arguments": None, "command": None, "result": None},
    {"tool_name": 7, "arguments": "pytest", "command": 42, "result": "FAILED x"},
    {"tool_name": "bash", "command": "pytest", "result": {"content": None, "ok": None}},
    {"tool_name": "bash", "command": ["pytest", 3], "result": {"content": 12, "ok": True}},
    {"tool_name": "bash", "command": "pytest", "result": {"content": [None, 3, {"text": 5}]}},
    {"tool_name": "bash", "command": "", "result": {"content": "", "ok": True}},
    {"tool_name": "bash", "command": "'unbalanced", "result": {"content": "x", "ok": True}},
    {"tool_calls": None},
    {"tool_calls": [None, 3, "x", [], {"result": None}]},
    {"tool_calls": {"result": {"ok": False}}},
    {"verifier": "failed"},
    {"verifier": [None, 1, "failed", {"status": 3, "passed": "no"}]},
    {"verifier_signals": {"status": None}},
    {"diagnostics": "error"},
    {"diagnostics": [None, {"severity": "error"}, {"severity": "error", "message": None}]},
    {"diagnostics": [{"severity": None, "message": "no severity"}]},
    {"diagnostics": {"severity": "error", "message": "   "}},
    {"iteration": "two", "final_message": None},
]


@pytest.mark.parametrize("payload", ODD_PAYLOADS)
@pytest.mark.parametrize(
    "config", [None, {}, "yes", {"include_warnings": "true", "max_findings": []}]
)
def test_odd_payloads_return_none(payload: Any, config: Any) -> None:
    for event in ("post_tool_use", "post_step", "post_agent_turn"):
        assert run(payload, event=event, config=config) is None


def test_odd_config_values_do_not_enable_warnings() -> None:
    payload = tool_call(fixture("eslint_warnings_only.txt"), command="eslint .")
    for value in ("true", 1, "yes", None):
        assert run(payload, config={"include_warnings": value}) is None


# Plain word characters, the whitespace shlex splits on, and every character it treats
# specially — so generated lines take both paths of the splitter.
_SHELL_ALPHABET = "ab-./=:+_~*$ \t\r\"'\\#();<>|&é\xa0"


@settings(max_examples=500)
@given(st.text(alphabet=_SHELL_ALPHABET, max_size=30))
def test_shell_lines_split_as_shlex_splits_them(line: str) -> None:
    """The splitter's whitespace fast path gives shlex's words for every line it takes."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        expected = list(lexer)
    except ValueError:  # unbalanced quotes: the rough split (not compared here)
        return
    assert grounded_review._shell_words(line) == expected
