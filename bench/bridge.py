"""Durable ``session/remind`` over WebSocket, beside a bare ``websockets`` echo server.

Two servers, each in its own subprocess started the same way (``python bench/bridge.py
--server KIND``), so the clients (all in this process) never share an interpreter with them:

- ``bridge``: what ``agent-reminders serve --ws`` runs — ``Bridge`` on a ``SQLiteStore`` in a
  temp dir (WAL, ``synchronous=NORMAL``, the default) behind ``serve_ws``, with the
  default limits except the per-connection rate limit, raised so that it is not what we
  measure. ``session/remind`` answers only after ``SQLiteStore.enqueue`` has committed the row
  (``bridge/reminders.py``: ``_queue`` awaits ``store.enqueue``, whose transaction commits
  before it returns, and only then does the dispatcher build the reply).
- ``echo``: a bare ``websockets`` server sending every frame back, with the settings
  ``serve_ws`` gives its server (no permessage-deflate, the same frame and write limits): the
  ceiling of the stack (this Python, this event loop, this websockets, this client) on this
  machine.

A third server runs the same bridge on ``MemoryStore`` (nothing durable, no store thread):
what is left of the bridge's cost without the disk. With ``--beside TREE``, a fourth runs the
bridge of an older checkout (its own ``bench/bridge.py --server bridge`` with
``PYTHONPATH=TREE/src``), so the two trees are compared in the same rounds.

The same client code drives them all with the same request frames: 1, 10 and 50 connections,
each with one request outstanding (send, wait for the reply, send the next). Rounds alternate
(echo, bridge, in memory[, before], echo, ...); the tables hold the medians over rounds. A
client moves to a fresh session every ``SESSION_ROOM`` reminders, so no queue reaches its
pending limit.

Memory: a fresh bridge server gets 1,000 sessions through ``session/new``, each with two
reminders and two prompts (a model that answers at once; about five messages per session),
then sits idle; its RSS growth (and, in a second run under tracemalloc, its Python heap
growth) is divided by the number of sessions. Once on the ``SQLiteStore`` (sessions live in
the file) and once on ``MemoryStore`` (sessions live in the process).

Run: make bench  (or: python bench/bridge.py [--quick] [--json] [--rounds N] [--requests N]
[--beside ../before])
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from websockets.asyncio.client import ClientConnection, connect

from _results import RESULTS, machine, table, write_section
from agent_reminders import ModelRequest, ModelResponse
from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import WRITE_LIMIT, serve_ws
from agent_reminders.storage import MemoryStore, SQLiteStore

CLIENTS = (1, 10, 50)
TOKEN = "bench-token-0123456789abcdef"
SESSION_ROOM = 500  # reminders per session, under the default max_pending of 1,000
BODY = "CI is red on main: tests/test_api.py::test_login fails since 4f2a91c; look before merging."
TARGET_RATIO = 0.5
TARGET_P99_MS = 20.0
MAX_FRAME_BYTES = BridgeSettings().max_frame_bytes


# -- the servers (run in a subprocess) -------------------------------------------------------


class _Answer:
    """A model that answers at once and keeps nothing (the test doubles record requests)."""

    name = "bench"

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message={"role": "assistant", "content": "Done."})


async def _bridge(store_kind: str, db: Path, ready: Callable[[int], None]) -> None:
    settings = BridgeSettings(
        tokens=(Scope(token=TOKEN, prompt=True),),
        rate_per_second=1e9,  # the default 200/s per connection would be all we measured
    )
    store = SQLiteStore(db) if store_kind == "sqlite" else MemoryStore()
    try:
        await serve_ws(Bridge(store, model=_Answer(), settings=settings), ready=ready)
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()


async def _echo(ready: Callable[[int], None]) -> None:
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(ws: ServerConnection) -> None:
        async for frame in ws:
            await ws.send(frame)

    async with serve(
        handler,
        "127.0.0.1",
        0,
        max_size=MAX_FRAME_BYTES,
        compression=None,  # what serve_ws does
        write_limit=WRITE_LIMIT,
    ) as running:
        ready(next(iter(running.sockets)).getsockname()[1])
        await running.serve_forever()


def _memory_line() -> str:
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
    return json.dumps({"rss": _rss(os.getpid()), "traced": traced})


def _control() -> None:
    """Answer ``mem`` lines on stdin until it closes (the parent went away or is done)."""
    for line in sys.stdin:
        if line.strip() == "mem":
            print(_memory_line(), flush=True)


def server_main(kind: str, store_kind: str, db: Path, trace: bool, profile: Path | None) -> int:
    if trace:
        tracemalloc.start()

    def ready(port: int) -> None:
        print(f"port {port}", flush=True)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            if kind == "echo":
                tg.start_soon(_echo, ready)
            else:
                tg.start_soon(_bridge, store_kind, db, ready)
            await anyio.to_thread.run_sync(_control, abandon_on_cancel=True)
            tg.cancel_scope.cancel()

    if profile is None:
        anyio.run(main)
        return 0
    import cProfile

    profiler = cProfile.Profile()
    profiler.runcall(anyio.run, main)
    profiler.dump_stats(profile)
    return 0


# -- the client side -------------------------------------------------------------------------


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc (Linux only)")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """A server subprocess: ``kind`` is ``echo`` or ``bridge``."""

    def __init__(
        self,
        kind: str,
        workdir: Path,
        *,
        store: str = "sqlite",
        trace: bool = False,
        profile: Path | None = None,
        tree: Path | None = None,
    ) -> None:
        self.kind = kind
        self.db = workdir / f"{kind}-{store}-{uuid.uuid4().hex[:8]}.db"
        # another checkout of the project runs its own bench server with its own package
        script = __file__ if tree is None else str(tree / "bench" / "bridge.py")
        env = None if tree is None else dict(os.environ, PYTHONPATH=str(tree / "src"))
        command = [
            sys.executable,
            script,
            "--server",
            kind,
            "--store",
            store,
            "--db",
            str(self.db),
        ]
        if trace:
            command.append("--trace")
        if profile is not None:
            command += ["--profile", str(profile)]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.proc.kill()
            raise RuntimeError(f"{kind} server did not start (printed {line!r})")
        self.url = f"ws://127.0.0.1:{int(line.split()[1])}/"

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.proc.pid)

    def memory(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write("mem\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _frame(request_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


async def _call(ws: ClientConnection, request_id: int, method: str, params: dict[str, Any]) -> Any:
    """One request; notifications before its reply are skipped."""
    await ws.send(_frame(request_id, method, params))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == request_id:
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            return reply.get("result")


def _open(url: str) -> Any:
    return connect(
        url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=MAX_FRAME_BYTES
    )


@dataclass(frozen=True, slots=True)
class Round:
    throughput: float  # requests per second over the round
    p50_ms: float
    p99_ms: float
    cpu_us: float  # server CPU time per request
    requests: int
    request_bytes: int  # the longest frame sent and received in the round
    reply_bytes: int


def _remind_frame(request_id: int, session_id: str, client: int) -> str:
    params = {
        "sessionId": session_id,
        "body": BODY,
        "tags": ["ci"],
        "mode": "finish_step",
        "dedupe_key": f"ci-{client}-{request_id}",
    }
    return _frame(request_id, "session/remind", params)


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run_round(server: Server, clients: int, per_client: int, sessions: list[str]) -> Round:
    """``clients`` connections sending ``per_client`` reminders each, back to back."""
    async with anyio.create_task_group() as tg:
        sockets: list[ClientConnection] = [None] * clients  # type: ignore[list-item]

        async def open_one(i: int) -> None:
            sockets[i] = await _open(server.url)

        for i in range(clients):
            tg.start_soon(open_one, i)
    frames: list[list[tuple[int, str]]] = []
    for c, ws in enumerate(sockets):
        ids = []
        for _ in range(math.ceil(per_client / SESSION_ROOM)):
            if server.kind == "bridge":
                ids.append(
                    (await _call(ws, 0, "session/new", {"cwd": "/", "mcpServers": []}))["sessionId"]
                )
            else:
                ids.append(uuid.uuid4().hex)
        sessions += ids
        frames.append(
            [
                (n, _remind_frame(n, ids[(n - 1) // SESSION_ROOM], c))
                for n in range(1, per_client + 1)
            ]
        )
    latencies: list[float] = []
    errors: list[str] = []
    replied = [0]
    go = anyio.Event()

    async def client(ws: ClientConnection, mine: list[tuple[int, str]]) -> None:
        await go.wait()
        for request_id, frame in mine:
            start = time.perf_counter()
            await ws.send(frame)
            reply = await ws.recv()
            latencies.append(time.perf_counter() - start)
            replied[0] = max(replied[0], len(reply))
            message = json.loads(reply)
            if message.get("id") != request_id or "error" in message:
                errors.append(str(reply))

    cpu = server.cpu_seconds()
    async with anyio.create_task_group() as tg:
        for ws, mine in zip(sockets, frames, strict=True):
            tg.start_soon(client, ws, mine)
        await anyio.sleep(0.05)  # every client is waiting at the gate
        start = time.perf_counter()
        go.set()
    wall = time.perf_counter() - start
    cpu = server.cpu_seconds() - cpu
    for ws in sockets:
        await ws.close()
    if errors:
        raise RuntimeError(f"{server.kind}: {len(errors)} failed replies, e.g. {errors[0]}")
    total = clients * per_client
    ordered = sorted(latencies)
    return Round(
        throughput=total / wall,
        p50_ms=_percentile(ordered, 0.5) * 1e3,
        p99_ms=_percentile(ordered, 0.99) * 1e3,
        cpu_us=cpu / total * 1e6,
        requests=total,
        request_bytes=max(len(f) for mine in frames for _, f in mine),
        reply_bytes=replied[0],
    )


def _median_round(rounds: list[Round]) -> Round:
    return Round(
        throughput=statistics.median(r.throughput for r in rounds),
        p50_ms=statistics.median(r.p50_ms for r in rounds),
        p99_ms=statistics.median(r.p99_ms for r in rounds),
        cpu_us=statistics.median(r.cpu_us for r in rounds),
        requests=sum(r.requests for r in rounds),
        request_bytes=max(r.request_bytes for r in rounds),
        reply_bytes=max(r.reply_bytes for r in rounds),
    )


async def throughput(
    workdir: Path, rounds: int, requests: int, profile: Path | None, beside: Path | None = None
) -> tuple[dict[int, dict[str, Round]], int, int]:
    """Median rounds per client count and server (``before``: the bridge of the tree
    ``beside``, when given); reminders acknowledged and found stored."""
    servers = {
        k: Server(k, workdir, profile=profile if k == "bridge" else None)
        for k in ("echo", "bridge")
    }
    # the same bridge with nothing durable and no store thread: what the disk costs
    servers["memory"] = Server("bridge", workdir, store="memory")
    if beside is not None:
        servers["before"] = Server("bridge", workdir, tree=beside)
    sessions: list[str] = []
    elsewhere: list[str] = []  # sessions of the other bridges (their files are not checked)
    acknowledged = 0
    try:
        for kind, server in servers.items():  # warm-up, not reported
            warm = await run_round(
                server, 10, max(1, requests // 100), sessions if kind == "bridge" else elsewhere
            )
            acknowledged += warm.requests if kind == "bridge" else 0
        results: dict[int, dict[str, Round]] = {}
        for clients in CLIENTS:
            per_client = max(1, requests // clients)
            got: dict[str, list[Round]] = {k: [] for k in servers}
            for _ in range(rounds):
                for kind, server in servers.items():
                    got[kind].append(
                        await run_round(
                            server,
                            clients,
                            per_client,
                            sessions if kind == "bridge" else elsewhere,
                        )
                    )
            acknowledged += sum(r.requests for r in got["bridge"])
            results[clients] = {k: _median_round(v) for k, v in got.items()}
    finally:
        for server in servers.values():
            server.stop()
    return results, acknowledged, await _stored(servers["bridge"].db, sessions)


async def _stored(db: Path, sessions: list[str]) -> int:
    """Reminders in the bridge's file after it stopped: each acknowledged one is there."""
    async with SQLiteStore(db) as store:
        return sum([len(await store.pending(s)) for s in sessions])


