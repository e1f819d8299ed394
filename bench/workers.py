"""``session/remind`` throughput: two workers on one Redis beside one worker on SQLite.

Every server is a real ``agent-reminders serve`` process over stdio, driven by the same client
code (``BridgeClient.connect_stdio``) in this process:

- ``sqlite, 1 worker``: ``serve --store sqlite:PATH`` (WAL, ``synchronous=NORMAL``, the
  default): the embedded store;
- ``redis, 1 worker``: ``serve --store redis://…`` — the same, on Redis;
- ``redis, 2 workers``: two such processes on the same Redis; the clients' requests are spread
  over both, and every session is shared (a session made through one worker is reminded
  through both).

Redis is this benchmark's own ``redis-server`` on a free loopback port (no persistence), stopped
by its PID at the end; the machine's own Redis is never used. Each configuration gets the same
load: ``CONCURRENCY`` client tasks per run, each with one request outstanding (send, wait for
the reply, send the next), ``REQUESTS`` reminders in all, each task on its own session (made
before the clock starts). A reminder is acknowledged only once it is durable in the store
(committed to the file, or in Redis). Rounds alternate the configurations; the table holds the
medians over rounds.

Run: make bench  (or: python bench/workers.py [--quick] [--rounds N] [--requests N])
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from _results import RESULTS, machine, write_section
from agent_reminders.bridge import BridgeClient

SRC = str(Path(__file__).resolve().parents[1] / "src")
BODY = "CI is red on main: tests/test_api.py::test_login fails since 4f2a91c; look before merging."
CONCURRENCY = 16
REQUESTS = 4000
ROUNDS = 3
TITLE = "Many workers: `session/remind` throughput (`bench/workers.py`)"


def _free_port() -> int:
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != 6379:
            return port


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """This benchmark's own ``redis-server`` on a free loopback port, and its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("bench/workers.py needs a redis-server binary on PATH")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"*1\r\n$4\r\nPING\r\n")
                if conn.recv(64).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@dataclass
class Run:
    """One configuration's run: reminders per second and latencies (ms)."""

    per_second: float
    p50_ms: float
    p99_ms: float


async def run_once(stores: list[str], requests: int, concurrency: int) -> Run:
    """``requests`` reminders through ``serve`` processes on ``stores`` (one per worker)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-m", "agent_reminders.cli", "serve", "--store"]
    clients = [
        await BridgeClient.connect_stdio([*argv, s], env=env, stderr=subprocess.DEVNULL)
        for s in stores
    ]
    try:
        for client in clients:
            await client.initialize()
        # each task on its own session, made through the first worker: all of them shared
        sessions = [await clients[0].new_session() for _ in range(concurrency)]
        share, extra = divmod(requests, concurrency)
        latencies: list[float] = []

        async def task(n: int) -> None:
            for i in range(share + (n < extra)):
                client = clients[(n + i) % len(clients)]
                start = time.perf_counter()
                await client.remind(BODY, session_id=sessions[n], tags=["ci"])
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for n in range(concurrency):
                tg.start_soon(task, n)
        elapsed = time.perf_counter() - began
        pending = sum([len(await clients[-1].pending(s)) for s in sessions])
        assert pending == requests, (pending, requests)  # every one acknowledged and stored
    finally:
        for client in clients:
            await client.aclose()
    latencies.sort()
    return Run(
        per_second=requests / elapsed,
        p50_ms=1000 * latencies[len(latencies) // 2],
        p99_ms=1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    )


async def bench(rounds: int, requests: int, concurrency: int) -> dict[str, list[Run]]:
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        folder = Path(tmp)
        redis, url = start_redis(folder)
        try:
            configs = {
                "sqlite, 1 worker": lambda n: [f"sqlite:{folder / f'state-{n}.db'}"],
                "redis, 1 worker": lambda n: [url.replace("/0", f"/{n % 16}")],
                "redis, 2 workers": lambda n: [url.replace("/0", f"/{n % 16}")] * 2,
            }
            runs: dict[str, list[Run]] = {name: [] for name in configs}
            count = 0
            for _ in range(rounds):
                for name, stores in configs.items():
                    count += 1  # a fresh file / database each run: the same start for all
                    runs[name].append(await run_once(stores(count), requests, concurrency))
                    print(f"{name}: {runs[name][-1].per_second:,.0f} reminders/s", flush=True)
        finally:
            stop(redis)
    return runs


def redis_version() -> str:
    """``7.0.15`` from ``Redis server v=7.0.15 sha=…``."""
    text = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return next((w[2:] for w in text.split() if w.startswith("v=")), "?")


def report(runs: dict[str, list[Run]], rounds: int, requests: int, concurrency: int) -> str:
    base = statistics.median(r.per_second for r in runs["sqlite, 1 worker"])
    lines = [
        f"Machine: {machine()}; `redis-server` {redis_version()} (no persistence). "
        f"{requests:,} reminders per run from {concurrency} client tasks (one request "
        "outstanding each, every task on its own session), over stdio to real "
        f"`serve` processes; medians of {rounds} alternating rounds.",
        "",
        "| store | workers | reminders/s | vs SQLite | p50 latency | p99 latency |",
        "|---|---|---|---|---|---|",
    ]
    for name, found in runs.items():
        store, workers = name.split(", ")
        rate = statistics.median(r.per_second for r in found)
        p50 = statistics.median(r.p50_ms for r in found)
        p99 = statistics.median(r.p99_ms for r in found)
        lines.append(
            f"| {store} | {workers.split()[0]} | {rate:,.0f} | {rate / base:.2f}x | "
            f"{p50:.2f} ms | {p99:.2f} ms |"
        )
    lines += [
        "",
        "Every reminder is acknowledged only once durable (a SQLite commit; in Redis), and a run "
        "checks that all of them are pending afterwards. With two workers every session is "
        "reminded through both, so both write the same Redis keys (each enqueue is one Lua "
        "script: duplicate-id check, queue-full check, append, publish). The client, the "
        "servers and Redis share this machine's cores, so a second worker adds parallel "
        "JSON-RPC parsing and validation only as far as there are cores to run it.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--quick", action="store_true", help="1 round of 200 (a smoke run)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    rounds, requests = (1, 200) if args.quick else (args.rounds, args.requests)
    runs = anyio.run(bench, rounds, requests, args.concurrency)
    text = report(runs, rounds, requests, args.concurrency)
    write_section(TITLE, text, args.output)
    print(text)


if __name__ == "__main__":
    main()
