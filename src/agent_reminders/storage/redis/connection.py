"""The connection under a ``RedisStore``: the client, the key layout, the Lua scripts (shipped
as ``scripts/*.lua`` beside this module) and the helpers every operation runs through."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..._core.errors import AgentRemindersError, StoreError
from ...queue import QueueItem
from .. import _rows
from ..base import ClosingStore, UnknownSessionError

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

Arg = str | int | float  # what a script takes as ARGV

DEFAULT_PREFIX = "agent-reminders"
PARTS = ("session", "messages", "queue", "items", "modes", "ids", "events", "lease", "audit")
# a read-then-write that keeps losing to other writers gives up after this many tries
ATTEMPTS = 100
# the scripts on a session's keys (each after scripts/prelude.lua, which names the keys of
# PARTS in that order); scripts/touch.lua runs on the two index keys
SESSION_SCRIPTS = (
    "create",
    "save",
    "append",
    "head",
    "enqueue",
    "drain",
    "revoke",
    "events",
    "claim",
    "renew",
    "release",
)


@cache
def lua(name: str) -> str:
    """The text of ``scripts/<name>.lua`` (package data)."""
    return files(__package__).joinpath("scripts", f"{name}.lua").read_text(encoding="utf-8")


def session_script(name: str) -> str:
    """A session script as it is sent: the prelude, then the script's own body."""
    return lua("prelude") + lua(name)


def redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: safe for messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{parts.username or ''}:***@{host}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<a redis URL that cannot be parsed>"


def as_text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def item_text(row: _rows.QueueRow) -> str:
    """The stored form of a pending item (``P:s:{SID}:items``)."""
    assert row.payload is not None
    kind, mode = _rows.dumps(row.kind), _rows.dumps(row.mode)
    return f'{{"kind":{kind},"mode":{mode},"payload":{row.payload}}}'


def pending_row(item_id: str, text: str) -> _rows.QueueRow:
    doc = json.loads(text)
    return _rows.QueueRow(
        id=item_id,
        status="pending",
        kind=doc["kind"],
        mode=doc["mode"],
        payload=_rows.dumps(doc["payload"]),
    )


def seq(entry_id: object) -> int:
    """The ``seq`` of a stream entry id ``<seq>-0``."""
    return int(as_text(entry_id).partition("-")[0])


def milliseconds(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class RedisConnection(ClosingStore):
    """What every operation of ``RedisStore`` runs on: the client, the key layout and the
    scripts (the attributes are set by ``RedisStore.__init__``)."""

    url: str
    prefix: str
    clock: Callable[[], float]
    poll_interval: float
    _errors: type[Exception]
    _client: Redis | None
    _scripts: dict[str, AsyncScript]
    _touch_script: AsyncScript
    _index: str
    _index_clock: str

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._client is None

    async def close(self) -> None:
        """Close the connections (idempotent); later calls raise ``StoreError``."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def ping(self) -> None:
        """Check that the server answers.

        Raises:
            StoreError: ``RMD-109`` naming the URL (its password hidden).
        """
        with self._talk("cannot reach Redis at ") as client:
            await client.ping()

    # -- the key layout ---------------------------------------------------------------------

    def session_keys(self, session_id: str) -> dict[str, str]:
        """The keys of one session by part (``session``, ``messages``, ``queue``, ``items``,
        ``modes``, ``ids``, ``events``, ``lease``, ``audit``), each hash-tagged
        ``{session_id}``."""
        base = f"{self.prefix}:s:{{{_rows.check_session_id(session_id)}}}"
        return {part: f"{base}:{part}" for part in PARTS}

    def wake_channel(self, session_id: str) -> str:
        """The pub/sub channel an ``enqueue`` publishes to (the item's mode is the message)."""
        return f"{self.prefix}:s:{{{_rows.check_session_id(session_id)}}}:wake"

    def index_keys(self) -> tuple[str, str]:
        """The two keys outside any session: the activity sorted set and its counter."""
        return self._index, self._index_clock

    # -- helpers ----------------------------------------------------------------------------

    @contextmanager
    def _talk(self, context: str = "") -> Iterator[Redis]:
        """The client, with every Redis failure turned into one ``StoreError``."""
        client = self._client
        if client is None:
            raise StoreError(f"{self.url}: this store is closed")
        try:
            yield client
        except self._errors as exc:
            raise StoreError(f"{context}{self.url}: {exc}") from None

    def _keys(self, session_id: str) -> list[str]:
        return list(self.session_keys(session_id).values())

    async def _script(self, name: str, session_id: str, args: Sequence[Arg]) -> Any:
        with self._talk():
            return await self._scripts[name](keys=self._keys(session_id), args=list(args))

    async def _touch(self, session_id: str) -> None:
        with self._talk():
            await self._touch_script(keys=[self._index, self._index_clock], args=[session_id])

    async def _read(self, session_id: str, *commands: tuple[Arg, ...]) -> Any:
        """One ``MULTI``/``EXEC`` of reads: ``EXISTS`` on the session, then each command
        ``(NAME, part, *args)`` on the session's key ``part``; their replies. Raises
        ``UnknownSessionError`` for a missing session."""
        keys = self.session_keys(session_id)
        with self._talk() as client:
            async with client.pipeline(transaction=True) as pipe:
                pipe.exists(keys["session"])
                for name, part, *args in commands:
                    pipe.execute_command(name, keys[str(part)], *args)
                found = await pipe.execute()
        if not found[0]:
            raise UnknownSessionError(session_id)
        return found[1:]

    def _item(self, row: _rows.QueueRow) -> QueueItem:
        try:
            return row.item()
        except AgentRemindersError as exc:
            raise StoreError(
                f"{self.url}: stored queue item {row.id!r} is invalid: {exc}"
            ) from None

    def _gave_up(self, session_id: str) -> StoreError:
        return StoreError(
            f"{self.url}: session {session_id!r} kept changing under this write "
            f"({ATTEMPTS} tries); try again"
        )

    async def _applied(self, sid: str, result: object) -> bool:
        """The outcome of an optimistic write script: ``True`` when it applied (the activity
        is touched), ``False`` when the session changed meanwhile and the caller retries."""
        if result == "unknown":
            raise UnknownSessionError(sid)
        if result != "ok":
            return False
        await self._touch(sid)
        return True
