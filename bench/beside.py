"""This tree beside an older one: the per-turn rows and the loop, alternating, in one run.

The targets of the core restructuring were set on another machine, against the tree before it;
what carries over to this machine is the ratio of the two trees measured side by side. Check the
older tree out beside this one and give its path:

    git worktree add --detach ../before 9a39811~1
    python bench/beside.py ../before [--rounds 3]

Each round runs, for the older tree and then this one, ``bench/turn_cost.py --json`` (medians at
10,000 messages) and ``bench/loop_overhead.py --json`` (``agent_loop`` with every canonical
provider: total ÷ steps and the steady-state iteration), each in a fresh interpreter with
``PYTHONPATH=<tree>/src``, so both trees run the same benchmark code. Per figure we keep the
lowest over the rounds: on a shared machine the noise only ever adds time. The section
"Beside the tree before the core restructuring" of ``bench/results.md`` is rewritten.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _results import RESULTS, machine, write_section

BENCH = Path(__file__).resolve().parent
HERE = BENCH.parent
SIZE = 10_000

# (row label in turn_cost's JSON, label here, the "today" µs, its target µs)
TURN_ROWS = (
    (
        "`commit_directives` + `post_turn`, 1 new",
        "`commit_directives` + `post_turn`, 20 pending, 1 new",
        31,
        12,
    ),
    (
        "`commit_directives` + `post_turn`, all committed (TTLs), 0 new",
        "same, all committed (TTLs), 0 new",
        30,
        5,
    ),
    ("`commit_directives` + `post_turn`, 0 pending", "same, 0 pending", 2.6, 2),
    (
        "`Session.prepare_request` + `Session.post_turn`, 1 new",
        "`Session.prepare_request` + `post_turn`, 20 pending, 1 new",
        55,
        20,
    ),
)
LOOP_ROWS = (
    ("iteration_us", "`agent_loop` steady-state iteration (all canonical providers)", 94, 50),
    ("total_us", "`agent_loop` total ÷ steps (with the session start)", 94, 50),
    (
        "default_iteration_us",
        "`agent_loop` steady-state iteration, the default session (no workspace, no fact store)",
        94,
        50,
    ),
)


def _run(tree: Path, script: str, *args: str) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(BENCH)])}
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _round(tree: Path, turns: int, repeats: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    rows = _run(tree, "turn_cost.py", "--turns", str(turns), "--output", os.devnull)
    for key, *_ in TURN_ROWS:
        figures[key] = next(median for size, median, _p99 in rows[key] if size == SIZE)
    loop = _run(tree, "loop_overhead.py", "--repeats", str(repeats))
    for key, *_ in LOOP_ROWS:
        figures[key] = loop[key][1]  # the lowest run of this round
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, help="a checkout of the older tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    before = args.before.resolve()
    if not (before / "src" / "agent_reminders").is_dir():
        parser.error(f"{before} is not a checkout of agent-reminders (no src/agent_reminders)")
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        runs["before"].append(_round(before, args.turns, args.repeats))
        runs["after"].append(_round(HERE, args.turns, args.repeats))
    best = {side: {k: min(r[k] for r in rs) for k in rs[0]} for side, rs in runs.items()}
    lines = [
        f"Machine: {machine()}. `python bench/beside.py <older tree>`: the older tree "
        f"(`{_describe(before)}`) and this one, alternating, {args.rounds} rounds; the lowest "
        "figure of the rounds per row. Per-turn rows: medians at 10,000 messages of history. "
        'The issue set its targets where the older tree measured the "today" figures; the '
        "ratio after ÷ before is what carries over to this machine.",
        "",
        "| row | before µs | after µs | after ÷ before | target ratio (target ÷ today) | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for key, label, today, target in (*TURN_ROWS, *LOOP_ROWS):
        b, a = best["before"][key], best["after"][key]
        ratio, goal = a / b, target / today
        verdict = "met" if ratio <= goal else f"**missed** (needs ≤ {goal * b:.1f} µs here)"
        lines.append(
            f"| {label} | {b:.2f} | {a:.2f} | {ratio:.3f} | {goal:.3f} ({target} / {today}) "
            f"| {verdict} |"
        )
    body = "\n".join(lines)
    print(body)
    write_section("Beside the tree before the core restructuring", body, args.output)
    return 0


def _describe(tree: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(tree), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()[:60]
    except (OSError, subprocess.CalledProcessError):
        return str(tree)


if __name__ == "__main__":
    raise SystemExit(main())
