"""The real agent CLIs the integration tests run, each pinned, in one place.

Used by the tests of each CLI (``test_claude_code_cli.py``, ``test_codex_cli.py``,
``test_gemini_cli.py``), the hook test ``test_claude_code.py``, and the scripted sessions of
the audit's acceptance tests (``_claude_code_sessions.py``, ``_codex_sessions.py``):

- the pins (:data:`CLAUDE_CODE`, :data:`CODEX`, :data:`GEMINI_CLI`): an npm package at one
  version, installed with ``npm install --prefix`` into a folder of its own under ``.venv/``
  (a worktree can point ``AGENT_REMINDERS_CODEX_PREFIX`` at the main checkout's Codex), and
  found there only if its ``--version`` says the pinned version;
- the opt-in (:func:`slow_only`: ``AGENT_REMINDERS_SLOW=1``, which CI sets);
- the fake, failing ``pytest`` the fake models ask the agents to run (:data:`FAILING_PYTEST`,
  :func:`fake_pytest`);
- the environment an agent runs in (:func:`cli_env`, :func:`claude_env`, :func:`codex_env`)
  and the ``agent-reminders`` command it runs beside (:func:`agent_reminders`).

Plain functions: pytest is imported only by the two helpers that skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
VENV = ROOT / ".venv"

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


def fake_pytest(bindir: Path) -> Path:
    """``BINDIR/pytest``: prints :data:`FAILING_PYTEST` and exits 1."""
    fake = bindir / "pytest"
    fake.write_text(f"#!/bin/sh\ncat <<'OUT'\n{FAILING_PYTEST}OUT\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    return fake


# -- the pinned CLIs -------------------------------------------------------------------------------


def says_version(command: Sequence[str], ok: Callable[[str], bool], timeout: float = 60) -> bool:
    """``COMMAND --version`` exits 0 and prints what ``ok`` accepts."""
    try:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, timeout=timeout
        )
    except OSError:
        return False
    return done.returncode == 0 and ok(done.stdout)


def first_working(binaries: Iterable[Path], ok: Callable[[str], bool]) -> Path | None:
    """The first of ``binaries`` that is an executable file whose ``--version`` passes ``ok``."""
    for binary in binaries:
        if binary.is_file() and os.access(binary, os.X_OK) and says_version([str(binary)], ok):
            return binary
    return None


@dataclass(frozen=True)
class PinnedCli:
    """An agent CLI from npm at a pinned version (pinned: on Node 20 an unpinned install can
    silently pick an old release), installed into ``prefix``."""

    name: str  # as the skip reasons say it: "the real {name} CLI"
    package: str
    version: str
    size: str  # what the first install downloads
    prefix: Path
    # the working binary (or entry script) of ``version`` under an npm prefix, else None
    find: Callable[[Path, str], Path | None]

    @property
    def pin(self) -> str:
        return f"{self.package}@{self.version}"

    def found(self) -> Path | None:
        return self.find(self.prefix, self.version)

    def install(self) -> tuple[Path | None, str]:
        """The installed CLI, after ``npm install --prefix PREFIX --no-save PACKAGE@VERSION``
        if it is not there yet; ``(None, why)`` when npm is missing or failed."""
        found = self.found()
        if found is not None:
            return found, ""
        npm = shutil.which("npm")
        if npm is None:
            return None, f"npm is not installed, so {self.pin} cannot be installed"
        done = subprocess.run(
            [npm, "install", "--prefix", str(self.prefix), "--no-audit", "--no-fund",
             "--no-save", self.pin],
            capture_output=True, text=True, timeout=1200, check=False,
        )  # fmt: skip
        found = self.found()
        if found is None:
            said = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"npm could not install {self.pin}: {said}"
        return found, ""

    def installed_or_skip(self, reason: str | None = None) -> Path:
        """The installed CLI, else the test is skipped: with ``reason``, or why it is not."""
        import pytest

        found, why = self.install()
        if found is None:
            pytest.skip(reason or why)
        return found


def slow_only(cli: PinnedCli) -> pytest.MarkDecorator:
    """A module's ``pytestmark``: it runs ``cli`` only with ``AGENT_REMINDERS_SLOW=1``."""
    import pytest

    return pytest.mark.skipif(
        os.environ.get("AGENT_REMINDERS_SLOW") != "1",
        reason=f"runs the real {cli.name} CLI (an npm install of {cli.size}): "
        "set AGENT_REMINDERS_SLOW=1",
    )


