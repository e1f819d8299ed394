"""Per-turn cost of the envelope path: commit_directives + post_turn, and the Session path.

Four rows, each at 100, 1,000 and 10,000 messages of history:

1. ``commit_directives`` + ``post_turn``, 20 pending, 1 new: each turn a keyed reminder was
   replaced since the last request, so one directive is committed; then all are aged.
2. the same, 20 pending all committed (each with a TTL), 0 new: nothing to commit; all age.
3. the same, 0 pending.
4. ``Session.prepare_request`` + ``Session.post_turn``, 20 pending, 1 new.

History is rebuilt every BATCH turns (outside the timed region) so its size stays near the
target. Each row and size runs ``--rounds`` times (rows interleaved) and the run with the lowest
median is kept. Prints median and p99 per size and the growth ratio t(10k)/t(100) per row; writes
bench/results.md. ``--json`` prints the medians as JSON instead (for side-by-side runs of two
trees).

Run: make bench  (or: python bench/turn_cost.py [--turns N])
"""

from __future__ import annotations

import argparse
import json
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
LONG_TTL = 10 * BATCH  # never expires within a batch


def history(size: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    while len(messages) < size:
        n = len(messages)
        messages.append({"role": "user", "content": f"Step {n}: please look at module_{n}.py"})
        messages.append({"role": "assistant", "content": f"Looked at module_{n}.py; all good."})
    return messages[:size]


def fresh(
    messages: list[dict[str, object]], pending: int = PENDING, ttl: int | None = None
) -> tuple[Transcript, int]:
    t = Transcript(messages)  # type: ignore[arg-type]
    for k in range(pending):
        options: dict[str, object] = {
            "body": f"Reminder {k}: keep file_{k}.py consistent.",
            "dedupe_key": f"k{k}",
        }
        if ttl is not None:
            options["ttl_turns"] = ttl
        t = inject_reminder(t, options).transcript
    t = commit_directives(t, turn=0).transcript
    return t, 1


def run(size: int, turns: int) -> list[float]:
    """Row 1: 20 pending, one new directive per turn."""
    messages = history(size)
    samples: list[float] = []
    for i in range(turns):
        if i % BATCH == 0:
            # Drop the previous batch first: freeing its history must not land in a timed turn.
            t = committed = aged = None
            t, turn = fresh(messages)
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


def _run_quiet(size: int, turns: int, pending: int) -> list[float]:
    messages = history(size)
    samples: list[float] = []
    for i in range(turns):
        if i % BATCH == 0:
            t = committed = aged = None
            t, turn = fresh(messages, pending, ttl=LONG_TTL)
        t = t.append({"role": "assistant", "content": f"answer {i}"})
        start = time.perf_counter_ns()
        committed = commit_directives(t, turn=turn)
        aged = post_turn(committed.transcript, turn)
        samples.append((time.perf_counter_ns() - start) / 1_000)
        assert committed.message is None
        assert aged.decremented_count == pending
        assert aged.expired_count == 0
        t, turn = aged.transcript, turn + 1
    assert [r.ttl_turns for r in t.reminders] == [LONG_TTL - (turns - 1) % BATCH - 1] * pending
    return samples


def run_committed(size: int, turns: int) -> list[float]:
    """Row 2: 20 pending, all committed, each with a TTL; nothing new."""
    return _run_quiet(size, turns, PENDING)


def run_empty(size: int, turns: int) -> list[float]:
    """Row 3: nothing pending."""
    return _run_quiet(size, turns, 0)


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
    """Row 4: the same turn as row 1 through a Session: ``prepare_request`` (which also strips
    ``directive_ids`` into the request) + ``post_turn``."""
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


# (label, pending, runner, target median µs at 10k)
ROWS: tuple[tuple[str, int, Callable[[int, int], list[float]], float], ...] = (
    ("`commit_directives` + `post_turn`, 1 new", PENDING, run, 12.0),
    ("`commit_directives` + `post_turn`, all committed (TTLs), 0 new", PENDING, run_committed, 5.0),
    ("`commit_directives` + `post_turn`, 0 pending", 0, run_empty, 2.0),
    ("`Session.prepare_request` + `Session.post_turn`, 1 new", PENDING, run_session, 20.0),
)
GROWTH_TARGET = 1.2


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(
    runner: Callable[[int, int], list[float]], turns: int
) -> list[tuple[int, float, float]]:
    """(size, median µs, p99 µs) per history size."""
    rows = []
    for size in SIZES:
        samples = runner(size, turns)
        rows.append((size, statistics.median(samples), p99(samples)))
    return rows


def lowest(runs: list[list[tuple[int, float, float]]]) -> list[tuple[int, float, float]]:
    """Per size, the run with the lowest median: on a shared machine noise only adds time,
    and a whole run can land in a slow spell."""
    return [min(same, key=lambda row: row[1]) for same in zip(*runs, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    parser.add_argument("--json", action="store_true", help="print medians as JSON only")
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per row and size; the lowest median is kept"
    )
    args = parser.parse_args()
    for _, _, runner, _ in ROWS:  # warm-up
        runner(100, 200)
    runs: list[list[list[tuple[int, float, float]]]] = [[] for _ in ROWS]
    for _ in range(args.rounds):  # rows interleaved, so a slow spell hits one run of each
        for index, (_, _, runner, _) in enumerate(ROWS):
            runs[index].append(measure(runner, args.turns))
    measured = [
        (label, pending, lowest(runs[index]), target)
        for index, (label, pending, _, target) in enumerate(ROWS)
    ]
    if args.json:
        print(
            json.dumps({label: [[s, m, p] for s, m, p in rows] for label, _, rows, _ in measured})
        )
        return 0
    lines: list[str] = []
    missed = []
    for label, pending, rows, target in measured:
        growth = rows[-1][1] / rows[0][1]
        lines += [
            f"{label}:",
            "",
            "| messages | pending | median µs | p99 µs |",
            "|---:|---:|---:|---:|",
            *[f"| {s:,} | {pending} | {m:.1f} | {p:.1f} |" for s, m, p in rows],
            "",
            f"Growth ratio t(10k)/t(100): **{growth:.2f}** (target ≤ {GROWTH_TARGET}; the "
            f"issue's median target at 10k, {target:g} µs, was set on another machine: see "
            "the side-by-side section for the ratio that carries over).",
            "",
        ]
        if growth > GROWTH_TARGET:
            missed.append(label)
    table = "\n".join(lines).rstrip()
    print(table)
    print("\n" + ("growth targets met" if not missed else "GROWTH MISSED: " + "; ".join(missed)))
    write_section(
        "Per-turn cost (`bench/turn_cost.py`)",
        f"{args.turns} turns per size and row, history rebuilt every {BATCH} turns (outside the "
        f"timed region), {args.rounds} runs per row and size (rows interleaved), the run with "
        f"the lowest median kept. Medians and p99 in µs; growth is the median at 10,000 "
        f"messages over the median at 100. `python bench/beside.py <older tree>` measures "
        f"these rows beside the tree before the core restructuring."
        f"\n\nMachine: {machine()}.\n\n{table}",
        args.output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
