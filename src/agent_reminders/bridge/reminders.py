"""The reminder methods (docs/protocol.md, "Methods"), each under its plain and its
``_``-prefixed name.

Validation is the injection queue's own (``InjectionQueue.reminder_item`` / ``user_item``,
what ``remind`` / ``inject`` queue: the one implementation of ``session/remind``'s check order): the
bridge's empty queue for the caller's grant (``Bridge.validator``) validates and builds the
item, the store makes it durable, and only then does the client get its id.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import project_reminders as project
from .._core.errors import (
    ReminderError,
    ReminderOptionError,
    UnknownReminderIdError,
    payload_error,
)
from .._core.fields import check_id
from .._core.queue_rules import check_revoke_id
from ..project_reminders import is_project_session
from ..queue import QueueItem
from .connection import Connection
from .errors import invalid_params

if TYPE_CHECKING:
    from .acp import Bridge

__all__ = ["REMINDER_METHODS", "reminder_handlers", "resolve_session_id", "session_id_param"]

REMINDER_METHODS: tuple[str, ...] = (
    "session/remind",
    "session/inject",
    "session/pending_injections",
    "session/revoke_reminder",
)
_ENVELOPE_KEYS = frozenset({"sessionId", "mode", "reminder", "project"})


def _params(params: object) -> Mapping[str, Any]:
    if not isinstance(params, Mapping):
        raise payload_error(f"params must be an object; got {type(params).__name__}")
    return params


def session_id_param(params: Mapping[str, Any]) -> str:
    """``params["sessionId"]``: a non-blank string of valid Unicode, at most
    ``MAX_ID_BYTES`` bytes (``-32602`` otherwise, before any store is asked)."""
    try:
        sid = check_id(params.get("sessionId"), "sessionId")
    except ReminderError as exc:
        raise invalid_params(exc.message) from None
    if is_project_session(sid):
        raise invalid_params(f"sessionId {sid!r} is reserved for the project's standing reminders")
    return sid


async def resolve_session_id(
    bridge: Bridge, params: Mapping[str, Any], connection: Connection
) -> str:
    """``params["sessionId"]``, or the one session the caller can see when it is missing."""
    sid = params.get("sessionId")
    if sid is None:
        # two ids tell "exactly one" from "several": the store looks at no more than that (or
        # at the token's own list of sessions), however many sessions it holds
        scope = connection.scope
        among = None if scope is None or scope.admin else scope.sessions
        found = await project.session_ids(bridge.store, limit=2, among=among)
        if len(found) != 1:
            many = "several sessions exist" if found else "no session exists"
            raise invalid_params(
                f"sessionId is required: {many} (it may only be left out when exactly one does)",
                reason="session_id_required",
            )
        return found[0]
    sid = session_id_param(params)
    connection.check_visible(sid)
    return sid


async def remind(bridge: Bridge, params: object, connection: Connection) -> dict[str, Any]:
    """``session/remind`` → ``{reminderId}``, durable before the reply."""
    p = _params(params)
    if "reminder" in p:
        reminder = p["reminder"]
        if not isinstance(reminder, Mapping):
            raise payload_error(f"reminder must be an object; got {type(reminder).__name__}")
        extra = sorted(set(p) - _ENVELOPE_KEYS)
        if extra:
            raise ReminderOptionError(
                f"unknown key(s) beside 'reminder': {', '.join(extra)}; put reminder fields "
                "either at top level or under 'reminder', not both",
            )
    else:
        reminder = {k: v for k, v in p.items() if k not in _ENVELOPE_KEYS}
    if connection.scope is not None:
        reminder = connection.scope.with_cadence(reminder)
    item = bridge.validator(connection.grant).reminder_item(reminder, mode=p.get("mode"))
    if _for_project(p, connection):
        reached = await project.remind_project(
            bridge.store, item, max_pending=bridge.settings.max_pending
        )
        for sid in reached:
            live = bridge.live.get(sid)
            if live is not None:
                live.offer(item)
        return {"reminderId": item.id, "sessionIds": reached}
    return {"reminderId": await _queue(bridge, p, connection, item)}


def _for_project(p: Mapping[str, Any], connection: Connection) -> bool:
    """Whether a request is for the whole project (``"project": true``): then it names no
    session, and its caller sees every session (no token, or an admin one)."""
    given = p.get("project", False)
    if type(given) is not bool:
        raise invalid_params(f"project must be true or false; got {given!r}")
    if not given:
        return False
    if "sessionId" in p:
        raise invalid_params("give sessionId or project: true, not both")
    scope = connection.scope
    if scope is not None and not scope.admin:
        raise invalid_params(
            "a project reminder reaches every session: it needs a token that sees them all",
            reason="project_needs_admin",
        )
    return True


async def inject(bridge: Bridge, params: object, connection: Connection) -> dict[str, Any]:
    """``session/inject`` → ``{messageId}``: a user message for the next seam of its mode."""
    p = _params(params)
    extra = sorted(set(p) - {"sessionId", "content", "mode"})
    if extra:
        raise ReminderOptionError(f"unknown key(s): {', '.join(extra)}")
    validator = bridge.validator(connection.grant)
    item = validator.user_item(p.get("content"), mode=p.get("mode"))  # type: ignore[arg-type]
    return {"messageId": await _queue(bridge, p, connection, item)}


async def _queue(
    bridge: Bridge, p: Mapping[str, Any], connection: Connection, item: QueueItem
) -> str:
    """Store an item the bridge's validator made into its session (durable before the
    reply); returns the item's id. A prompt running on the session gets it at once."""
    sid = await resolve_session_id(bridge, p, connection)
    live = bridge.live.get(sid)
    if live is not None:
        live.expect(item.id)  # offered below: the running prompt need not look it up
    try:
        await bridge.store.enqueue(sid, item, max_pending=bridge.settings.max_pending)
    finally:
        if live is not None:
            live.forget(item.id)
    live = bridge.live.get(sid)
    if live is not None:
        live.offer(item)
    return item.id


