"""The crash test of ``serve`` on SQLite, as rounds a test and a benchmark both run.

One round: start ``agent-reminders serve --store sqlite:PATH --model scripted:…`` over stdio,
feed it a steady, pipelined stream of ``session/remind`` requests on one session (some with a
dedupe key, some retrying an id whose reply was lost in an earlier crash, now and then a
``session/prompt`` that drains the queue into the transcript), SIGKILL it after a random
delay, then check the file it left:

- ``PRAGMA integrity_check`` is ``ok`` (the file opened read-only, before anything else
  touches it);
- every acknowledged remind (its ``{reminderId}`` reply was read) is in the store exactly
  once, pending or delivered; one sent but never acknowledged is there at most once (checked
  by id for the three in four that choose their id; the next round retries some of those
  with the same id, which must answer the id or ``RMD-002`` "already used"); one refused
  with ``-32005`` (queue full) is not there at all;
- nothing is both pending in the queue and already in the transcript (it would be delivered
  twice), and the transcript holds at most one pending reminder per dedupe key;
- after the restart, ``session/pending_injections`` on the new server lists exactly what the
  public ``SQLiteStore`` read from the file.

A server killed mid-prompt leaves its lease on the session; the next server on this machine
takes it over at once (the dead worker's process is gone). Should a refusal ``-32006`` naming
an earlier server still come (a takeover that could not be proven safe), the servers run with
a short ``lease_seconds`` and those refusals are counted (``busy``), not failures.

``tests/bridge/test_crash.py`` runs a few dozen rounds, ``bench/crash.py`` a hundred and
more and reports the figures.
"""

from __future__ import annotations

import json
import os
import queue
import random
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

import agent_reminders
from agent_reminders.storage import SQLiteStore

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
MAIN = "from agent_reminders.cli import main; main()"
DEDUPE_KEYS = ("ci-status", "lint", "deps")
# audit_only reminders end as audit entries of the transcript (rows a save appends to): a
# tenth of them
MODES = ("finish_step", "interrupt_immediate", "audit_only")
MODE_WEIGHTS = (7, 2, 1)
SCRIPT = [
    {"tool_calls": [{"id": "c1", "name": "grep", "arguments": {"q": "todo"}}]},
    {"content": "Checked."},
]
# a killed server's lease on the session runs out this fast, so the next round can prompt
LEASE_SECONDS = 0.5


def serve_env() -> dict[str, str]:
    """The environment of a ``serve`` subprocess: this checkout's sources first."""
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


