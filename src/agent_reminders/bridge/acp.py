"""The ACP methods (docs/protocol.md, "Methods") and the server state they share with the
reminder methods.

One :class:`Bridge` serves every connection of a process; each connection has its own
:class:`Connection` (how to notify the client, its grant, what it declared in ``initialize``).
``Connection`` lives in :mod:`.connection` and the ``session/update`` builders in
:mod:`.updates`, below this module and the prompt and reminder methods that use them; both
are re-exported here.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Mapping
from typing import Any

from .._core.envelope import neutralize_content
from .._core.errors import AuthorityError, ReminderError
from .._core.events import EventLog, EventRecord
from .._core.fields import Authority
from .._core.ids import new_id
from .._core.request import Model
from .._version import __version__
from ..queue import InjectionQueue
from ..session import Session
from ..storage.base import Store, UnknownSessionError
from ..storage.memory import MemoryStore
from .config import BridgeSettings
from .connection import Connection, OutOfScopeError
from .dispatcher import Handler
from .errors import INTERNAL_ERROR, SCOPE_DENIED, RpcError, SessionBusyError, invalid_params
from .lease import beside, hold_lease, new_worker_id
from .live import LivePrompt
from .prompt import PromptRun
from .reminders import REMINDER_METHODS, reminder_handlers, session_id_param
from .updates import replay_updates, tool_call_update, tool_result_update

__all__ = [
    "Bridge",
    "Connection",
    "LONG_RUNNING_METHODS",
    "OutOfScopeError",
    "PROTOCOL_VERSION",
    "replay_updates",
    "tool_call_update",
    "tool_result_update",
]

PROTOCOL_VERSION = 1
MODES = ["interrupt_immediate", "finish_step", "audit_only"]
# The methods that stream notifications before their reply and may run for minutes: a
# transport that answers a connection's frames one after another runs these in a task of
# their own, so it goes on reading (a session/cancel must reach a running prompt).
LONG_RUNNING_METHODS = frozenset({"session/prompt", "session/load"})
log = logging.getLogger("agent_reminders.bridge")


def _sid_of(params: object) -> str | None:
    """The request's session id when it is a valid one (a refusal is recorded in its log)."""
    if not isinstance(params, Mapping):
        return None
    try:
        return session_id_param(params)
    except RpcError:
        return None


