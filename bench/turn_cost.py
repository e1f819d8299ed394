"""Per-turn cost of the envelope path: commit_directives + post_turn.

For 100, 1,000 and 10,000 messages of history with 20 pending reminders, each measured turn
commits one new directive (a keyed reminder was replaced since the last request) and then ages
all pending reminders. History is rebuilt every BATCH turns so its size stays near the target.
Also measures the same turn through a Session (prepare_request + post_turn, spec 07).
Prints median and p99 per size and the growth ratio t(10k)/t(100); writes bench/results.md.

Run: make bench  (or: python bench/turn_cost.py [--turns N])
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _results import RESULTS, machine, write_section
from agent_reminders import Session, Transcript, commit_directives, inject_reminder, post_turn

SIZES = (100, 1_000, 10_000)
PENDING = 20
BATCH = 25


def history(size: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    while len(messages) < size:
        n = len(messages)
        messages.append({"role": "user", "content": f"Step {n}: please look at module_{n}.py"})
        messages.append({"role": "assistant", "content": f"Looked at module_{n}.py; all good."})
    return messages[:size]


def fresh(size: int, messages: list[dict[str, object]]) -> tuple[Transcript, int]:
    t = Transcript(messages)  # type: ignore[arg-type]
    for k in range(PENDING):
        t = inject_reminder(
            t, {"body": f"Reminder {k}: keep file_{k}.py consistent.", "dedupe_key": f"k{k}"}
        ).transcript
    t = commit_directives(t, turn=0).transcript
    return t, 1


def run(size: int, turns: int) -> list[float]:
    messages = history(size)
    samples: list[float] = []
    for i in range(turns):
        if i % BATCH == 0:
            # Drop the previous batch first: freeing its history must not land in a timed turn.
            t = committed = aged = None
            t, turn = fresh(size, messages)
        # Untimed: the model answered, and a producer replaced one keyed reminder.
        t = t.append({"role": "assistant", "content": f"answer {i}"})
        t = inject_reminder(
            t,
            {
                "body": f"Reminder {i % PENDING} v{i}",
                "dedupe_key": f"k{i % PENDING}",
                "ttl_turns": 30,
            },
            fired_at_turn=turn,
        ).transcript
        start = time.perf_counter_ns()
        committed = commit_directives(t, turn=turn)
        aged = post_turn(committed.transcript, turn)
        samples.append((time.perf_counter_ns() - start) / 1_000)
        assert committed.message is not None
        assert len(aged.transcript.reminders) == PENDING
        t, turn = aged.transcript, turn + 1
    return samples


def fresh_session(messages: list[dict[str, object]]) -> Session:
    session = Session(system=str(messages[0]["content"]))
    for message in messages[1:]:
        session.append(message)  # type: ignore[arg-type]
    for k in range(PENDING):
        session.inject(
            {"body": f"Reminder {k}: keep file_{k}.py consistent.", "dedupe_key": f"k{k}"}
        )
    session.prepare_request()
    session.post_turn(0)
    return session


def run_session(size: int, turns: int) -> list[float]:
    """The same turn through a Session: ``prepare_request`` (which also strips
    ``directive_ids`` into the request) + ``post_turn`` (spec 07, benchmark 2)."""
    messages = history(size)
    samples: list[float] = []
    for i in range(turns):
        if i % BATCH == 0:
            # Free the previous batch (session and last request) outside the timed region.
            session = request = None
            session = fresh_session(messages)
        session.append({"role": "assistant", "content": f"answer {i}"})
        session.inject(
            {
                "body": f"Reminder {i % PENDING} v{i}",
                "dedupe_key": f"k{i % PENDING}",
                "ttl_turns": 30,
            }
        )
        turn = session.turn
        start = time.perf_counter_ns()
        request = session.prepare_request()
        session.post_turn(turn)
        samples.append((time.perf_counter_ns() - start) / 1_000)
        assert request.turn == turn
    return samples


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def table(
    label: str, runner: Callable[[int, int], list[float]], turns: int
) -> tuple[str, float, float]:
    rows = []
    for size in SIZES:
        samples = runner(size, turns)
        rows.append((size, statistics.median(samples), p99(samples)))
    growth = rows[-1][1] / rows[0][1]
    text = "\n".join(
        [
            f"{label}:",
            "",
            "| messages | pending | median µs | p99 µs |",
            "|---:|---:|---:|---:|",
            *[f"| {s:,} | {PENDING} | {m:.1f} | {p:.1f} |" for s, m, p in rows],
            "",
            f"Growth ratio t(10k)/t(100): **{growth:.2f}**.",
        ]
    )
    print(text, end="\n\n")
    return text, growth, rows[-1][1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    run(100, 200)  # warm-up
    run_session(100, 200)
    core, growth, median_10k = table("`commit_directives` + `post_turn`", run, args.turns)
    session, _, _ = table(
        "`Session.prepare_request` + `Session.post_turn`", run_session, args.turns
    )
    met = growth <= 1.5 and median_10k <= 100
    print(
        f"commit + post_turn: growth {growth:.2f} (target <= 1.5), median at 10k "
        f"{median_10k:.1f} µs (target <= 100 µs): {'targets met' if met else 'TARGETS MISSED'}"
    )
    write_section(
        "Per-turn cost (`bench/turn_cost.py`)",
        f"{args.turns} turns per size, {PENDING} pending reminders, one new directive per turn, "
        f"history rebuilt every {BATCH} turns (outside the timed region).\n\n"
        f"Machine: {machine()}.\n\n{core}\n\n{session}",
        args.output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