async def idle_memory(
    workdir: Path, store: str, sessions: int, trace: bool
) -> tuple[float, float | None]:
    """Bytes per idle session — RSS growth (or traced heap growth) over ``sessions`` sessions —
    and, on SQLite, the median number of messages a session holds."""
    server = Server("bridge", workdir, store=store, trace=trace)
    key = "traced" if trace else "rss"

    async def fill(count: int) -> None:
        async def one_client(ids: range) -> None:
            async with _open(server.url) as ws:
                for i in ids:
                    sid = (await _call(ws, 1, "session/new", {"cwd": "/", "mcpServers": []}))[
                        "sessionId"
                    ]
                    for r in range(2):
                        await _call(
                            ws, 2, "session/remind", {"sessionId": sid, "body": f"{BODY} ({i}.{r})"}
                        )
                        prompt = [
                            {"type": "text", "text": f"Step {r} of task {i}: fix the login test."}
                        ]
                        await _call(ws, 3, "session/prompt", {"sessionId": sid, "prompt": prompt})

        async with anyio.create_task_group() as tg:
            for c in range(10):
                tg.start_soon(one_client, range(c, count, 10))

    try:
        await fill(20)  # warm every code path and cache first
        before = await anyio.to_thread.run_sync(server.memory)
        await fill(sessions)
        await anyio.sleep(0.5)  # idle, every connection closed
        after = await anyio.to_thread.run_sync(server.memory)
    finally:
        server.stop()
    messages = None
    if store == "sqlite":
        async with SQLiteStore(server.db) as opened:
            messages = statistics.median(s.message_count for s in await opened.list_sessions())
    return float(after[key] - before[key]) / sessions, messages