async def pending(bridge: Bridge, params: object, connection: Connection) -> dict[str, Any]:
    """``session/pending_injections`` → ``{pendingCount, injections}`` in FIFO order."""
    p = _params(params)
    session_id = await resolve_session_id(bridge, p, connection)
    live = bridge.live.get(session_id)
    queue = None if live is None else live.queue
    rows = await bridge.store.pending(session_id) if queue is None else queue.pending()
    return {"pendingCount": len(rows), "injections": rows}


async def revoke(bridge: Bridge, params: object, connection: Connection) -> dict[str, Any]:
    """``session/revoke_reminder`` → ``{reminderId, status}``."""
    p = _params(params)
    rid = check_id(check_revoke_id(p.get("reminderId")), "reminderId")
    if _for_project(p, connection):
        status, sessions = await project.revoke_project(bridge.store, rid)
        for sid in sessions:
            live = bridge.live.get(sid)
            if live is not None and live.queue is not None:
                with contextlib.suppress(UnknownReminderIdError):
                    live.queue.revoke(rid)
        return {"reminderId": rid, "status": status, "sessionIds": sessions}
    session_id = await resolve_session_id(bridge, p, connection)
    live = bridge.live.get(session_id)
    queue = None if live is None else live.queue
    if queue is not None:
        # the live queue knows what was drained but not saved yet: it answers first
        with contextlib.suppress(UnknownReminderIdError):  # not queued here: the store answers
            queue.revoke(rid)
    status = await bridge.store.revoke(session_id, rid)
    return {"reminderId": rid, "status": status}


def reminder_handlers(bridge: Bridge) -> dict[str, Any]:
    """The four methods under both spellings, bound to ``bridge``."""
    table = {
        "session/remind": remind,
        "session/inject": inject,
        "session/pending_injections": pending,
        "session/revoke_reminder": revoke,
    }
    out: dict[str, Any] = {}
    for name, fn in table.items():
        out[name] = out["_" + name] = functools.partial(fn, bridge)
    return out