class ServeProcess:
    """``agent-reminders serve`` as a subprocess, with a line-by-line JSON-RPC client.

    A thread reads stdout into a queue (``None`` marks the end of the stream) and another
    keeps stderr, so the server never blocks on a full pipe.
    """

    def __init__(self, *args: str, cwd: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, "serve", *args],
            cwd=cwd,
            env=serve_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.stderr_lines: list[bytes] = []
        self.next_id = 0
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.messages.put(json.loads(line))
        self.messages.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_lines).decode(errors="replace")

    def send(self, method: str, params: Any) -> int:
        """Send a request; returns its id."""
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        """Send a notification (no reply)."""
        frame = {"jsonrpc": "2.0", "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, request_id: int, timeout: float = 30) -> dict[str, Any]:
        """Read until the reply to ``request_id``; notifications on the way are kept."""
        while True:
            message = self.messages.get(timeout=timeout)
            if message is None:
                raise AssertionError(f"serve ended before replying:\n{self.stderr}")
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") == request_id:
                return message
            else:
                raise AssertionError(f"unexpected reply {message}")

    def call(self, method: str, params: Any, timeout: float = 30) -> Any:
        """A request whose result is expected."""
        reply = self.reply(self.send(method, params), timeout)
        assert "result" in reply, reply
        return reply["result"]

    def kill(self) -> None:
        """SIGKILL, then wait for the process and the end of its output."""
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._finish()

    def close(self) -> int:
        """End stdin (the server finishes what runs and exits); returns the exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        self._finish()
        return code

    def _finish(self) -> None:
        for thread in self._threads:
            thread.join(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@dataclass
class Figures:
    """What the rounds found: every counter but the first five must stay 0."""

    rounds: int = 0
    acked: int = 0
    sent: int = 0
    prompts: int = 0
    retries_confirmed: int = 0
    refused: int = 0  # -32005 queue full: a correct answer, counted, the id must be absent
    busy: int = 0  # -32006 from a killed server's lease not yet expired: a correct answer
    lost: dict[str, str] = field(default_factory=dict)  # id → where it was first missed
    duplicated: dict[str, str] = field(default_factory=dict)
    integrity_failures: list[str] = field(default_factory=list)
    dedupe_violations: list[str] = field(default_factory=list)
    bridge_mismatches: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    acked_per_round: list[int] = field(default_factory=list)
    # how long each round streamed before its SIGKILL (a random delay: acked / streamed is
    # the server's rate, comparable across rounds)
    streamed_seconds: list[float] = field(default_factory=list)
    restart_seconds: list[float] = field(default_factory=list)
    killed_mid_prompt: int = 0

    @property
    def failures(self) -> list[str]:
        """Every broken invariant, one line each."""
        return [
            *(f"lost {rid} ({where})" for rid, where in self.lost.items()),
            *(f"duplicated {rid} ({where})" for rid, where in self.duplicated.items()),
            *(f"integrity: {x}" for x in self.integrity_failures),
            *(f"dedupe: {x}" for x in self.dedupe_violations),
            *(f"bridge: {x}" for x in self.bridge_mismatches),
            *(f"unexpected: {x}" for x in self.unexpected),
        ]

    def acked_per_second(self, rounds: slice) -> float:
        """Reminds acknowledged per second of streaming over ``rounds`` (a slice of them)."""
        seconds = sum(self.streamed_seconds[rounds])
        return sum(self.acked_per_round[rounds]) / seconds if seconds else 0.0

    def restart_quantile(self, q: float) -> float:
        """The ``q`` quantile of the restart times (spawn → first reply), in seconds."""
        times = sorted(self.restart_seconds)
        return times[min(len(times) - 1, int(q * len(times)))]

    @property
    def restart_median(self) -> float:
        return statistics.median(self.restart_seconds)


@dataclass
class _Ledger:
    """What the client knows across rounds."""

    session_id: str = ""
    acked: set[str] = field(default_factory=set)
    unacked: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → params, to retry
    refused: set[str] = field(default_factory=set)
    last_pending: list[str] | None = None  # the store's pending ids after the last kill


class CrashRun:
    """Rounds of start → stream → SIGKILL → check on one SQLite file in ``workdir``."""

    def __init__(
        self, workdir: Path, *, seed: int = 0, max_delay: float = 0.8, window: int = 4
    ) -> None:
        self.workdir = workdir
        self.db = workdir / "state.db"
        self.script = workdir / "script.jsonl"
        self.script.write_text("".join(json.dumps(s) + "\n" for s in SCRIPT))
        self.config = workdir / "serve.toml"
        self.config.write_text(f"[server]\nlease_seconds = {LEASE_SECONDS}\n")
        self.rng = random.Random(seed)
        self.max_delay = max_delay
        self.window = window
        self.figures = Figures()
        self.ledger = _Ledger()
        self._count = 0

    def run(self, rounds: int) -> Figures:
        """Run ``rounds`` rounds, checking the file after each kill."""
        for _ in range(rounds):
            self.round()
            self.check_file()
        return self.figures

    # -- one round ------------------------------------------------------------------------

    def _remind(self, round_no: int) -> dict[str, Any]:
        rng = self.rng
        self._count += 1
        params: dict[str, Any] = {
            "sessionId": self.ledger.session_id,
            "body": f"round {round_no} reminder {self._count}: " + "x" * rng.randrange(0, 60),
            "mode": rng.choices(MODES, MODE_WEIGHTS)[0],
        }
        if rng.random() < 0.75:  # a caller-chosen id: a lost reply can be retried with it
            params["id"] = f"r{round_no}-{self._count}"
        if rng.random() < 0.3:
            params["dedupe_key"] = rng.choice(DEDUPE_KEYS)  # replaced in the transcript
        else:
            params["ttl_turns"] = rng.randint(1, 3)  # expires, so the transcript stays small
        return params

    def round(self) -> None:
        """Start a server, stream reminds, kill it at a random moment."""
        figures, ledger, rng = self.figures, self.ledger, self.rng
        round_no = figures.rounds
        figures.rounds += 1
        server = ServeProcess(
            "--store",
            f"sqlite:{self.db}",
            "--model",
            f"scripted:{self.script}",
            "--config",
            str(self.config),
            cwd=self.workdir,
        )
        try:
            server.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            figures.restart_seconds.append(time.perf_counter() - server.started)
            if not ledger.session_id:
                ledger.session_id = server.call("session/new", {"cwd": "/", "mcpServers": []})[
                    "sessionId"
                ]
            rows = server.call("session/pending_injections", {"sessionId": ledger.session_id})
            seen = [row["id"] for row in rows["injections"]]
            if ledger.last_pending is not None and seen != ledger.last_pending:
                figures.bridge_mismatches.append(
                    f"round {round_no}: bridge lists {len(seen)} pending, the file "
                    f"{len(ledger.last_pending)}"
                )
            delay = rng.uniform(0, self.max_delay)
            acked = self._stream(server, round_no, len(seen), delay)
        except BaseException:
            server.kill()
            raise
        figures.acked_per_round.append(acked)
        figures.streamed_seconds.append(delay)

    def _stream(self, server: ServeProcess, round_no: int, waiting: int, delay: float) -> int:
        """Reminds, ``window`` in flight, and a prompt whenever 40 more wait in the queue
        (at once when ``waiting`` — left over from the last round — is that many); SIGKILL
        after ``delay`` seconds. Returns how many reminds were acknowledged."""
        figures, ledger = self.figures, self.ledger
        in_flight: dict[int, tuple[str, dict[str, Any]]] = {}
        retries = list(ledger.unacked.items())[:8]
        prompt_running = False
        acked, since_prompt = 0, waiting
        deadline = time.perf_counter() + delay

        def handle(message: dict[str, Any]) -> None:
            nonlocal acked, since_prompt, prompt_running
            if "method" in message:
                return
            kind, params = in_flight.pop(message["id"])
            if kind == "prompt":
                prompt_running = False
                error = message.get("error")
                if error is None:
                    figures.prompts += 1
                elif error["code"] == -32006 and error["data"]["owner"] not in server.stderr:
                    figures.busy += 1  # an earlier, killed server's lease: try again soon
                    since_prompt = 30
                else:
                    figures.unexpected.append(f"prompt failed: {error}")
                return
            rid = params.get("id")
            if "result" in message:
                got = message["result"]["reminderId"]
                if rid is not None and got != rid:
                    figures.unexpected.append(f"asked for id {rid}, got {got}")
                ledger.acked.add(got)
                ledger.unacked.pop(got, None)
                acked += 1
                since_prompt += 1
            elif kind == "retry" and message["error"].get("data", {}).get("code") == "RMD-002":
                # the first attempt was stored before its reply was lost: it must be there
                ledger.acked.add(rid)  # type: ignore[arg-type]
                ledger.unacked.pop(rid, None)  # type: ignore[arg-type]
                figures.retries_confirmed += 1
            elif message["error"]["code"] == -32005 and kind == "remind":
                figures.refused += 1
                if rid is not None:
                    ledger.refused.add(rid)
                    ledger.unacked.pop(rid, None)
            else:
                figures.unexpected.append(f"remind {rid}: {message['error']}")
                ledger.unacked.pop(rid, None)  # type: ignore[arg-type]

        while True:
            now = time.perf_counter()
            if now >= deadline:
                break
            while len(in_flight) < self.window:
                if not prompt_running and since_prompt >= 40:
                    text = [{"type": "text", "text": "go"}]
                    prompt = {"sessionId": ledger.session_id, "prompt": text}
                    in_flight[server.send("session/prompt", prompt)] = ("prompt", prompt)
                    prompt_running, since_prompt = True, 0
                    continue
                if retries:
                    _, params = retries.pop()
                    in_flight[server.send("session/remind", params)] = ("retry", params)
                    continue
                params = self._remind(round_no)
                if "id" in params:
                    ledger.unacked[params["id"]] = params  # until its reply is read
                in_flight[server.send("session/remind", params)] = ("remind", params)
                figures.sent += 1
            try:
                message = server.messages.get(timeout=max(0.0, deadline - now))
            except queue.Empty:
                break
            if message is None:
                figures.unexpected.append(f"serve exited by itself:\n{server.stderr}")
                break
            handle(message)
        if prompt_running:
            figures.killed_mid_prompt += 1
        server.kill()
        # replies the server wrote before it died were received: they count as acknowledged
        while (message := server.messages.get(timeout=30)) is not None:
            handle(message)
        figures.acked += acked
        return acked

    # -- checking the file ----------------------------------------------------------------

    def check_file(self) -> None:
        """The crash invariants on the file the killed server left."""
        figures, ledger = self.figures, self.ledger
        where = f"after round {figures.rounds - 1}"
        raw = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            verdict = [row[0] for row in raw.execute("PRAGMA integrity_check")]
            # an id queued or settled: present once (both at once is a duplicate)
            rows = Counter(
                row[0]
                for row in raw.execute(
                    "SELECT item_id FROM pending WHERE session_id = ?1 "
                    "UNION ALL SELECT item_id FROM settled WHERE session_id = ?1",
                    (ledger.session_id,),
                )
            )
        finally:
            raw.close()
        if verdict != ["ok"]:
            figures.integrity_failures.append(f"{where}: {verdict}")
        state, pending = anyio.run(self._read_store)
        if state is None:
            figures.lost.setdefault("the session", where)
            return
        items = [item.id for item in state.queue.items]
        if [row["id"] for row in pending] != items:
            figures.bridge_mismatches.append(f"{where}: pending() and load_session() disagree")
        present = Counter(items) + Counter(state.queue.delivered_ids)
        for rid in ledger.acked:
            if present[rid] == 0 or rows[rid] == 0:
                figures.lost.setdefault(rid, where)
        for rid in ledger.refused:
            if present[rid] or rows[rid]:
                figures.duplicated.setdefault(rid, f"{where}: refused (queue full) yet stored")
        for rid in present.keys() | rows.keys():
            if present[rid] > 1 or rows[rid] > 1:
                figures.duplicated.setdefault(rid, f"{where}: x{max(present[rid], rows[rid])}")
        committed = {
            rid for m in state.transcript.messages for rid in m.get("directive_ids", ())
        } | {r.id for r in state.transcript.reminders}
        for rid in set(items) & committed:
            figures.duplicated.setdefault(rid, f"{where}: pending and already in the transcript")
        keys = Counter(r.dedupe_key for r in state.transcript.reminders if r.dedupe_key)
        for key, count in keys.items():
            if count > 1:
                figures.dedupe_violations.append(f"{where}: {count} pending with key {key!r}")
        ledger.last_pending = items

    async def _read_store(self) -> tuple[Any, list[dict[str, Any]]]:
        async with SQLiteStore(self.db) as store:
            state = await store.load_session(self.ledger.session_id)
            pending = await store.pending(self.ledger.session_id) if state is not None else []
            return state, pending
