"""``agent-reminders`` as a real subprocess: the console script installed next to the running
Python, in a folder of the test's choosing, with no token or fact store from the outer
environment. Exit codes and stderr are read as a shell or a CI job would see them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Done", "installed", "run", "run_python"]

_DROPPED = ("AGENT_REMINDERS_TOKEN", "AGENT_REMINDERS_FACTS_DB", "CLAUDE_PROJECT_DIR")


@dataclass(frozen=True)
class Done:
    """What a run left: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def line(self) -> str:
        """The one error line on stderr (asserting it is the only one)."""
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        return lines[0]


def installed() -> str:
    """The path of the ``agent-reminders`` console script of this environment."""
    exe = shutil.which("agent-reminders", path=str(Path(sys.executable).parent))
    assert exe is not None, "agent-reminders is not installed next to the running Python"
    return exe


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env["PYTHONIOENCODING"] = "utf-8"
    return {**env, **(extra or {})}


def _done(proc: subprocess.CompletedProcess[str]) -> Done:
    return Done(proc.returncode, proc.stdout, proc.stderr)


def run(*args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None) -> Done:
    """``agent-reminders ARGS`` in ``cwd``, ``stdin`` given and closed (``serve`` ends once
    its store is open and stdin is done)."""
    proc = subprocess.run(
        [installed(), *args],
        cwd=cwd,
        input=stdin,
        env=_env(env),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    return _done(proc)


def run_python(prelude: str, *args: str, cwd: Path) -> Done:
    """``agent-reminders ARGS`` through the same entry point, after ``prelude`` ran in the
    process (to hide an installed package, say)."""
    code = (
        f"{prelude}\n"
        "import sys\n"
        "sys.argv[0] = 'agent-reminders'\n"
        "from agent_reminders.__main__ import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=_env(None),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    return _done(proc)
