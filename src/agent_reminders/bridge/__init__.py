"""The JSON-RPC bridge: an ACP-style agent server with reminder methods (spec 04).

Needs the ``bridge`` extra for WebSocket (``pip install "agent-reminders[bridge]"``); stdio
needs nothing beyond the core dependencies.
"""

from __future__ import annotations

from .acp import Bridge, Connection
from .config import BridgeSettings, load_settings
from .dispatcher import Dispatcher
from .errors import RpcError, SessionBusyError, error_object

__all__ = [
    "Bridge",
    "BridgeSettings",
    "Connection",
    "Dispatcher",
    "RpcError",
    "SessionBusyError",
    "error_object",
    "load_settings",
]
