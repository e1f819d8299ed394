"""The request log (``serve --request-log``, docs/audit.md, "Formats"): one JSON line per model request, for audits and tests.

``serve --request-log FILE`` and ``agent-reminders demo`` write it; ``agent-reminders audit``
reads it. Each line is ``{"session_id", "turn", "timestamp", "model", "usage", "system",
"messages"}`` with neutral messages: ``timestamp`` (ISO 8601 UTC, when the request was sent;
the bridge only), ``model`` (the backend's ``name``) and ``usage`` (``Usage.to_dict()`` of the
answer) only when known, the other four always.

Example:
    >>> from agent_reminders import ModelRequest, Usage
    >>> request = ModelRequest(system="Be brief.", messages=[{"role": "user", "content": "hi"}],
    ...                        session_id="s1", turn=0)
    >>> request_log_line(request)
    '{"session_id": "s1", "turn": 0, "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}'
    >>> request_log_record(request, model="anthropic:claude-opus-4-8",
    ...                    usage=Usage(input_tokens=12, output_tokens=3))["usage"]["input_tokens"]
    12
"""  # noqa: E501

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread

from .._core.request import ModelRequest, Usage

__all__ = ["append_request", "request_log_line", "request_log_record", "utc_timestamp"]


def _plain(value: Any) -> Any:
    # request messages are read-only views; the log wants plain JSON
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value]


def utc_timestamp(when: datetime) -> str:
    """``when`` as the log's ``timestamp``: ISO 8601 in UTC, milliseconds, ``Z``.

    Example:
        >>> utc_timestamp(datetime(2026, 12, 4, 16, 20, 0, 123456, tzinfo=UTC))
        '2026-12-04T16:20:00.123Z'

    Raises:
        ValueError: ``when`` has no time zone (it could be any time in UTC).
    """
    if when.tzinfo is None:
        raise ValueError(
            f"utc_timestamp needs an aware datetime (e.g. datetime.now(UTC)); got {when!r}"
        )
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def request_log_record(
    request: ModelRequest,
    *,
    model: str | None = None,
    usage: Usage | None = None,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """The log record of one request: ``session_id``, ``turn``, then ``timestamp``,
    ``model`` and ``usage`` (each only when given), then ``system`` and ``messages``."""
    record: dict[str, Any] = {"session_id": request.session_id, "turn": request.turn}
    if timestamp is not None:
        record["timestamp"] = timestamp
    if model is not None:
        record["model"] = model
    if usage is not None:
        record["usage"] = usage.to_dict()
    record["system"] = request.system
    record["messages"] = _plain(list(request.messages))
    return record


def request_log_line(
    request: ModelRequest,
    *,
    model: str | None = None,
    usage: Usage | None = None,
    timestamp: str | None = None,
) -> str:
    """One line of the request log (JSON, no trailing newline, non-ASCII kept as is); the
    keyword arguments as :func:`request_log_record` takes them."""
    record = request_log_record(request, model=model, usage=usage, timestamp=timestamp)
    return json.dumps(record, ensure_ascii=False)


def _append_line(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


async def append_request(
    path: Path,
    request: ModelRequest,
    *,
    model: str | None = None,
    usage: Usage | None = None,
    timestamp: str | None = None,
) -> None:
    """Append ``request`` to the log at ``path`` (in a worker thread: file I/O never blocks
    the event loop); the keyword arguments as :func:`request_log_record` takes them."""
    line = request_log_line(request, model=model, usage=usage, timestamp=timestamp)
    await anyio.to_thread.run_sync(_append_line, path, line)