def _claude_code(prefix: Path, version: str) -> Path | None:
    """The native binary (the platform package's, which needs no postinstall), then the
    wrapper's ``bin/claude.exe`` (the same binary once its postinstall ran)."""
    scope = prefix / "node_modules" / "@anthropic-ai"
    binaries = [*sorted(scope.glob("claude-code-*/claude")), scope / "claude-code/bin/claude.exe"]
    return first_working(binaries, lambda said: said.startswith(version))


def _codex(prefix: Path, version: str) -> Path | None:
    """The native binary of the platform package (a static musl executable)."""
    binaries = sorted((prefix / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"))
    return first_working(binaries, lambda said: said.strip() == f"codex-cli {version}")


def _gemini_cli(prefix: Path, version: str) -> Path | None:
    """The bundle's entry script, run with the ``node`` on ``PATH``."""
    entry = prefix / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    node = shutil.which("node")
    if node is None or not entry.is_file():
        return None
    runs = says_version([node, str(entry)], lambda said: said.strip() == version, timeout=120)
    return entry if runs else None


CLAUDE_CODE = PinnedCli(
    name="Claude Code",
    package="@anthropic-ai/claude-code",
    version="2.1.332",
    size="~400 MB",
    prefix=VENV / "claude-code",
    find=_claude_code,
)
CODEX = PinnedCli(
    name="Codex",
    package="@openai/codex",
    version="0.171.0",
    size="~420 MB",
    # a worktree can point AGENT_REMINDERS_CODEX_PREFIX at the main checkout's install
    prefix=Path(os.environ.get("AGENT_REMINDERS_CODEX_PREFIX") or VENV / "codex"),
    find=_codex,
)
GEMINI_CLI = PinnedCli(
    name="Gemini",
    package="@google/gemini-cli",
    version="0.61.0",
    size="~100 MB",
    prefix=VENV / "gemini-cli",
    find=_gemini_cli,
)


# -- running them ----------------------------------------------------------------------------------


def cli_env(
    home: Path,
    dropped: tuple[str, ...] | Callable[[str], bool],
    bindir: Path | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """This process's environment without the variables ``dropped`` names (their prefixes,
    or a test), with ``HOME``, ``bindir`` first on ``PATH``, ``PYTHONPATH`` this checkout's
    code (what the hook commands run), and ``extra``."""
    drop = dropped if callable(dropped) else lambda name: name.startswith(dropped)
    env = {k: v for k, v in os.environ.items() if not drop(k)}
    env["HOME"] = str(home)
    if bindir is not None:
        env["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    env["PYTHONPATH"] = str(SRC)
    return {**env, **(extra or {})}


def claude_env(home: Path, bindir: Path, base_url: str) -> dict[str, str]:
    """Claude Code talking to ``base_url`` only, none of the user's settings."""
    claude = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "x",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return cli_env(home, ("CLAUDE", "ANTHROPIC"), bindir, claude)


def codex_env(
    home: Path, bindir: Path | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Codex with ``CODEX_HOME`` in ``home`` and the fake provider's key (``config.toml``
    names the provider), none of the user's settings."""
    codex = {"CODEX_HOME": str(home / ".codex"), "FAKE_OPENAI_KEY": "x", "NO_COLOR": "1"}
    return cli_env(home, ("CODEX", "OPENAI"), bindir, {**codex, **(extra or {})})


def agent_reminders(env: Mapping[str, str], cwd: Path, *args: str) -> str:
    """``agent-reminders ARGS`` (this checkout's) in ``cwd``: its stdout; it must succeed."""
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
