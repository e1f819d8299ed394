"""The JSON-RPC bridge: an ACP-style agent server with reminder methods (docs/bridge.md,
docs/protocol.md).

Needs the ``bridge`` extra for WebSocket (``pip install "agent-reminders[bridge]"``); stdio
needs nothing beyond the core dependencies. :class:`BridgeClient` is the client side.
"""

from __future__ import annotations

from .._core.errors import BridgeConnectionError
from .acp import Bridge
from .client import BridgeClient, Notification
from .config import BridgeSettings, load_settings
from .connection import Connection
from .dispatcher import Dispatcher
from .errors import RpcError, SessionBusyError, error_object
from .request_log import append_request, request_log_line, request_log_record

__all__ = [
    "Bridge",
    "BridgeClient",
    "BridgeConnectionError",
    "BridgeSettings",
    "Connection",
    "Dispatcher",
    "Notification",
    "RpcError",
    "SessionBusyError",
    "append_request",
    "error_object",
    "load_settings",
    "request_log_line",
    "request_log_record",
]
