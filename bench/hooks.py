"""Wall time of one coding-agent hook run, for every agent, beside a Python that does nothing.

A coding agent starts its hook command before every prompt and after every tool call, so a
run's cost is a whole process. Each run here is a fresh process of the command ``hook
install`` writes (this installation's ``agent-reminders hook <agent>``) on one project whose
store already holds the session, fed the hook input on stdin as the agent feeds it, for two
events: the prompt event with nothing new (Cursor has no prompt event: its ``postToolUse`` of
an ``ls``), and the tool event of a failing ``pytest -q`` (a grounded review; later runs of
the same failure get its short repeat). Two ways: **served** (the hook server is up: the run
is a small client), and **own process** (``AGENT_REMINDERS_HOOK_SERVER=off``: the run imports
the library and opens the store itself). Every measurement of one round is taken in turn, so
the bare interpreter and the hooks share the machine's load; reported are medians of
``--runs`` rounds (default 20) and each one's ratio to ``python -c pass``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _agent_reminders_hook import SOCKET
from _results import RESULTS, machine, write_section
from agent_reminders.integrations._agent_settings import hook_command

ROOT = Path(__file__).resolve().parents[1]
TITLE = "Coding-agent hooks, one cold run each (`bench/hooks.py`)"
FAILING = "F.\nFAILED tests/test_math.py::test_add - assert 3 == 4\n1 failed, 1 passed in 0.03s\n"


def _inputs(project: Path) -> dict[str, tuple[dict[str, object], dict[str, object]]]:
    """Per agent: (the prompt event with nothing new, the failing test run)."""
    base = {"session_id": "bench", "transcript_path": None, "cwd": str(project)}
    cursor = {"conversation_id": "bench", "workspace_roots": [str(project)]}

    def cursor_tool(output: str, code: int) -> dict[str, object]:
        tool = json.dumps({"exitCode": code, "stdout": output})
        return {
            **cursor,
            "hook_event_name": "postToolUse",
            "tool_name": "Shell",
            "tool_input": {"command": "pytest -q" if code else "ls"},
            "tool_output": tool,
        }

    return {
        "claude-code": (
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go on"},
            {
                **base,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {"command": "pytest -q"},
                "tool_use_id": "t1",
                "error": FAILING,
            },
        ),
        "codex": (
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go on", "turn_id": "t"},
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "turn_id": "t",
                "tool_input": {"command": "pytest -q"},
                "tool_response": FAILING,
            },
        ),
        "gemini-cli": (
            {**base, "hook_event_name": "BeforeAgent", "prompt": "go on"},
            {
                **base,
                "hook_event_name": "AfterTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": "pytest -q"},
                "tool_response": {
                    "llmContent": f"Output: {FAILING}\nExit Code: 1",
                    "returnDisplay": FAILING,
                },
            },
        ),
        "cursor": (cursor_tool("README.md\n", 0), cursor_tool(FAILING, 1)),
    }


def _timed(argv: list[str], stdin: str, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed: {done.stderr.strip()}")
    return wall


def _stop_server(folder: Path) -> None:
    """Connect, then take the socket away: the server sees it gone after this connection."""
    path = folder / SOCKET
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, contextlib.suppress(OSError):
        sock.connect(str(path))
        path.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        project, folder = Path(tmp) / "project", Path(tmp) / "sock"
        project.mkdir()
        folder.mkdir(mode=0o700)
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "GEMINI", "CURSOR"))
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its byte code
        env.update(AGENT_REMINDERS_HOOK_DIR=str(folder), AGENT_REMINDERS_HOOK_SERVER_IDLE="120")
        served, own = dict(env), {**env, "AGENT_REMINDERS_HOOK_SERVER": "off"}
        cases: list[tuple[str, list[str], str, dict[str, str]]] = [
            ("`python -c pass`", [sys.executable, "-c", "pass"], "", env)
        ]
        for agent, (quiet, failing) in _inputs(project).items():
            hook = shlex.split(hook_command(agent))
            for label, event in (("nothing new", quiet), ("failing `pytest -q`", failing)):
                for way, ways_env in (("served", served), ("own process", own)):
                    cases.append((f"{agent}, {label}, {way}", hook, json.dumps(event), ways_env))
        try:
            for _, argv, stdin, case_env in cases:  # warm-up: sessions made, server started
                _timed(argv, stdin, case_env, project)
            time.sleep(1.0)
            times: dict[str, list[float]] = {label: [] for label, *_ in cases}
            for _ in range(args.runs):
                for label, argv, stdin, case_env in cases:
                    times[label].append(_timed(argv, stdin, case_env, project))
        finally:
            _stop_server(folder)
    medians = {label: statistics.median(runs) for label, runs in times.items()}
    bare = medians["`python -c pass`"]
    served_worst = max(v for k, v in medians.items() if k.endswith(", served"))
    own_worst = max(v for k, v in medians.items() if k.endswith("own process"))
    lines = [
        f"Machine: {machine()}; load average {load:.1f} at the start. Medians of {args.runs} "
        "rounds; each round runs every line once, in turn, each a fresh process (the "
        "installed `agent-reminders hook <agent>`, the hook input on stdin, a SQLite store "
        "that already holds the session, byte code cached).",
        "",
        "| process | wall ms | x `python -c pass` |",
        "|---|---:|---:|",
        *(f"| {label} | {ms * 1e3:.1f} | {ms / bare:.2f} |" for label, ms in medians.items()),
        "",
        f"With the hook server up, the slowest run costs **{served_worst / bare:.2f}x** the "
        f"bare interpreter ({served_worst * 1e3:.1f} ms against {bare * 1e3:.1f} ms); a run "
        f"in its own process, {own_worst / bare:.1f}x ({own_worst * 1e3:.0f} ms).",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(TITLE, body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
