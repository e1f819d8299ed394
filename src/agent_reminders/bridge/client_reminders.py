"""The reminder methods of :class:`~agent_reminders.bridge.BridgeClient`: ``session/remind``
(for one session or the whole project), ``session/inject``, ``session/pending_injections`` and
``session/revoke_reminder``, each a thin call of the client's :meth:`request`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ReminderCalls"]


class ReminderCalls:
    """What ``BridgeClient`` offers for reminders, built on its ``request``."""

    async def request(
        self, method: str, params: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> Any:
        """Send one request and return its ``result`` (``BridgeClient.request``)."""
        raise NotImplementedError

    async def remind(
        self,
        body: str,
        *,
        session_id: str | None = None,
        mode: str | None = None,
        **fields: Any,
    ) -> str:
        """``session/remind`` → the new reminder's id.

        ``fields`` are the other reminder keys of ``session/remind``, snake_case as on the wire
        (``tags``, ``dedupe_key``, ``ttl_turns``, ``preserve_on_compact``, ``propagate``,
        ``role_hint``, ``authority``, ``id``, ``fired_at_turn``, ``_meta``); the server
        checks them (an error is ``RpcError`` ``-32602`` with the RMD code in
        ``data["code"]``). Without ``session_id`` the server picks its only session.
        """
        params: dict[str, Any] = {"reminder": {"body": body, **fields}}
        if session_id is not None:
            params["sessionId"] = session_id
        if mode is not None:
            params["mode"] = mode
        result = await self.request("session/remind", params)
        return str(result["reminderId"])

    async def remind_project(
        self, body: str, *, mode: str | None = None, **fields: Any
    ) -> tuple[str, list[str]]:
        """``session/remind`` with ``"project": true`` → the reminder's id and the sessions it
        was queued in now; it also stands for every session that starts later (see
        :mod:`agent_reminders.project_reminders`). ``fields`` as for :meth:`remind`."""
        params: dict[str, Any] = {"reminder": {"body": body, **fields}, "project": True}
        if mode is not None:
            params["mode"] = mode
        result = await self.request("session/remind", params)
        return str(result["reminderId"]), [str(s) for s in result["sessionIds"]]

    async def inject(
        self,
        content: str | Sequence[Mapping[str, Any]],
        *,
        session_id: str | None = None,
        mode: str | None = None,
    ) -> str:
        """``session/inject`` → the queued user message's id."""
        params: dict[str, Any] = {
            "content": content if isinstance(content, str) else [dict(b) for b in content]
        }
        if session_id is not None:
            params["sessionId"] = session_id
        if mode is not None:
            params["mode"] = mode
        result = await self.request("session/inject", params)
        return str(result["messageId"])

    async def pending(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """``session/pending_injections`` → its rows (the queued items), FIFO, ``position``
        from 0."""
        params = {} if session_id is None else {"sessionId": session_id}
        result = await self.request("session/pending_injections", params)
        rows: list[dict[str, Any]] = result["injections"]
        return rows

    async def revoke(self, reminder_id: str, *, session_id: str | None = None) -> str:
        """``session/revoke_reminder`` → ``"revoked"`` or ``"already_revoked"``.

        Raises:
            RpcError: ``-32602`` with ``data["reason"]`` ``already_delivered`` or
                ``unknown_reminder_id``.
        """
        params = {"reminderId": reminder_id}
        if session_id is not None:
            params["sessionId"] = session_id
        result = await self.request("session/revoke_reminder", params)
        return str(result["status"])

    async def revoke_project(self, reminder_id: str) -> tuple[str, list[str]]:
        """``session/revoke_reminder`` with ``"project": true``: the standing project
        reminder is revoked, and in every session where it still waits; returns its status
        (``"revoked"`` or ``"already_revoked"``) and those sessions' ids.

        Raises:
            RpcError: ``-32602`` with ``data["reason"]`` ``unknown_reminder_id``.
        """
        params = {"reminderId": reminder_id, "project": True}
        result = await self.request("session/revoke_reminder", params)
        return str(result["status"]), [str(s) for s in result["sessionIds"]]
