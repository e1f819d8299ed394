"""Helpers for the backend tests: raw JSON spans, append-only checks, Anthropic breakpoints."""

from __future__ import annotations

import itertools
import json
from typing import Any


def _skip(text: str, i: int) -> int:
    return len(text) - len(text[i:].lstrip()) if text[i:].strip() else len(text)


def raw_value(raw: bytes, key: str) -> str:
    """The exact text of a top-level key's value in a JSON object, as the client sent it."""
    text = raw.decode("utf-8")
    decoder = json.JSONDecoder()
    i = _skip(text, text.index("{") + 1)
    while text[i] != "}":
        name, i = decoder.raw_decode(text, i)
        i = _skip(text, i)
        assert text[i] == ":"
        start = _skip(text, i + 1)
        _, end = decoder.raw_decode(text, start)
        if name == key:
            return text[start:end]
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    raise KeyError(key)


def assert_raw_append_only(arrays: list[str]) -> None:
    """Each JSON array text, without its closing bracket, begins the next one byte for byte."""
    for n, (before, after) in enumerate(itertools.pairwise(arrays)):
        assert before.endswith("]"), before[-20:]
        head = before[:-1].rstrip()
        assert after.startswith(head), f"request {n + 1} does not begin with request {n}"
        rest = after[len(head) :].lstrip()
        assert rest[:1] == ",", f"request {n + 1} changes the end of request {n}: {rest[:40]!r}"


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def blocks_of(message: dict[str, Any]) -> list[Any]:
    content = message["content"]
    return [content] if isinstance(content, str) else list(content)


def marked(block: Any) -> bool:
    return isinstance(block, dict) and "cache_control" in block


def expected_breakpoints(body: dict[str, Any]) -> set[tuple[str, int, int]]:
    """The places ``to_anthropic`` puts ``cache_control`` on (docs/wire-formats.md, "Anthropic
    cache breakpoints"), as (part, message index, block index)."""
    places: set[tuple[str, int, int]] = set()
    system = body.get("system") or []
    if system:
        places.add(("system", 0, len(system) - 1))
    messages = body["messages"]
    flat: list[tuple[int, int]] = [
        (m, b) for m, message in enumerate(messages) for b in range(len(blocks_of(message)))
    ]
    if not flat:
        return places
    last = flat[-1]
    places.add(("messages", *last))
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if assistants and assistants[-1] > 0:
        before = assistants[-1] - 1
        end = (before, len(blocks_of(messages[before])) - 1)
        if flat.index(last) - flat.index(end) > 20:
            places.add(("messages", *end))
    return places


def actual_breakpoints(body: dict[str, Any]) -> set[tuple[str, int, int]]:
    places = {("system", 0, b) for b, blk in enumerate(body.get("system") or []) if marked(blk)}
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(blocks_of(message)):
            if marked(block):
                places.add(("messages", m, b))
            inner = block.get("content") if isinstance(block, dict) else None
            assert not (isinstance(inner, list) and any(marked(x) for x in inner))
    return places
