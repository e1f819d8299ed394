"""Token scopes (docs/protocol.md, "Tokens and scopes"): what a WebSocket token may see and do.

stdio has no scope (``Connection.scope is None``): the parent process is trusted with every
session and ``contract`` authority.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.cadence import check_cadence
from .._core.errors import ConfigError
from .._core.fields import Authority, coerce_enum
from .errors import SCOPE_DENIED, RpcError

__all__ = ["TOKEN_KEYS", "Scope", "find_token", "parse_tokens"]

# The keys of a [[tokens]] table (docs/protocol.md, "Tokens and scopes").
TOKEN_KEYS = ("token", "token_env", "sessions", "max_authority", "prompt", "admin", "cadence")


@dataclass(kw_only=True, slots=True)
class Scope:
    """One token's rights. ``sessions`` is ``None`` for ``"*"``; a session created through a
    token limited to a list joins that list (shared by every connection of the token)."""

    token: str
    sessions: set[str] | None = None
    max_authority: Authority = Authority.ADVISORY
    prompt: bool = False
    admin: bool = False
    cadence: Mapping[str, int] = field(default_factory=dict)
    """The cadence a reminder pushed with this token takes when it sets none of its own
    (``first_after``, ``cooldown_turns``, ``max_fires``; docs/core.md, "Cadence")."""

    def with_cadence(self, reminder: Mapping[str, Any]) -> Mapping[str, Any]:
        """``reminder`` with this token's default cadence for each field it leaves out."""
        missing = {k: v for k, v in self.cadence.items() if k not in reminder}
        return {**missing, **reminder} if missing else reminder

    @property
    def grant(self) -> Authority:
        """The highest authority a reminder pushed with this token may carry."""
        return Authority.CONTRACT if self.admin else self.max_authority

    def can_see(self, session_id: str) -> bool:
        """Whether the session is inside this token's scope."""
        return self.admin or self.sessions is None or session_id in self.sessions

    def require_prompt(self, method: str) -> None:
        """``-32003`` unless the token may run prompts."""
        if not (self.prompt or self.admin):
            raise RpcError(SCOPE_DENIED, f"{method} is not allowed for this token (prompt = false)")

    def joined(self, session_id: str) -> None:
        """A session this token created becomes visible to it."""
        if self.sessions is not None:
            self.sessions.add(session_id)


def parse_tokens(entries: object, where: str) -> tuple[Scope, ...]:
    """The ``[[tokens]]`` tables of a config file.

    Raises:
        ConfigError: a malformed entry, an unset ``token_env``, a repeated token.
    """
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: tokens must be an array of tables ([[tokens]])")
    out: list[Scope] = []
    for index, entry in enumerate(entries):
        at = f"{where}: tokens[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{at} must be a table")
        unknown = sorted(set(entry) - set(TOKEN_KEYS))
        if unknown:
            raise ConfigError(f"{at}: unknown key(s) {', '.join(unknown)}")
        token = entry.get("token")
        if "token_env" in entry:
            token = os.environ.get(str(entry["token_env"]))
            if not token:
                raise ConfigError(f"{at}: environment variable {entry['token_env']} is not set")
        if not isinstance(token, str) or len(token) < 16:
            raise ConfigError(f"{at}: token must be a string of at least 16 characters")
        sessions = entry.get("sessions", ["*"])
        if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
            raise ConfigError(f'{at}: sessions must be ["*"] or a list of session ids')
        for flag in ("prompt", "admin"):
            if not isinstance(entry.get(flag, False), bool):
                raise ConfigError(f"{at}: {flag} must be true or false")
        out.append(
            Scope(
                token=token,
                sessions=None if "*" in sessions else set(sessions),
                max_authority=coerce_enum(
                    Authority, entry.get("max_authority", "advisory"), f"{at}.max_authority"
                ),
                prompt=bool(entry.get("prompt", False)),
                admin=bool(entry.get("admin", False)),
                cadence=_cadence(entry.get("cadence", {}), f"{at}.cadence"),
            )
        )
    if len({s.token for s in out}) != len(out):
        raise ConfigError(f"{where}: the same token is listed twice")
    return tuple(out)


def _cadence(value: object, at: str) -> dict[str, int]:
    """A token's default cadence: a table of cadence fields, checked by the field table."""
    try:
        checked = check_cadence(value, at)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return {name: setting for name, setting in checked.items() if setting is not None}


def _raw(text: str) -> bytes | None:
    """``text`` as the bytes it came from: an HTTP header's bytes that are not ASCII reach us
    as surrogate escapes, and a token read from the environment may hold them too."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no bytes decode to: matches no token
        return None


def find_token(scopes: Iterable[Scope], authorization: str | None) -> Scope | None:
    """The scope of an ``Authorization: Bearer <token>`` header (constant-time compare).

    ``None`` for a header that is missing, not ``Bearer``, or matches no token (whatever
    bytes it holds: a header is never an error).

    Example:
        >>> scope = Scope(token="t" * 20)
        >>> find_token([scope], "Bearer " + "t" * 20) is scope
        True
        >>> find_token([scope], "Bearer \\udcff" + "t" * 20) is None
        True
    """
    if not authorization or not authorization.startswith("Bearer "):
        return None
    given = _raw(authorization[len("Bearer ") :].strip())
    if given is None:
        return None
    found = None
    for scope in scopes:
        token = _raw(scope.token)
        if token is not None and hmac.compare_digest(given, token):
            found = scope
    return found
