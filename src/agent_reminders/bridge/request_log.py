"""The request log (``serve --request-log``, docs/audit.md, "Formats"): one JSON line per model request, for audits and tests.

``serve --request-log FILE`` and ``agent-reminders demo`` write it; ``agent-reminders audit``
reads it. Each line is ``{"session_id", "turn", "system", "messages"}`` with neutral messages.

Example:
    >>> from agent_reminders import ModelRequest
    >>> request = ModelRequest(system="Be brief.", messages=[{"role": "user", "content": "hi"}],
    ...                        session_id="s1", turn=0)
    >>> request_log_line(request)
    '{"session_id": "s1", "turn": 0, "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}'
"""  # noqa: E501

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio.to_thread

from .._core.request import ModelRequest

__all__ = ["append_request", "request_log_line", "request_log_record"]


def _plain(value: Any) -> Any:
    # request messages are read-only views; the log wants plain JSON
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value]


def request_log_record(request: ModelRequest) -> dict[str, Any]:
    """The log record of one request: ``session_id``, ``turn``, ``system``, ``messages``."""
    return {
        "session_id": request.session_id,
        "turn": request.turn,
        "system": request.system,
        "messages": _plain(list(request.messages)),
    }


def request_log_line(request: ModelRequest) -> str:
    """One line of the request log (JSON, no trailing newline, non-ASCII kept as is)."""
    return json.dumps(request_log_record(request), ensure_ascii=False)


def _append_line(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


async def append_request(path: Path, request: ModelRequest) -> None:
    """Append ``request`` to the log at ``path`` (in a worker thread: file I/O never blocks
    the event loop)."""
    await anyio.to_thread.run_sync(_append_line, path, request_log_line(request))