def _table(results: dict[int, dict[str, Round]]) -> str:
    rows = []
    for clients, row in results.items():
        b, e = row["bridge"], row["echo"]
        rows.append(
            (
                clients,
                f"{b.throughput:,.0f}",
                f"{b.p50_ms:.2f}",
                f"{b.p99_ms:.2f}",
                f"{b.cpu_us:.0f}",
                f"{e.throughput:,.0f}",
                f"{e.p50_ms:.2f}",
                f"{e.p99_ms:.2f}",
                f"{e.cpu_us:.0f}",
                f"**{b.throughput / e.throughput:.2f}**",
            )
        )
    header = ("clients", "bridge reminds/s", "p50 ms", "p99 ms", "server CPU µs/req")
    header += ("echo msgs/s", "echo p50 ms", "echo p99 ms", "echo CPU µs/req", "bridge ÷ echo")
    return table(header, rows)


def _memory_table(results: dict[int, dict[str, Round]]) -> str:
    rows = []
    for clients, row in results.items():
        m, b, e = row["memory"], row["bridge"], row["echo"]
        rows.append(
            (
                clients,
                f"{m.throughput:,.0f}",
                f"{m.p99_ms:.2f}",
                f"{m.cpu_us:.0f}",
                f"{m.throughput / e.throughput:.2f}",
                f"{b.throughput / m.throughput:.2f}",
            )
        )
    header = ("clients", "on `MemoryStore` reminds/s", "p99 ms", "server CPU µs/req")
    return table((*header, "÷ echo", "durable ÷ in memory"), rows)


