"""The queue's rules, one table of cases run against every holder of a queue: the in-memory
``InjectionQueue`` and each ``Store`` backend (``StoreContract`` includes this suite), so a
duplicate id, a full queue, a revoke and a drain come out the same everywhere — whether
Python decides or a backend's script does.

Each case starts from the same scene, takes one step and records its outcome: the value
(and the pending ids after it), or the error's class, code, reason and message. Every holder
must give exactly the outcome the table states.

The scene, pending in FIFO order: reminder ``rp`` (``finish_step``), user message ``up``
(``finish_step``), reminder ``ra`` (``audit_only``), reminder ``ri``
(``interrupt_immediate``); delivered: reminder ``rd`` and user message ``ud``; revoked:
reminder ``rr``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from .._core.errors import AgentRemindersError
from .._core.seams import SEAMS
from ..queue import InjectionQueue, QueueItem
from ..session import Session
from ..storage import Store

__all__ = [
    "CASES",
    "Case",
    "InMemoryHolder",
    "InMemoryQueueContract",
    "QueueContract",
    "QueueHolder",
    "StoreHolder",
    "StoreQueueContract",
    "run_case",
]

Outcome = tuple[Any, ...]


class QueueHolder(Protocol):
    """What a case needs of a queue: the in-memory queue and a store, each behind one."""

    async def push(self, kind: str, item_id: str, mode: str, limit: int | None) -> str:
        """Queue a reminder or user message with this id (``limit``: ``max_pending``)."""

    async def revoke(self, reminder_id: str) -> str:
        """Revoke; the status word."""

    async def drain(self, seam: str) -> list[str]:
        """Drain at ``seam``; the ids taken, FIFO."""

    async def pending_ids(self) -> list[str]:
        """The pending ids, FIFO."""


class _Maker:
    """Makes items the way ``InjectionQueue`` does, with the ids a case names."""

    def __init__(self) -> None:
        self.next_id = ""
        self.queue = InjectionQueue(id_factory=lambda: self.next_id)

    def item(self, kind: str, item_id: str, mode: str) -> QueueItem:
        self.next_id = item_id
        if kind == "user":
            return self.queue.user_item(f"words {item_id}", mode=mode)
        return self.queue.reminder_item({"id": item_id, "body": f"body {item_id}"}, mode=mode)


class InMemoryHolder:
    """An ``InjectionQueue`` as a :class:`QueueHolder`."""

    def __init__(self) -> None:
        self.next_id = ""
        self.queue = InjectionQueue(id_factory=lambda: self.next_id)

    async def push(self, kind: str, item_id: str, mode: str, limit: int | None) -> str:
        """``remind`` / ``inject`` under ``max_pending = limit``."""
        self.queue.max_pending = limit
        self.next_id = item_id
        if kind == "user":
            return self.queue.inject(f"words {item_id}", mode=mode)
        return self.queue.remind({"id": item_id, "body": f"body {item_id}"}, mode=mode)

    async def revoke(self, reminder_id: str) -> str:
        """``InjectionQueue.revoke``."""
        return self.queue.revoke(reminder_id)

    async def drain(self, seam: str) -> list[str]:
        """``InjectionQueue.drain``."""
        return [i.id for i in self.queue.drain(seam)]

    async def pending_ids(self) -> list[str]:
        """The ids of ``pending()``."""
        return [row["id"] for row in self.queue.pending()]


class StoreHolder:
    """One session of a ``Store`` as a :class:`QueueHolder`."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store, self.session_id, self.maker = store, session_id, _Maker()

    async def push(self, kind: str, item_id: str, mode: str, limit: int | None) -> str:
        """``Store.enqueue`` of the item the queue makes."""
        item = self.maker.item(kind, item_id, mode)
        return await self.store.enqueue(self.session_id, item, max_pending=limit)

    async def revoke(self, reminder_id: str) -> str:
        """``Store.revoke``."""
        return await self.store.revoke(self.session_id, reminder_id)

    async def drain(self, seam: str) -> list[str]:
        """``Store.drain`` of the modes the seam takes."""
        return [i.id for i in await self.store.drain(self.session_id, SEAMS[seam])]

    async def pending_ids(self) -> list[str]:
        """The ids of ``Store.pending``."""
        return [row["id"] for row in await self.store.pending(self.session_id)]


async def _scene(holder: QueueHolder) -> None:
    for kind, item_id, mode in (
        ("reminder", "rd", "interrupt"),
        ("user", "ud", "interrupt"),
        ("reminder", "rp", "steer"),
        ("user", "up", "steer"),
        ("reminder", "ra", "queue"),
        ("reminder", "rr", "steer"),
    ):
        await holder.push(kind, item_id, mode, None)
    assert await holder.drain("pre_tool_dispatch") == ["rd", "ud"]
    assert await holder.revoke("rr") == "revoked"
    await holder.push("reminder", "ri", "interrupt", None)


@dataclass(frozen=True)
class Case:
    """One step on the scene (``op``: ``push``, ``revoke`` or ``drain``, with its
    ``args``) and the outcome every holder must give."""

    name: str
    op: str
    args: tuple[Any, ...]
    expected: Outcome


