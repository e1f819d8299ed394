"""Server settings and the model a ``serve`` process runs (docs/bridge.md, docs/protocol.md,
"Limits")."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.channels import CHANNELS, ChannelSetting, check_channel
from .._core.errors import ConfigError, ReminderError
from .._core.fields import DEFAULT_MAX_BODY_BYTES
from .auth import Scope, parse_tokens

__all__ = [
    "BridgeSettings",
    "DEFAULT_LEASE_SECONDS",
    "MIN_LEASE_SECONDS",
    "SERVER_KEYS",
    "SERVER_SETTINGS",
    "load_settings",
]

DEFAULT_LEASE_SECONDS = 30.0
# renewed every third of it: below this a worker would spend its time renewing
MIN_LEASE_SECONDS = 0.1


def check_lease_seconds(value: object, where: str) -> float:
    """``lease_seconds`` (docs/storage.md, "Leases"): a finite number of seconds
    >= ``MIN_LEASE_SECONDS``.

    Raises:
        ConfigError: naming ``where`` and the value.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < MIN_LEASE_SECONDS
    ):
        raise ConfigError(
            f"{where} must be a finite number of seconds >= {MIN_LEASE_SECONDS} (how long a "
            f"worker's claim on a session lasts without renewal); got {value!r}"
        )
    return float(value)


@dataclass(frozen=True, kw_only=True, slots=True)
class BridgeSettings:
    """What one server is configured with (the ``[server]`` table of docs/protocol.md,
    "Limits", and flags).

    Attributes:
        max_iterations: Bounds one ``session/prompt`` (``stopReason: "max_turn_requests"``).
        max_body_bytes: The largest reminder body accepted.
        max_pending: Items a session's queue may hold before ``-32005``.
        max_frame_bytes: The largest frame (stdio line) accepted.
        request_log: Append every model request here as one JSON line, when set (with
            the time it was sent, the model and the answer's usage: docs/bridge.md).
        system: The system prompt of new sessions.
        rate_per_second: Requests per second per WebSocket connection (a token bucket
            holding one second of requests; stdio is not limited).
        idle_timeout_seconds: A WebSocket connection without a frame this long is closed.
        max_send_queue: Messages waiting for a slow WebSocket reader before it is closed.
        max_send_queue_bytes: Bytes waiting for a slow WebSocket reader before it is
            closed (a message is queued while less than this waits, so one reply larger
            than the limit still goes out).
        send_timeout_seconds: How long one WebSocket message may take to go out (a client
            that stops reading is closed after it), and how long the closing handshake
            may take before the TCP connection is dropped.
        allowed_origins: Browser origins a WebSocket upgrade may come from.
        tokens: The WebSocket tokens and their scopes (``[[tokens]]``).
        channel: The channel setting of new sessions (``"auto"``: the most trusted role the
            configured model takes, through the capability table; ``"user"``; ``"system"``).
        nonce: New sessions put a per-session nonce on every envelope.
        lease_seconds: How long this worker's claim on a session it prompts lasts without
            renewal (renewed every third of it while the prompt runs): a killed worker's
            sessions can be prompted elsewhere after this long.

    Raises:
        ConfigError: ``lease_seconds`` is not a finite number >= 0.1.
    """

    max_iterations: int = 25
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_pending: int = 1000
    max_frame_bytes: int = 1024 * 1024
    request_log: Path | None = None
    system: str = ""
    allowed_origins: tuple[str, ...] = ()
    rate_per_second: float = 200.0
    idle_timeout_seconds: float = 300.0
    max_send_queue: int = 1000
    max_send_queue_bytes: int = 8 * 1024 * 1024
    send_timeout_seconds: float = 30.0
    tokens: tuple[Scope, ...] = ()
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    channel: ChannelSetting = "auto"
    nonce: bool = False

    def __post_init__(self) -> None:
        value = check_lease_seconds(self.lease_seconds, "lease_seconds")
        object.__setattr__(self, "lease_seconds", value)
        try:
            check_channel(self.channel)
        except ReminderError as exc:
            raise ConfigError(exc.message) from None
        if type(self.nonce) is not bool:
            raise ConfigError(f"nonce must be true or false; got {self.nonce!r}")


# The [server] keys of the config file and the types they take (docs/protocol.md, "Limits").
SERVER_KEYS: dict[str, Any] = {
    "allowed_origins": list,
    "max_frame_bytes": int,
    "max_body_bytes": int,
    "max_pending_per_session": int,
    "rate_per_second": int | float,
    "idle_timeout_seconds": int | float,
    "lease_seconds": int | float,
    "channel": str,
    "nonce": bool,
}
# The BridgeSettings field each [server] key sets.
SERVER_SETTINGS: dict[str, str] = {
    "allowed_origins": "allowed_origins",
    "rate_per_second": "rate_per_second",
    "idle_timeout_seconds": "idle_timeout_seconds",
    "max_frame_bytes": "max_frame_bytes",
    "max_body_bytes": "max_body_bytes",
    "max_pending_per_session": "max_pending",
    "lease_seconds": "lease_seconds",
    "channel": "channel",
    "nonce": "nonce",
}


def load_settings(path: Path | None, **flags: Any) -> BridgeSettings:
    """Settings from the TOML config file (``[server]``, ``[[tokens]]``) and the flags.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or has an unknown key or a value
            of the wrong type (naming it).
    """
    values: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config {path} is not TOML: {exc}") from None
        unknown = sorted(set(data) - {"server", "tokens"})
        if unknown:
            raise ConfigError(f"config {path}: unknown table(s) {', '.join(unknown)}")
        server = data.get("server", {})
        if not isinstance(server, dict):
            raise ConfigError(f"config {path}: [server] must be a table")
        for key, value in server.items():
            kind = SERVER_KEYS.get(key)
            if kind is None:
                known = ", ".join(sorted(SERVER_KEYS))
                raise ConfigError(f"config {path}: unknown key server.{key}; known: {known}")
            if key == "lease_seconds":
                check_lease_seconds(value, f"config {path}: server.lease_seconds")
            positive = not isinstance(value, int | float) or value > 0
            if key == "channel" and value not in CHANNELS:
                raise ConfigError(
                    f"config {path}: server.channel must be one of "
                    f"{', '.join(CHANNELS)}; got {value!r}"
                )
            if key == "nonce":
                if not isinstance(value, bool):
                    raise ConfigError(f"config {path}: server.nonce must be true or false")
            elif not isinstance(value, kind) or isinstance(value, bool) or not positive:
                raise ConfigError(f"config {path}: server.{key} has a bad value {value!r}")
            if key in SERVER_SETTINGS:
                values[SERVER_SETTINGS[key]] = tuple(value) if isinstance(value, list) else value
        if "tokens" in data:
            values["tokens"] = parse_tokens(data["tokens"], f"config {path}")
    values.update({k: v for k, v in flags.items() if v is not None})
    return BridgeSettings(**values)