def _beside_table(results: dict[int, dict[str, Round]]) -> str:
    rows = []
    for clients, row in results.items():
        b, o = row["bridge"], row["before"]
        rows.append(
            (
                clients,
                f"{o.throughput:,.0f}",
                f"{o.p99_ms:.2f}",
                f"{o.cpu_us:.0f}",
                f"{b.throughput:,.0f}",
                f"{b.p99_ms:.2f}",
                f"{b.cpu_us:.0f}",
                f"**{b.throughput / o.throughput:.2f}**",
            )
        )
    header = ("clients", "before reminds/s", "before p99 ms", "before CPU µs/req")
    header += ("this reminds/s", "this p99 ms", "this CPU µs/req", "this ÷ before")
    return table(header, rows)


def _beside_note(results: dict[int, dict[str, Round]], tree: Path) -> list[str]:
    """The older tree's bridge, measured in the same rounds."""
    revision = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return [
        "",
        f"The same rounds also ran the bridge of an older tree (`{revision or tree.name}`, "
        "its own `bench/bridge.py --server bridge` on its own package), alternating with the "
        "servers above:",
        "",
        _beside_table(results),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("echo", "bridge"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--store", choices=("sqlite", "memory"), default="sqlite", help=argparse.SUPPRESS
    )
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile",
        type=Path,
        help="cProfile the bridge server's event-loop thread into this file (pstats format)",
    )
    parser.add_argument("--quick", action="store_true", help="a short run (fewer, smaller rounds)")
    parser.add_argument("--rounds", type=int, help="rounds per server and client count")
    parser.add_argument("--requests", type=int, help="requests per round (split among clients)")
    parser.add_argument("--sessions", type=int, help="idle sessions for the memory figure")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--beside",
        type=Path,
        help="an older checkout of this project (e.g. git worktree add ../before REV): its "
        "bridge runs in the same alternating rounds, and the table compares the two",
    )
    args = parser.parse_args()
    if args.server is not None:
        return server_main(args.server, args.store, args.db, args.trace, args.profile)
    rounds = args.rounds or (2 if args.quick else 5)
    requests = args.requests or (300 if args.quick else 6000)
    sessions = args.sessions or (100 if args.quick else 1000)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        results, acknowledged, stored = anyio.run(
            throughput, workdir, rounds, requests, args.profile, args.beside
        )
        measured = {
            (store, key): anyio.run(idle_memory, workdir, store, sessions, key == "traced")
            for store in ("sqlite", "memory")
            for key in ("rss", "traced")
        }
    memory = {k: v[0] for k, v in measured.items()}
    messages = measured["sqlite", "rss"][1]
    load_after = os.getloadavg()
    figures = {
        "machine": machine(),
        "load_average": {"before": list(load_before), "after": list(load_after)},
        "rounds": rounds,
        "requests_per_round": requests,
        "clients": {
            str(c): {
                "bridge": asdict(row["bridge"]),
                "echo": asdict(row["echo"]),
                "ratio": row["bridge"].throughput / row["echo"].throughput,
                "memory": asdict(row["memory"]),
                **({"before": asdict(row["before"])} if "before" in row else {}),
            }
            for c, row in results.items()
        },
        "acknowledged": acknowledged,
        "stored": stored,
        "idle_sessions": sessions,
        "messages_per_idle_session": messages,
        "bytes_per_idle_session": {
            store: {key: memory[store, key] for key in ("rss", "traced")}
            for store in ("sqlite", "memory")
        },
    }

    def clients_where(fails: Callable[[dict[str, Round]], bool]) -> list[str]:
        return [f"{c} client{'s' if c > 1 else ''}" for c, row in results.items() if fails(row)]

    slow = clients_where(lambda r: r["bridge"].throughput / r["echo"].throughput < TARGET_RATIO)
    late = clients_where(lambda row: row["bridge"].p99_ms >= TARGET_P99_MS)
    missed = sorted(set(slow) | set(late), key=lambda name: int(name.split()[0]))

    def verdict(failed: list[str]) -> str:
        return "met" if not failed else "MISSED at " + ", ".join(failed)

    table = _table(results)
    sizes = {
        kind: (
            max(row[kind].request_bytes for row in results.values()),
            max(row[kind].reply_bytes for row in results.values()),
        )
        for kind in ("bridge", "echo")
    }
    load = (
        ", ".join(f"{x:.2f}" for x in load_before)
        + " → "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    body = "\n".join(
        [
            f"Machine: {machine()}. Load average (1, 5, 15 min) {load}.",
            "",
            f"`session/remind` over WebSocket, each reply sent after its row is committed "
            f"(`SQLiteStore`, WAL, `synchronous=NORMAL`), beside a bare `websockets` echo server "
            f"driven by the same client code with the same frames. Servers in their own "
            f"subprocess, clients in the benchmark's process; each client keeps one request "
            f"outstanding. Medians over {rounds} alternating rounds of {requests:,} requests "
            f"(split among the clients).",
            "",
            table,
            "",
            "The same rounds ran the same bridge on `MemoryStore` too (nothing durable, no store "
            "thread: each remind validated, encoded and queued in memory), which shows what the "
            "durable commit and its thread hand-off cost:",
            "",
            _memory_table(results),
            *(_beside_note(results, args.beside) if args.beside is not None else []),
            "",
            f"Frames: requests up to {sizes['bridge'][0]} bytes; replies up to "
            f"{sizes['bridge'][1]} bytes from the bridge, {sizes['echo'][1]} from the echo server "
            "(the request sent back). Both servers run `websockets` as `serve_ws` does, without "
            "permessage-deflate (the clients offer it, with the library's defaults; it is "
            "declined).",
            f"Targets: bridge ÷ echo ≥ {TARGET_RATIO} — {verdict(slow)}; "
            f"p99 < {TARGET_P99_MS:g} ms — {verdict(late)}.",
            "On this shared machine the echo rate moves most with the other load; server CPU "
            "per request is the steadier figure.",
            f"Acknowledged reminders found in the file after the server stopped: "
            f"{stored:,} of {acknowledged:,}.",
            "",
            f"Memory of {sessions:,} idle sessions (each: `session/new`, 2 reminders, 2 prompts: "
            f"{messages:g} messages, median), the growth of the server process divided by the "
            "sessions. On `SQLiteStore` a session lives in the file, so the Python heap hardly "
            "changes; what RSS adds is mostly SQLite's page cache, which is bounded (2 MiB by "
            "default).",
            "",
            "| store | RSS bytes/session | Python heap bytes/session (tracemalloc) |",
            "|---|---:|---:|",
            *[
                f"| `{name}` | {memory[store, 'rss']:,.0f} | {memory[store, 'traced']:,.0f} |"
                for store, name in (("sqlite", "SQLiteStore"), ("memory", "MemoryStore"))
            ],
        ]
    )
    print(json.dumps(figures, indent=2) if args.json else body)
    if not args.json:
        print("\n" + ("targets met" if not missed else "TARGETS MISSED: " + "; ".join(missed)))
    write_section("Bridge over WebSocket (`bench/bridge.py`)", body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
