"""What one ``save_session`` costs as a session grows, on every backend (issue 10).

For each store (``MemoryStore``, ``SQLiteStore`` on a temporary file, ``RedisStore`` on a
``redis-server`` this script starts on a free loopback port) and each history size (100,
1,000 and 10,000 messages; a tenth as many audit entries and half as many delivered
reminder ids, as a long-running bridge session has; the reminders expire, so few stay
pending), the session is created, loaded back the
way the bridge does, and then run for a number of quiet turns: each turn a reminder is
queued and delivered, a user and an assistant message are appended, and the turn is saved
(only ``save_session`` is timed). A second pass runs the same turns with a ticker on the
event loop and reports the longest the loop was held up during a save (the JSON work of a
save belongs in the store's own thread, not on the loop).

Prints median and p99 per size, the growth ratio t(10k)/t(100) per store and the loop stall;
writes bench/results.md. ``--json`` prints the medians as JSON instead, and ``--before FILE``
adds the medians of such a run (of another tree) to the table, side by side.

Run: make bench  (or: python bench/store_save.py [--turns N])
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from _results import RESULTS, machine, write_section
from agent_reminders import Session
from agent_reminders.storage import MemoryStore, SQLiteStore, Store

SIZES = (100, 1_000, 10_000)
STORES = ("MemoryStore", "SQLiteStore", "RedisStore")
TICK = 0.001


def grown(size: int) -> Session:
    """A session with ``size`` messages, ``size // 10`` audit entries and ``size // 2``
    delivered reminder ids; the delivered reminders expire (a TTL, as the crash test's do),
    so what stays pending is small."""
    s = Session(session_id="bench", system="You are a coding agent.")
    for n in range(size // 2):
        s.append({"role": "user", "content": f"Step {n}: please look at module_{n}.py"})
        s.append({"role": "assistant", "content": f"Looked at module_{n}.py; all good."})
        s.queue.remind({"body": f"CI run {n} finished: green.", "ttl_turns": 2}, mode="interrupt")
        s.run_seam("iteration_start")  # delivered into the transcript
        if n % 5 == 0:
            s.queue.remind({"body": f"note {n} for the record"}, mode="audit_only")
            s.run_seam("loop_exit")  # an audit entry
        s.post_turn(n)
    return s


def turn(s: Session, n: int) -> None:
    """One quiet step: a reminder queued and delivered, a question and its answer."""
    s.queue.remind({"body": f"build {n} is green", "ttl_turns": 2}, mode="interrupt")
    s.run_seam("iteration_start")
    s.append({"role": "user", "content": f"Next step {n}"})
    s.prepare_request()
    s.append({"role": "assistant", "content": f"Done with step {n}."})
    s.post_turn(s.turn)


def _free_port() -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != 6379:  # never the machine's own Redis
            return port


@asynccontextmanager
async def redis_server(folder: Path) -> AsyncIterator[str | None]:
    """``redis://127.0.0.1:PORT/0`` of a ``redis-server`` started here (no persistence),
    stopped at the end; ``None`` without the binary."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + 20
        while True:
            try:
                store = await _open_redis(url)
                await store.close()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _open_redis(url: str) -> Store:
    from agent_reminders.storage import open_store

    return await open_store(url)


async def measure(opener: Callable[[], Any], size: int, turns: int, *, stall: bool) -> list[float]:
    """Seconds per ``save_session`` over ``turns`` turns (or, with ``stall``, the longest
    event-loop hold-up during each save)."""
    made = opener()
    store: Store = await made if not isinstance(made, Store) else made
    try:
        await store.create_session(grown(size).state())
        loaded = await store.load_session("bench")
        assert loaded is not None
        s = Session.from_state(loaded)
        out: list[float] = []
        for n in range(turns):
            turn(s, n)
            state = s.state()
            if not stall:
                start = time.perf_counter()
                await store.save_session(state)
                out.append(time.perf_counter() - start)
                continue
            gaps: list[float] = []
            done = anyio.Event()

            async def tick(gaps: list[float] = gaps, done: anyio.Event = done) -> None:
                last = time.perf_counter()
                while not done.is_set():
                    await anyio.sleep(TICK)
                    now = time.perf_counter()
                    gaps.append(now - last - TICK)
                    last = now

            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                await anyio.sleep(TICK)
                await store.save_session(state)
                done.set()
            out.append(max(gaps, default=0.0))
        final = await store.load_session("bench")
        assert final is not None, "the session is gone"
        assert final.to_json() == s.state().to_json(), "a save lost data"
        return out
    finally:
        await store.close()


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def run(turns: int) -> dict[str, dict[int, dict[str, float]]]:
    """store -> size -> {"median", "p99", "stall"} in seconds."""
    results: dict[str, dict[int, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        async with redis_server(folder) as url:
            counter = iter(range(10**6))
            openers: dict[str, Callable[[], Any]] = {
                "MemoryStore": MemoryStore,
                "SQLiteStore": lambda: SQLiteStore(folder / f"state-{next(counter)}.db"),
            }
            if url is not None:
                openers["RedisStore"] = lambda: _flushed(url)
            for name, opener in openers.items():
                results[name] = {}
                for size in SIZES:
                    times = await measure(opener, size, turns, stall=False)
                    stalls = await measure(opener, size, max(5, turns // 4), stall=True)
                    results[name][size] = {
                        "median": statistics.median(times),
                        "p99": p99(times),
                        "stall": max(stalls),
                    }
                    print(
                        f"{name:12} {size:>6,} messages: median "
                        f"{statistics.median(times) * 1000:8.2f} ms",
                        file=sys.stderr,
                    )
    return results


async def _flushed(url: str) -> Store:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    await client.flushall()
    await client.aclose()
    return await _open_redis(url)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def report(
    results: dict[str, dict[int, dict[str, float]]],
    before: dict[str, dict[int, dict[str, float]]] | None,
    turns: int,
) -> str:
    head = "| store | history | median ms | p99 ms | loop stall max ms |"
    rule = "|---|---:|---:|---:|---:|"
    if before is not None:
        head += " before: median ms | before: loop stall max ms |"
        rule += "---:|---:|"
    lines = [head, rule]
    for name in STORES:
        if name not in results:
            blank = " | |" if before else ""
            lines.append(f"| `{name}` | — | no redis-server here | | |{blank}")
            continue
        for size in SIZES:
            row = results[name][size]
            line = (
                f"| `{name}` | {size:,} | {ms(row['median'])} | {ms(row['p99'])} | "
                f"{ms(row['stall'])} |"
            )
            if before is not None:
                old = before.get(name, {}).get(size)
                line += f" {ms(old['median'])} | {ms(old['stall'])} |" if old else " — | — |"
            lines.append(line)
    growth = ["| store | t(10k) / t(100) |" + (" before |" if before else ""), "|---|---:|"]
    if before is not None:
        growth[1] += "---:|"
    for name in results:
        ratio = results[name][SIZES[-1]]["median"] / results[name][SIZES[0]]["median"]
        line = f"| `{name}` | {ratio:.1f} x |"
        if before is not None and name in before:
            old = before[name][SIZES[-1]]["median"] / before[name][SIZES[0]]["median"]
            line += f" {old:.1f} x |"
        growth.append(line)
    return (
        "`python bench/store_save.py` — one `save_session` after a quiet turn (a reminder "
        "queued and delivered, a user and an assistant message appended) of a session with "
        "100 / 1,000 / 10,000 messages of history, a tenth as many audit entries and half "
        "as many delivered reminder ids, created and loaded back first as the bridge does; "
        f"{turns} turns per size. *Loop stall*: the longest the event loop was held up "
        f"during one save (a {TICK * 1000:.0f} ms ticker, a second pass). `SQLiteStore` on a "
        "temporary file (WAL, `synchronous=NORMAL`), `RedisStore` on a local "
        "`redis-server` started by the script."
        + (
            " *Before*: the same script on the tree before the save wrote only what a turn "
            "added (each save serialised the whole `SessionState` and read every queue row)."
            if before is not None
            else ""
        )
        + "\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(growth)
        + "\n\nA save serialises and writes the turn's new messages and audit entries, the "
        "head (pending reminders, clocks) and the queue ids the store object does not know "
        "to be stored, so its cost stays flat as the history grows; what still grows a little "
        "is one set difference over the session's delivered ids (in C, some 15 ns an id — "
        "`Session.state()` copies those sets too). The first save of a state the store "
        "object never wrote or read (another process wrote in between, or compaction "
        "rewrote the history) still writes every row. On SQLite a p99 far above the median is "
        "a WAL checkpoint (every 1,000 pages written, SQLite copies them back into the file "
        "and syncs it) that landed in one of the timed saves rather than in the session's "
        "creation.\n\n"
        f"Machine: {machine()}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--before", type=Path, help="a --json run of another tree")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    results = anyio.run(run, args.turns)
    if args.json:
        print(json.dumps(results))
        return 0
    before = None
    if args.before is not None:
        raw = json.loads(args.before.read_text())
        before = {n: {int(k): v for k, v in sizes.items()} for n, sizes in raw.items()}
    body = report(results, before, args.turns)
    write_section("Saving a turn as the session grows (`bench/store_save.py`)", body, args.output)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