SCENE = ["rp", "up", "ra", "ri"]
_USED = "RMD-002: id {!r} was already used in this session"


def _used(item_id: str) -> Outcome:
    return ("ReminderError", "RMD-002", None, _USED.format(item_id))


def _refused(cls: str, reason: str, message: str) -> Outcome:
    return (cls, "RMD-102", reason, f"RMD-102: {message}")


def _drain(seam: str, taken: list[str]) -> Case:
    return Case(
        f"drain-{seam}", "drain", (seam,), ("ok", taken, [i for i in SCENE if i not in taken])
    )


CASES: list[Case] = [
    Case(
        "push-duplicate-of-pending-reminder", "push", ("reminder", "rp", "steer", None), _used("rp")
    ),
    Case("push-duplicate-of-pending-user", "push", ("user", "up", "steer", None), _used("up")),
    Case("push-duplicate-of-delivered", "push", ("reminder", "rd", "steer", None), _used("rd")),
    Case("push-duplicate-of-revoked", "push", ("reminder", "rr", "steer", None), _used("rr")),
    Case("push-duplicate-of-full-queue", "push", ("reminder", "rp", "steer", 4), _used("rp")),
    Case(
        "push-beyond-max-pending",
        "push",
        ("reminder", "rn", "steer", 4),
        _refused("QueueFullError", "queue_full", "the queue holds 4 items already"),
    ),
    Case(
        "push-within-max-pending", "push", ("user", "un", "queue", 5), ("ok", "un", [*SCENE, "un"])
    ),
    Case("revoke-pending-reminder", "revoke", ("rp",), ("ok", "revoked", ["up", "ra", "ri"])),
    Case("revoke-revoked", "revoke", ("rr",), ("ok", "already_revoked", SCENE)),
    *(
        Case(
            f"revoke-delivered-{rid}",
            "revoke",
            (rid,),
            _refused(
                "AlreadyDeliveredError",
                "already_delivered",
                f"reminder {rid!r} was already delivered",
            ),
        )
        for rid in ("rd", "ud")
    ),
    *(
        Case(
            f"revoke-{name}",
            "revoke",
            (rid,),
            _refused(
                "UnknownReminderIdError",
                "unknown_reminder_id",
                f"no reminder {rid!r} in this session",
            ),
        )
        for name, rid in (("pending-user-message", "up"), ("unknown", "zz"))
    ),
    *(
        Case(
            f"revoke-{name}",
            "revoke",
            (rid,),
            _refused(
                "MissingReminderIdError", "missing_reminder_id", "reminderId is missing or blank"
            ),
        )
        for name, rid in (("empty-id", ""), ("blank-id", "   "))
    ),
    _drain("iteration_start", ["rp", "up", "ri"]),
    _drain("pre_tool_dispatch", ["ri"]),
    _drain("post_tool_dispatch", ["rp", "up", "ri"]),
    _drain("iteration_end", ["rp", "up", "ri"]),
    _drain("daemon_idle_pre", ["ri"]),
    _drain("daemon_idle_post", ["ri"]),
    _drain("loop_exit", ["ra"]),
]


async def run_case(holder: QueueHolder, case: Case) -> Outcome:
    """Set the scene on ``holder``, take the case's step; its outcome."""
    await _scene(holder)
    assert await holder.pending_ids() == SCENE
    step: Callable[..., Awaitable[Any]] = getattr(holder, case.op)
    try:
        value = await step(*case.args)
    except AgentRemindersError as exc:
        return (type(exc).__name__, exc.code, getattr(exc, "reason", None), str(exc))
    return ("ok", value, await holder.pending_ids())


class QueueContract:
    """The case table as tests; subclass it and define :meth:`open_queue`."""

    pytestmark = pytest.mark.anyio

    async def open_queue(self, request: pytest.FixtureRequest) -> QueueHolder:
        """Override: a fresh, empty queue behind a :class:`QueueHolder`."""
        raise NotImplementedError("define open_queue in the subclass")

    async def close_queue(self, holder: QueueHolder) -> None:
        """Override to release what :meth:`open_queue` opened."""

    @pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
    async def test_the_queue_rules(self, request: pytest.FixtureRequest, case: Case) -> None:
        holder = await self.open_queue(request)
        try:
            assert await run_case(holder, case) == case.expected
        finally:
            await self.close_queue(holder)


class InMemoryQueueContract(QueueContract):
    """The table on ``InjectionQueue`` itself."""

    async def open_queue(self, request: pytest.FixtureRequest) -> QueueHolder:
        """A new ``InjectionQueue``."""
        return InMemoryHolder()


class StoreQueueContract(QueueContract):
    """The table on one session of the store the ``store_factory`` fixture opens."""

    async def open_queue(self, request: pytest.FixtureRequest) -> QueueHolder:
        """A new store object holding one empty session."""
        made = request.getfixturevalue("store_factory")()
        store = await made if isinstance(made, Awaitable) else made
        assert isinstance(store, Store), f"{type(store).__name__} does not implement Store"
        await store.create_session(Session(session_id="q1").state())
        return StoreHolder(store, "q1")

    async def close_queue(self, holder: QueueHolder) -> None:
        """Close the store."""
        assert isinstance(holder, StoreHolder)
        await holder.store.close()
