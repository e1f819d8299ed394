"""One client connection of the bridge: how to notify it, its grant and scope, what it
declared in ``initialize``.

Below the ACP methods (:mod:`.acp`), the prompt run (:mod:`.prompt`), the reminder methods
(:mod:`.reminders`) and the in-process channel, which all take a :class:`Connection`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .._core.fields import Authority
from ..storage.base import UnknownSessionError
from .auth import Scope
from .limits import TokenBucket

__all__ = ["Connection", "Notify", "OutOfScopeError"]

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]


class OutOfScopeError(UnknownSessionError):
    """A session outside the caller's scope: answered exactly like a missing one (``-32004``),
    but recorded as ``bridge.denied``."""


@dataclass(kw_only=True, slots=True)
class Connection:
    """One client connection: ``notify(method, params)`` sends a notification to it.

    Attributes:
        grant: The highest reminder authority this connection may push (stdio: contract).
        scope: The token's scope (``None``: stdio, trusted with everything).
        limiter: The connection's request rate limit (``None``: unlimited, stdio).
        emitted_as_update: The client declared
            ``clientCapabilities._meta.agent_reminders.reminder_emitted = true``.
    """

    notify: Notify
    grant: Authority = Authority.CONTRACT
    emitted_as_update: bool = False
    scope: Scope | None = None
    limiter: TokenBucket | None = None

    def visible(self, session_id: str) -> bool:
        """Whether this connection may see the session (a scope refusal looks like a
        missing session)."""
        return self.scope is None or self.scope.can_see(session_id)

    def check_visible(self, session_id: str) -> None:
        """``UnknownSessionError`` (``-32004``) for a session outside the scope."""
        if not self.visible(session_id):
            raise OutOfScopeError(session_id)

    def require_prompt(self, method: str) -> None:
        """``-32003`` when the token may not call the prompt methods."""
        if self.scope is not None:
            self.scope.require_prompt(method)
