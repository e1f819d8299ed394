"""What a request that leaves out ``sessionId`` costs as the store grows, beside the same
request naming its session, in one run.

A ``Bridge`` on a ``SQLiteStore`` (temp dir) holding N sessions answers
``session/pending_injections`` in process (the dispatcher's own handler): once with
``{"sessionId": ...}`` and once with ``{}`` from a token that sees one session (a watcher),
and ``{}`` from stdio (which must refuse: several sessions exist). Medians of ``--repeats``
calls; the headline is the ratio sessionless ÷ named at each N, which stays flat when the
request costs what it does (the store is asked for at most two ids, or for the token's own).

Run: python bench/sessionless.py [--sizes 100,20000] [--repeats 200] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from _results import RESULTS, machine, table, write_section
from agent_reminders import Session
from agent_reminders.bridge import Bridge
from agent_reminders.bridge.acp import Connection
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.errors import RpcError
from agent_reminders.storage import SQLiteStore


async def _notify(method: str, params: dict[str, Any]) -> None:
    pass


async def _median_ms(call: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        with contextlib.suppress(RpcError):
            await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def measure(size: int, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with SQLiteStore(Path(tmp) / "state.db") as store:
            for i in range(size):
                await store.create_session(Session(f"s{i:06d}").state())
            bridge = Bridge(store)
            handler = bridge.methods["session/pending_injections"]
            stdio = Connection(notify=_notify)
            mine = f"s{size - 1:06d}"
            watcher = Connection(notify=_notify, scope=Scope(token="w" * 20, sessions={mine}))
            named = await _median_ms(lambda: handler({"sessionId": mine}, stdio), repeats)
            watched = await _median_ms(lambda: handler({}, watcher), repeats)
            refused = await _median_ms(lambda: handler({}, stdio), repeats)
    return {"sessions": size, "named_ms": named, "watcher_ms": watched, "refused_ms": refused}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,20000")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [anyio.run(measure, int(n), args.repeats) for n in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows))
    body = "\n\n".join(
        [
            f"Machine: {machine()}. `session/pending_injections` in process on a `SQLiteStore`, "
            f"median of {args.repeats} calls each.",
            table(
                (
                    "sessions",
                    "named ms",
                    "{} by a watcher ms",
                    "{} refused (stdio) ms",
                    "watcher ÷ named",
                ),
                [
                    (
                        f"{r['sessions']:,.0f}",
                        f"{r['named_ms']:.3f}",
                        f"{r['watcher_ms']:.3f}",
                        f"{r['refused_ms']:.3f}",
                        f"{r['watcher_ms'] / r['named_ms']:.2f}",
                    )
                    for r in rows
                ],
            ),
        ]
    )
    if not args.json:
        print(body)
    write_section("Requests without `sessionId` (`bench/sessionless.py`)", body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
