"""What a ``save_session`` serialises does not grow with the session (issue 10).

Counted, not timed: a profile hook counts the JSON documents encoded (``JSONEncoder.encode``,
which ``json.dumps`` and the store's own encoder both go through) and decoded
(``json.loads``) while a turn is saved. ``MemoryStore`` does all its work on the calling
thread, so its count is what the shared row format costs — the same at 40 and at 2,000
messages of history; ``SQLiteStore`` does its JSON work in its own thread, so the event
loop's thread makes none at all. (``test_sqlite.py`` counts the rows a save writes.)
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from agent_reminders import Session
from agent_reminders.storage import MemoryStore, SQLiteStore, Store
from agent_reminders.testing.builders import assistant, user

pytestmark = pytest.mark.anyio


@contextmanager
def json_calls() -> Iterator[Counter[str]]:
    """Count the JSON documents encoded (``encode``) and decoded (``loads``) on this thread
    inside the block."""
    counts: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module, name = frame.f_globals.get("__name__"), frame.f_code.co_name
        if (module, name) in (("json.encoder", "encode"), ("json", "loads")):
            counts[name] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


def grown(messages: int) -> Session:
    s = Session(session_id="s1", system="sys")
    for n in range(messages // 2):
        s.append(user(f"question {n}"))  # type: ignore[arg-type]
        s.append(assistant(f"answer {n}"))  # type: ignore[arg-type]
        if n % 10 == 0:
            s.queue.remind({"body": f"note {n}"}, mode="audit_only")
            s.run_seam("loop_exit")  # an audit entry, a delivered id
    return s


async def save_turns(store: Store, messages: int) -> list[Counter[str]]:
    """Create a session of ``messages`` messages, load it, then save three turns; the json
    calls of each save."""
    await store.create_session(grown(messages).state())
    loaded = await store.load_session("s1")
    assert loaded is not None
    s = Session.from_state(loaded)
    found = []
    for turn in range(3):
        s.queue.remind({"body": f"later {turn}"}, mode="audit_only")
        s.run_seam("loop_exit")
        s.append(user(f"next {turn}"))  # type: ignore[arg-type]
        s.append(assistant(f"done {turn}"))  # type: ignore[arg-type]
        state = s.state()
        with json_calls() as counts:
            await store.save_session(state)
        found.append(counts)
    assert await store.load_session("s1") == s.state()
    return found


async def test_a_save_serialises_the_same_whatever_the_history() -> None:
    short = await save_turns(MemoryStore(), 40)
    long = await save_turns(MemoryStore(), 2_000)
    assert short == long
    assert all(0 < counts["encode"] < 20 for counts in long)
    assert all(counts["loads"] < 10 for counts in long)


async def test_sqlite_serialises_off_the_event_loop(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "state.db") as store:
        found = await save_turns(store, 2_000)
    assert found == [Counter()] * 3


async def test_redis_serialises_only_the_new_queue_rows_on_the_event_loop(
    fresh_redis_url: str,
) -> None:
    from agent_reminders.storage import RedisStore

    short, long = RedisStore(fresh_redis_url, prefix="short"), RedisStore(fresh_redis_url)
    try:
        found = [await save_turns(short, 40), await save_turns(long, 2_000)]
    finally:
        await short.close()
        await long.close()
    assert found[0] == found[1]
    assert all(counts["encode"] <= 4 for counts in found[1])  # the item rows sent
