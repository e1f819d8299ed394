"""A soak of ``agent-reminders serve`` over WebSocket: steady reminds and prompts for minutes,
the server's memory and open files sampled as it runs, every acknowledgement checked after.

The server is the real command (``agent-reminders serve --ws 127.0.0.1:0``) in a subprocess,
on a SQLite store in a temp dir, with ``--model scripted:PATH`` (a one-step script it loops;
``serve`` keeps none of the requests a scripted model answers). Clients in this process:
``--sessions`` clients, each with a connection of its own and one session at a time, that
push a reminder every ``--remind-every`` seconds and run a prompt every ``--prompt-every``
seconds (the prompt drains the session's queue into its envelope). After ``--rotate-every``
prompts (default 3) a client's conversation ends and it starts a fresh session, as an agent's
tasks do. Two things grow by design and are kept out of the figure that way: a conversation's
history, which every prompt on it loads (one never compacted grows, and the memory of the
prompts running on it with it: ``--rotate-every 0`` gives about 4 MiB a minute at these rates),
and the SQLite store's save memo, which remembers what it wrote of the last 256 sessions
(``--rotate-every 30`` starts 200 sessions in 10 minutes and fills it over the whole run). With
the default, the memo is full within the first minute, and RSS growth after it measures what
the server keeps beyond its bounded caches. Every ``--sample-every`` seconds the server's
RSS (``/proc/PID/status``) and its open file descriptors (``/proc/PID/fd``) are read.

Pass: RSS growth from the first minute to the end at most 10 %, and every acknowledged
reminder in the store exactly once afterwards (pending, or delivered into a transcript).

Run: python bench/soak.py [--minutes 10] [--json]  (not part of ``make bench``: ``make soak``)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from _results import RESULTS, machine, table, write_section
from agent_reminders.storage import SQLiteStore

TOKEN = "soak-token-0123456789abcdef"
MAX_GROWTH = 0.10
SCRIPT = [{"content": "Noted; carrying on.", "usage": {"input_tokens": 900, "output_tokens": 6}}]


@dataclass
class Figures:
    minutes: float
    sessions: int
    rotate_every: int
    session_count: int = 0
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (s, RSS KiB, fds)
    acked: int = 0
    prompts: int = 0
    errors: list[str] = field(default_factory=list)
    found_once: int = 0
    missing: int = 0
    duplicated: int = 0

    def rss_after_first_minute(self) -> int:
        later = [rss for at, rss, _ in self.samples if at >= 60] or [self.samples[-1][1]]
        return later[0]

    def growth(self) -> float:
        start = self.rss_after_first_minute()
        return (self.samples[-1][1] - start) / start

    def passed(self) -> bool:
        return (
            self.growth() <= MAX_GROWTH
            and self.missing == 0
            and self.duplicated == 0
            and not self.errors
            and self.found_once == self.acked
        )


def _proc_figures(pid: int) -> tuple[int, int]:
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


class Client:
    """One session on a connection of its own; ids of the requests it is waiting for."""

    def __init__(self, ws: ClientConnection, figures: Figures) -> None:
        self.ws = ws
        self.figures = figures
        self.next_id = 0
        self.waiting: dict[int, anyio.Event] = {}
        self.replies: dict[int, dict[str, Any]] = {}

    async def read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame)
            rid = message.get("id")
            if rid in self.waiting:
                self.replies[rid] = message
                self.waiting.pop(rid).set()

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        rid = self.next_id
        done = self.waiting[rid] = anyio.Event()
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        )
        with anyio.fail_after(60):
            await done.wait()
        reply = self.replies.pop(rid)
        if "error" in reply:
            self.figures.errors.append(f"{method}: {reply['error']}")
        return reply


async def _session(
    url: str, figures: Figures, acked: dict[str, set[str]], until: float, args: argparse.Namespace
) -> None:
    async with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        client = Client(ws, figures)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read)
            current: list[str] = []

            async def fresh() -> None:
                made = await client.call("session/new", {"cwd": "/", "mcpServers": []})
                sid = made["result"]["sessionId"]
                acked.setdefault(sid, set())
                current[:] = [sid]

            await fresh()

            async def remind() -> None:
                n = 0
                while time.monotonic() < until:
                    n += 1
                    sid = current[0]
                    body = f"CI run {n} on {sid[:8]}: tests/test_api.py::test_login is red."
                    reply = await client.call(
                        "session/remind",
                        {"sessionId": sid, "body": body, "ttl_turns": 2, "tags": ["ci"]},
                    )
                    if "result" in reply:
                        acked[sid].add(reply["result"]["reminderId"])
                        figures.acked += 1
                    await anyio.sleep(args.remind_every)

            async def prompt() -> None:
                done = 0
                while time.monotonic() < until:
                    await anyio.sleep(args.prompt_every)
                    text = [{"type": "text", "text": "Carry on with the task."}]
                    sid = current[0]
                    reply = await client.call("session/prompt", {"sessionId": sid, "prompt": text})
                    if "result" in reply:
                        figures.prompts += 1
                    done += 1
                    if args.rotate_every and done % args.rotate_every == 0:
                        await fresh()  # the conversation ends; the next one starts

            async with anyio.create_task_group() as work:
                work.start_soon(remind)
                work.start_soon(prompt)
            tg.cancel_scope.cancel()


async def _sample(pid: int, figures: Figures, started: float, until: float, every: float) -> None:
    while True:
        now = time.monotonic()
        rss, fds = _proc_figures(pid)
        figures.samples.append((round(now - started, 1), rss, fds))
        if now >= until:
            return
        await anyio.sleep(min(every, max(0.0, until - now)))


async def _check_store(db: Path, acked: dict[str, set[str]], figures: Figures) -> None:
    async with SQLiteStore(db) as store:
        for sid, ids in acked.items():
            state = await store.load_session(sid)
            assert state is not None, sid
            pending = [item.id for item in state.queue.items]
            delivered = state.queue.delivered_ids
            for rid in ids:
                count = pending.count(rid) + (rid in delivered)
                if count == 1:
                    figures.found_once += 1
                elif count == 0:
                    figures.missing += 1
                else:
                    figures.duplicated += 1


def run(args: argparse.Namespace) -> Figures:
    figures = Figures(minutes=args.minutes, sessions=args.sessions, rotate_every=args.rotate_every)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = folder / "script.jsonl"
        script.write_text("\n".join(json.dumps(s) for s in SCRIPT) + "\n")
        config = folder / "bridge.toml"
        config.write_text(
            "[server]\nrate_per_second = 1000\n\n"
            f'[[tokens]]\ntoken = "{TOKEN}"\nadmin = true\nprompt = true\n'
        )
        db = folder / "state.db"
        command = [
            sys.executable, "-m", "agent_reminders", "serve", "--ws", "127.0.0.1:0",
            "--config", str(config), "--store", f"sqlite:{db}", "--model", f"scripted:{script}",
        ]  # fmt: skip
        server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=folder)
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            if not line.startswith("listening on "):
                raise SystemExit(f"serve did not start: {line}{server.stderr.read()}")
            url = line.split()[-1]
            acked: dict[str, set[str]] = {}

            async def main() -> None:
                started = time.monotonic()
                until = started + args.minutes * 60
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_sample, server.pid, figures, started, until, args.sample_every)
                    for _ in range(args.sessions):
                        tg.start_soon(_session, url, figures, acked, until, args)

            anyio.run(main)
        finally:
            server.terminate()
            server.wait(timeout=60)
            if server.stderr is not None:
                server.stderr.close()
        anyio.run(_check_store, db, acked, figures)
        figures.session_count = len(acked)
    return figures


def report(figures: Figures) -> str:
    rows = [
        (f"{at:.0f}", f"{rss / 1024:.1f}", fds)
        for at, rss, fds in figures.samples[:: max(1, len(figures.samples) // 12)]
    ]
    if rows[-1][0] != f"{figures.samples[-1][0]:.0f}":
        at, rss, fds = figures.samples[-1]
        rows.append((f"{at:.0f}", f"{rss / 1024:.1f}", fds))
    rss_values = [rss for _, rss, _ in figures.samples]
    fd_values = [fds for _, _, fds in figures.samples]
    verdict = "met" if figures.passed() else "MISSED"
    return "\n\n".join(
        [
            f"Machine: {machine()}. {figures.sessions} clients over WebSocket, one session at "
            f"a time each (a fresh one every {figures.rotate_every} prompts), for "
            f"{figures.minutes:g} minutes, {figures.session_count:,} sessions in all: "
            f"{figures.acked:,} reminds acknowledged, "
            f"{figures.prompts:,} prompts answered, {len(figures.errors)} error replies.",
            table(("seconds", "RSS MiB", "open fds"), rows),
            f"RSS after the first minute {figures.rss_after_first_minute() / 1024:.1f} MiB, at "
            f"the end {rss_values[-1] / 1024:.1f} MiB: growth **{figures.growth():+.1%}** "
            f"(target at most {MAX_GROWTH:.0%}: {verdict}); median "
            f"{statistics.median(rss_values) / 1024:.1f} MiB, max {max(rss_values) / 1024:.1f} "
            f"MiB; open fds {min(fd_values)} to {max(fd_values)}.",
            f"Acknowledged reminders in the store afterwards: {figures.found_once:,} exactly once, "
            f"{figures.missing} missing, {figures.duplicated} duplicated.",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--remind-every", type=float, default=0.25, help="seconds, per session")
    parser.add_argument("--prompt-every", type=float, default=2.0, help="seconds, per session")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds")
    parser.add_argument(
        "--rotate-every",
        type=int,
        default=3,
        help="prompts per conversation before a client starts a fresh session (0: never)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run(args)
    if args.json:
        print(
            json.dumps({**asdict(figures), "growth": figures.growth(), "passed": figures.passed()})
        )
    else:
        print(report(figures))
    write_section("Soak: `serve` over WebSocket (`bench/soak.py`)", report(figures), args.output)
    return 0 if figures.passed() else 1


if __name__ == "__main__":
    sys.exit(main())