def _object(params: object, method: str) -> Mapping[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise invalid_params(f"{method}: params must be an object")
    return params


def _prompt_task(prompt: object) -> str | list[dict[str, Any]]:
    if not isinstance(prompt, list) or not prompt:
        raise invalid_params("prompt must be a non-empty list of content blocks")
    blocks: list[dict[str, Any]] = []
    for index, block in enumerate(prompt):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise invalid_params(f"prompt[{index}] must be a content block with a string type")
        blocks.append(dict(block))
    # the prompt's text reaches the model as a user message: a look-alike envelope in it (a
    # text or a resource block) must not pass for a directive, whoever sent it
    blocks = neutralize_content(blocks)
    if all(b["type"] == "text" and isinstance(b.get("text"), str) for b in blocks):
        return "".join(b["text"] for b in blocks)
    return blocks


class Bridge:
    """The server: a store, a model and the sessions with a running prompt.

    ``worker_id`` names this server as the owner of the sessions it prompts (docs/storage.md,
    "Leases"; default ``HOST:PID:RANDOM``): a prompt holds the session's lease in the store, so a
    second worker on the same store answers ``-32006`` with ``data.owner`` naming this one.

    Example:
        >>> import anyio
        >>> from agent_reminders.storage import MemoryStore
        >>> async def main():
        ...     bridge = Bridge(MemoryStore())
        ...     sent = []
        ...     async def notify(method, params):
        ...         sent.append(method)
        ...     conn = Connection(notify=notify)
        ...     sid = (await bridge.methods["session/new"]({"cwd": "/"}, conn))["sessionId"]
        ...     return len(sid)
        >>> anyio.run(main)
        32
    """

    def __init__(
        self,
        store: Store,
        *,
        model: Model | None = None,
        settings: BridgeSettings | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.settings = settings or BridgeSettings()
        self.worker_id = worker_id or new_worker_id()
        self.live: dict[str, LivePrompt] = {}
        self._validators: dict[Authority, InjectionQueue] = {}
        self.durable = not isinstance(store, MemoryStore)
        methods: dict[str, Handler] = {
            "initialize": self.initialize,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/prompt": self.prompt,
            "session/cancel": self.cancel,
            **reminder_handlers(self),
        }
        if not self.durable:
            del methods["session/load"]
        self.methods = {name: self._audited(name, fn) for name, fn in methods.items()}

    def _audited(self, method: str, fn: Handler) -> Handler:
        async def handler(params: Any, connection: Any) -> Any:
            try:
                return await fn(params, connection)
            except OutOfScopeError as exc:
                await self.denied(method, "out_of_scope", exc.session_id)
                raise
            except RpcError as exc:
                if exc.code == SCOPE_DENIED:
                    await self.denied(method, "not_allowed", _sid_of(params))
                raise
            except ReminderError as exc:
                if isinstance(exc, AuthorityError):
                    await self.denied(method, "authority_above_grant", _sid_of(params))
                raise

        return handler

    async def denied(self, method: str, reason: str, session_id: str | None) -> None:
        """Record a scope refusal or an authority cap as ``bridge.denied``: on stderr,
        and in the session's event log when the session exists."""
        payload = {"method": method, "reason": reason, "session_id": session_id}
        log.warning("bridge.denied %s", payload)
        if session_id is None:
            return
        record = EventRecord(seq=0, topic="bridge", kind="bridge.denied", payload=payload)
        with contextlib.suppress(UnknownSessionError):
            await self.store.append_events(session_id, [record])

    def validator(self, grant: Authority) -> InjectionQueue:
        """The empty queue that validates items pushed by callers of ``grant`` (one per grant,
        made once): ``reminder_item`` / ``user_item`` check an item as ``remind`` / ``inject``
        would queue it, and it never holds one."""
        queue = self._validators.get(grant)
        if queue is None:
            queue = self._validators[grant] = InjectionQueue(
                max_authority=grant,
                max_body_bytes=self.settings.max_body_bytes,
                id_factory=new_id,
            )
        return queue

    async def initialize(self, params: object, connection: Connection) -> dict[str, Any]:
        """``initialize`` → protocol version, capabilities, the reminder extension."""
        p = _object(params, "initialize")
        caps = p.get("clientCapabilities")
        meta = caps.get("_meta") if isinstance(caps, Mapping) else None
        ours = meta.get("agent_reminders") if isinstance(meta, Mapping) else None
        connection.emitted_as_update = isinstance(ours, Mapping) and (
            ours.get("reminder_emitted") is True
        )
        methods = [name for plain in REMINDER_METHODS for name in (plain, "_" + plain)]
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": self.durable,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                "_meta": {
                    "agent_reminders": {
                        "version": __version__,
                        "methods": methods,
                        "modes": list(MODES),
                    }
                },
            },
            "authMethods": [],
        }

    async def new_session(self, params: object, connection: Connection) -> dict[str, Any]:
        """``session/new`` → ``{sessionId}``, stored before the reply: a session id is 128
        random bits as 32 hex digits, so no caller can guess another's."""
        _object(params, "session/new")
        connection.require_prompt("session/new")
        settings = self.settings
        session = Session(
            secrets.token_hex(16),
            system=settings.system,
            channel=settings.channel,
            nonce=settings.nonce,
        )
        await self.store.create_session(session.state())
        if connection.scope is not None:
            connection.scope.joined(session.id)
        return {"sessionId": session.id}

    async def _load(self, session_id: str) -> Session:
        state = await self.store.load_session(session_id)
        if state is None:
            raise UnknownSessionError(session_id)
        return Session.from_state(state, event_log=EventLog())

    async def load_session(self, params: object, connection: Connection) -> None:
        """``session/load``: replay the stored conversation as ``session/update``."""
        sid = session_id_param(_object(params, "session/load"))
        connection.require_prompt("session/load")
        connection.check_visible(sid)
        session = await self._load(sid)
        for update in replay_updates(session.transcript.messages):
            await connection.notify("session/update", {"sessionId": sid, "update": update})
        return None

    async def prompt(self, params: object, connection: Connection) -> dict[str, Any]:
        """``session/prompt``: run ``agent_loop``; updates stream before ``{stopReason}``."""
        p = _object(params, "session/prompt")
        sid = session_id_param(p)
        connection.require_prompt("session/prompt")
        connection.check_visible(sid)
        task = _prompt_task(p.get("prompt"))
        if self.model is None:
            raise RpcError(INTERNAL_ERROR, "no model configured: start serve with --model SPEC")
        if sid in self.live:
            raise SessionBusyError(sid, self.worker_id)
        live = LivePrompt()
        self.live[sid] = live
        try:
            # one worker at a time: the store's lease, held while the prompt runs
            lease = self.settings.lease_seconds
            async with hold_lease(self.store, sid, self.worker_id, lease, lost=live.cancel):
                session = await self._load(sid)
                live.attach(session)
                async with beside(live.watch, self.store):
                    run = PromptRun(self, session, live, connection)
                    return {"stopReason": await run.run(task)}
        finally:
            del self.live[sid]

    async def cancel(self, params: object, connection: Connection) -> None:
        """``session/cancel`` (a notification): the running prompt stops at its next seam."""
        sid = session_id_param(_object(params, "session/cancel"))
        connection.require_prompt("session/cancel")
        connection.check_visible(sid)
        live = self.live.get(sid)
        if live is not None:
            live.cancel.set()
