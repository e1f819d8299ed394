"""Server settings and the model a ``serve`` process runs (spec 04 §1, §2 and 07)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._core.errors import ConfigError
from .._core.fields import DEFAULT_MAX_BODY_BYTES
from .._core.request import Model

__all__ = ["BridgeSettings", "model_from_spec"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BridgeSettings:
    """What one server is configured with (the ``[server]`` table of 04 §1, and flags).

    Attributes:
        max_iterations: Bounds one ``session/prompt`` (``stopReason: "max_turn_requests"``).
        max_body_bytes: The largest reminder body accepted.
        max_pending: Items a session's queue may hold before ``-32005``.
        max_frame_bytes: The largest frame (stdio line) accepted.
        request_log: Append every model request here as one JSON line, when set.
        system: The system prompt of new sessions.
    """

    max_iterations: int = 25
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_pending: int = 1000
    max_frame_bytes: int = 1024 * 1024
    request_log: Path | None = None
    system: str = ""


def model_from_spec(spec: str) -> Model:
    """The model named by ``--model``: ``scripted:PATH`` (the script loops).

    This is the one place ``serve`` turns a spec into a model; swap it for
    ``agent_reminders.models.parse_model_spec`` once that exists.

    Raises:
        ConfigError: an unknown or malformed spec.
        ScriptError: the script cannot be read.
    """
    kind, sep, rest = spec.partition(":")
    if kind == "scripted" and sep and rest:
        from ..testing.scripted import ScriptedModel

        return ScriptedModel.from_file(rest, loop=True)
    raise ConfigError(f"unknown model spec {spec!r}; expected scripted:PATH")
