"""Wall time of one ``agent-reminders hook claude-code`` run: a cold process on a warm store.

Claude Code starts the hook command before every prompt and after every tool call, so its
cost is a whole process: interpreter start, imports, the store's open / lease / load / save,
the event. Each run here is a fresh process of the command ``hook install`` writes (this
installation's ``agent-reminders hook claude-code``) on one project whose store already holds
the session (its byte code cached, as in an installed
package), fed the hook input on stdin exactly as Claude Code does. Reported: the median of
``--runs`` (default 20) per event, its CPU time (user + system of the child: what the load of
the machine does not inflate), and the floor under it — an interpreter that does nothing, and
one that only imports what the hook imports.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import RESULTS, machine, write_section
from agent_reminders.integrations.claude_code import hook_command

ROOT = Path(__file__).resolve().parents[1]
TITLE = "Claude Code hook, one cold run (`bench/claude_code_hook.py`)"
FAILING = "F.\nFAILED tests/test_math.py::test_add - assert 3 == 4\n1 failed, 1 passed in 0.03s\n"
# what a hook run imports: the package, the hook module, the stores, anyio on asyncio
IMPORTS = (
    "import agent_reminders.integrations.claude_code, agent_reminders.storage, "
    "anyio._backends._asyncio"
)
# the same without the async stack: what a synchronous SQLite path would import
SYNC_IMPORTS = "import agent_reminders.integrations.claude_code, sqlite3"


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its byte code
    env.update(CLAUDE_PROJECT_DIR=str(project), PYTHONPATH=str(ROOT / "src"))
    return env


def _timed(argv: list[str], stdin: str, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[-1]} failed: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        env = _env(project)
        hook = shlex.split(hook_command())  # what `hook install` writes into the settings
        common = {"session_id": "bench", "transcript_path": "", "cwd": str(project)}

        def event(**fields: object) -> str:
            return json.dumps({**common, **fields})

        inputs = {
            "`UserPromptSubmit`, nothing new": event(
                hook_event_name="UserPromptSubmit", prompt="go on"
            ),
            "`PostToolUseFailure` of `pytest -q` (a review)": event(
                hook_event_name="PostToolUseFailure",
                tool_name="Bash",
                tool_input={"command": "pytest -q"},
                tool_use_id="toolu_1",
                error=FAILING,
            ),
        }
        _timed(hook, event(hook_event_name="SessionStart", source="startup"), env, project)
        floors = {
            "`python -c pass`": [sys.executable, "-c", "pass"],
            "`python -c '<the hook's imports>'`": [sys.executable, "-c", IMPORTS],
            "`python -c '<the same, less anyio and asyncio>'`": [
                sys.executable,
                "-c",
                SYNC_IMPORTS,
            ],
        }
        for argv in floors.values():  # warm-up: byte code written, files in the page cache
            _timed(argv, "", env, project)
        rows: list[tuple[str, float, float]] = []
        for label, argv in floors.items():
            runs = [_timed(argv, "", env, project) for _ in range(args.runs)]
            rows.append((label, *(statistics.median(r[i] for r in runs) for i in (0, 1))))
        for label, stdin in inputs.items():
            runs = [_timed(hook, stdin, env, project) for _ in range(args.runs)]
            rows.append(
                (f"hook: {label}", *(statistics.median(r[i] for r in runs) for i in (0, 1)))
            )
    hook_rows = [r for r in rows if r[0].startswith("hook:")]
    lines = [
        f"Machine: {machine()}; load average {load:.1f} at the start. Medians of {args.runs} "
        "cold processes each (the installed `agent-reminders hook claude-code`, the hook "
        "input on stdin, a SQLite store that already holds the session, byte code cached); "
        "CPU is the child's user + system time.",
        "",
        "| process | wall ms | CPU ms |",
        "|---|---:|---:|",
        *(f"| {label} | {wall * 1e3:.0f} | {cpu * 1e3:.0f} |" for label, wall, cpu in rows),
        "",
        f"One hook run costs **{max(r[1] for r in hook_rows) * 1e3:.0f} ms** of wall time "
        f"(median, the slower event), {max(r[2] for r in hook_rows) * 1e3:.0f} ms of CPU; "
        f"starting Python and importing what the hook needs is {rows[1][2] * 1e3:.0f} ms of "
        f"that CPU ({rows[0][2] * 1e3:.0f} ms for the bare interpreter), the store and the "
        f"event the rest. The async stack (anyio on asyncio, which the stores' async API "
        f"needs) is {(rows[1][2] - rows[2][2]) * 1e3:.0f} ms of it.",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(TITLE, body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
