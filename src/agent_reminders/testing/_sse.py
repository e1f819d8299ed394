"""The server-sent events of Anthropic's Messages API, as the recording server streams them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["anthropic_sse_events"]

_DELTA_CHARS = 40  # text and tool input arrive in pieces of this size, as from the real API


def _pieces(text: str) -> list[str]:
    return [text[i : i + _DELTA_CHARS] for i in range(0, len(text), _DELTA_CHARS)] or [""]


def anthropic_sse_events(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The Messages API's stream for ``message``: (event name, data) in order."""
    usage = dict(message.get("usage") or {})
    output_tokens = usage.get("output_tokens", 0)
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": min(1, output_tokens)}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message.get("content") or []):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(block["input"]))
            ]
        else:
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": output_tokens}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
