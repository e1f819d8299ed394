"""A simulation of Anthropic's prompt cache, faithful enough to judge cache placement in tests.

:class:`AnthropicPromptCache` answers, for one Messages request, the ``usage`` and the
``diagnostics`` the API would answer with: what was read from the cache, what was written,
why the previous request's prefix could not be reused. :class:`FakeClock` is the clock it
expires entries by, moved by hand. ``RecordingModelServer(prompt_cache=...)`` puts both figures
into its ``/messages`` responses, so the real SDKs and CLIs read them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .._core.errors import ConfigError, ModelError
from ..audit.readers import canonical_json
from ..integrations._wire import content_blocks
from ..integrations.anthropic import LOOKBACK_BLOCKS, strip_cache_control

__all__ = ["DIAGNOSIS_BETA", "AnthropicPromptCache", "Clock", "FakeClock"]

DIAGNOSIS_BETA = "cache-diagnosis-2026-04-07"
"""The ``anthropic-beta`` value a request with a ``diagnostics`` object needs."""

_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
_BYTES_PER_TOKEN = 4


class Clock(Protocol):
    """What the cache reads the time from: ``now()`` in seconds (``time.time`` fits)."""

    def now(self) -> float:
        """The current time in seconds."""
        ...


class FakeClock:
    """A clock that moves only when told to; thread-safe.

    Example:
        >>> clock = FakeClock()
        >>> start = clock.now()
        >>> clock.advance(301) - start
        301.0
    """

    START = 1_767_225_600.0
    """The default start: 2026-01-01T00:00:00Z as a Unix time."""

    def __init__(self, start: float = START) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        """The current fake time in seconds."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move the time forward by ``seconds`` (not negative) and return the new time."""
        if seconds < 0:
            raise ConfigError(f"FakeClock.advance: seconds must be >= 0, got {seconds!r}")
        with self._lock:
            self._now += float(seconds)
            return self._now


class _SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass(frozen=True, slots=True)
class _Breakpoint:
    index: int  # the block it ends on
    ttl: str
    where: str


@dataclass(frozen=True, slots=True)
class _Prompt:
    """One request's prompt: per block, its part, its own hash, the hash of the prefix it
    ends, and the tokens up to it."""

    model: str
    parts: tuple[str, ...]  # "tools" / "system" / "messages"
    digests: tuple[bytes, ...]
    chain: tuple[bytes, ...]
    ends: tuple[int, ...]  # tokens of blocks 0..i
    breakpoints: tuple[_Breakpoint, ...]

    def tokens_to(self, index: int) -> int:
        return self.ends[index] if index >= 0 else 0

    def part_hash(self, part: str) -> bytes:
        return hashlib.sha256(
            b"".join(h for h, p in zip(self.digests, self.parts, strict=True) if p == part)
        ).digest()


@dataclass(slots=True)
class _Entry:
    expires: float
    ttl: float


@dataclass(frozen=True, slots=True)
class _Fingerprint:
    prompt: _Prompt
    cacheable: int  # tokens this request left readable: read + written


def _canonical(value: Any) -> bytes:
    return canonical_json(strip_cache_control(value)).encode("utf-8")


def _markers(value: Any, where: str) -> list[tuple[Any, str]]:
    """Every ``cache_control`` value inside ``value`` with its path, in document order."""
    found: list[tuple[Any, str]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "cache_control":
                found.append((item, f"{where}.cache_control"))
            else:
                found.extend(_markers(item, f"{where}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_markers(item, f"{where}.{i}"))
    return found


def _as_blocks(content: Any) -> list[Any]:
    # a string is one text block, as the API reads it: "hi" and [{"type":"text","text":"hi"}]
    # are the same prompt
    if isinstance(content, str):
        return content_blocks(content)
    return list(content) if isinstance(content, list) else []


def _ttl_of(marker: Any, where: str) -> str:
    if not isinstance(marker, Mapping) or marker.get("type") != "ephemeral":
        raise _refuse(f"{where}.type: Input should be 'ephemeral'")
    ttl = marker.get("ttl", "5m")
    if ttl not in _TTL_SECONDS:
        raise _refuse(f"{where}.ttl: Input should be '5m' or '1h', not {ttl!r}")
    return str(ttl)


def _refuse(message: str) -> ModelError:
    return ModelError(
        "anthropic",
        f"the Messages API answers HTTP 400 invalid_request_error: {message}",
        status=400,
        server_message=message,
    )


def _betas(values: str | Iterable[str]) -> set[str]:
    items = [values] if isinstance(values, str) else list(values)
    return {b.strip() for v in items for b in v.split(",") if b.strip()}


class AnthropicPromptCache:
    """Anthropic's prompt cache, simulated: a test oracle for where ``cache_control`` goes.

    :meth:`respond` takes one Messages request body and answers its ``usage`` and
    ``diagnostics`` as the API documents them; :meth:`refusal` says which 400 the API would
    answer instead. Thread-safe (one lock around the entries and fingerprints).

    The rules:

    - The prompt is a sequence of blocks: each tool, the system prompt (a string is one
      block, a list one per block), then each message's content blocks (a string content is
      one text block, so ``"hi"`` and ``[{"type": "text", "text": "hi"}]`` are the same). A
      block's bytes are its canonical JSON (sorted keys, no spaces, non-ASCII kept) without any
      ``cache_control`` key; a message block is ``{"role", "start", "content"}`` (``start``:
      first block of its message), so roles and message boundaries count. Prefixes are matched
      byte for byte, per ``model``.
    - Tokens: one per 4 bytes (rounded up) of each block's bytes.
    - Breakpoints: every block carrying ``cache_control`` (``{"type": "ephemeral"}``, ``ttl``
      ``"5m"`` (default) or ``"1h"``); a top-level ``cache_control`` adds one on the last
      block (unless that block carries one already). More than ``max_breakpoints``, a
      ``1h`` one after a ``5m`` one, or a bad marker is refused (HTTP 400).
    - Read: for each breakpoint, the live entry at it or up to
      :data:`~agent_reminders.integrations.anthropic.LOOKBACK_BLOCKS` blocks before it, the
      nearest first; the longest one found is read, and its expiry renewed (now + its TTL).
    - Write: every breakpoint whose prefix holds at least ``min_tokens`` tokens creates or
      renews an entry expiring at now + its TTL (300 s or 3600 s; live while now is
      earlier). ``cache_creation_input_tokens`` runs from the end of the read to the furthest
      written breakpoint, split in ``cache_creation`` by the TTL of the breakpoint ending each
      segment; ``input_tokens`` is the rest of the prompt.
    - Diagnostics (beta :data:`DIAGNOSIS_BETA`, required with a ``diagnostics`` object): an
      opted-in request's prompt is fingerprinted under its response's message id; with a
      ``previous_message_id`` the first of ``model_changed``, ``system_changed``,
      ``tools_changed``, ``messages_changed`` (messages not only appended to) that applies is
      the ``cache_miss_reason``, else ``previous_message_not_found`` for an unknown id; ``None``
      when nothing diverged. ``cache_missed_input_tokens`` (on the first four, as in the SDK's
      types) approximates what would have been read: the tokens the previous request left
      cached (its read + written) beyond the prefix both requests share. The comparison is
      structural: expiry plays no part.

    Not simulated: races between concurrent requests (the real cache is only readable once
    the first response has begun; here a request sees every entry written before it), scoping
    by organization or workspace, eviction before the TTL, per-model minimum lengths (one
    ``min_tokens`` for all), the real tokenizer, prompt parameters other than ``model``,
    ``tools``, ``system`` and ``messages`` (``tool_choice``, ``thinking``, images' pixels),
    the ``unavailable`` reason and the extended-TTL beta header (``1h`` needs none here).

    Example:
        >>> cache = AnthropicPromptCache(clock=FakeClock(), min_tokens=10)
        >>> mark = {"type": "ephemeral"}
        >>> first = {"model": "m", "system": [{"type": "text", "text": "x" * 100,
        ...                                     "cache_control": mark}],
        ...          "messages": [{"role": "user", "content": "hi"}]}
        >>> usage, diagnostics = cache.respond(first, "msg_1")
        >>> usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"], diagnostics
        (32, 0, None)
        >>> cache.respond(first, "msg_2")[0]["cache_read_input_tokens"]
        32
    """

    def __init__(
        self, clock: Clock | None = None, min_tokens: int = 1024, max_breakpoints: int = 4
    ) -> None:
        if min_tokens < 0:
            raise ConfigError(f"AnthropicPromptCache: min_tokens must be >= 0, got {min_tokens}")
        if max_breakpoints < 1:
            raise ConfigError(
                f"AnthropicPromptCache: max_breakpoints must be >= 1, got {max_breakpoints}"
            )
        self.clock: Clock = clock if clock is not None else _SystemClock()
        self.min_tokens = min_tokens
        self.max_breakpoints = max_breakpoints
        self._entries: dict[tuple[str, bytes], _Entry] = {}
        self._fingerprints: dict[str, _Fingerprint] = {}
        self._lock = threading.Lock()

    # -- the prompt ------------------------------------------------------------------------

    def _prompt(self, body: Mapping[str, Any]) -> _Prompt:
        """The blocks of ``body``, its breakpoints checked; raises the API's 400 as ModelError."""
        blocks: list[tuple[str, bytes, list[tuple[Any, str]]]] = []
        for i, tool in enumerate(body.get("tools") or []):
            blocks.append(("tools", _canonical(tool), _markers(tool, f"tools.{i}")))
        for i, block in enumerate(_as_blocks(body.get("system"))):
            blocks.append(("system", _canonical(block), _markers(block, f"system.{i}")))
        for i, message in enumerate(body.get("messages") or []):
            if not isinstance(message, Mapping):
                continue
            for k, block in enumerate(_as_blocks(message.get("content"))):
                framed = {"role": message.get("role"), "start": k == 0, "content": block}
                where = f"messages.{i}.content.{k}"
                blocks.append(("messages", _canonical(framed), _markers(block, where)))
        breakpoints: list[_Breakpoint] = []
        for index, (_, _, markers) in enumerate(blocks):
            breakpoints.extend(_Breakpoint(index, _ttl_of(m, where), where) for m, where in markers)
        top = body.get("cache_control")
        if top is not None:
            ttl = _ttl_of(top, "cache_control")
            if blocks and not blocks[-1][2]:  # on a marked last block, that marker is the one
                breakpoints.append(_Breakpoint(len(blocks) - 1, ttl, "cache_control"))
        if len(breakpoints) > self.max_breakpoints:
            raise _refuse(
                f"A maximum of {self.max_breakpoints} blocks with cache_control may be "
                f"provided. Found {len(breakpoints)}."
            )
        short: _Breakpoint | None = None
        for point in breakpoints:
            if point.ttl == "5m" and short is None:
                short = point
            elif point.ttl == "1h" and short is not None:
                raise _refuse(
                    f"{point.where}: a cache_control with ttl '1h' cannot come after one with "
                    f"ttl '5m' ({short.where}); put the longer TTLs first"
                )
        digests = [
            hashlib.sha256(part.encode() + b"\0" + data).digest() for part, data, _ in blocks
        ]
        chain: list[bytes] = []
        ends: list[int] = []
        previous, total = b"", 0
        for digest, (_, data, _) in zip(digests, blocks, strict=True):
            previous = hashlib.sha256(previous + digest).digest()
            total += -(-len(data) // _BYTES_PER_TOKEN)
            chain.append(previous)
            ends.append(total)
        return _Prompt(
            model=str(body.get("model") or ""),
            parts=tuple(p for p, _, _ in blocks),
            digests=tuple(digests),
            chain=tuple(chain),
            ends=tuple(ends),
            breakpoints=tuple(breakpoints),
        )

    def refusal(self, body: Mapping[str, Any], betas: str | Iterable[str] = ()) -> str | None:
        """The message of the HTTP 400 the API answers ``body`` with for its cache markers or
        its ``diagnostics``, or ``None`` when it takes them. ``betas``: the ``anthropic-beta``
        header value(s), comma-separated or not.

        Example:
            >>> cache = AnthropicPromptCache()
            >>> mark = {"type": "ephemeral"}
            >>> body = {"model": "m", "messages": [{"role": "user", "content": [
            ...     {"type": "text", "text": str(i), "cache_control": mark} for i in range(5)]}]}
            >>> cache.refusal(body)
            'A maximum of 4 blocks with cache_control may be provided. Found 5.'
        """
        try:
            self._prompt(body)
            self._diagnostics_request(body, betas)
        except ModelError as exc:
            return exc.server_message
        return None

    @staticmethod
    def _diagnostics_request(
        body: Mapping[str, Any], betas: str | Iterable[str]
    ) -> tuple[bool, str | None]:
        """(opted in, previous message id) of ``body``'s ``diagnostics``."""
        diagnostics = body.get("diagnostics")
        if diagnostics is None:
            return False, None
        if not isinstance(diagnostics, Mapping):
            raise _refuse("diagnostics: Input should be an object")
        if DIAGNOSIS_BETA not in _betas(betas):
            raise _refuse(f"diagnostics: requires the anthropic-beta header {DIAGNOSIS_BETA}")
        previous = diagnostics.get("previous_message_id")
        if previous is not None and not isinstance(previous, str):
            raise _refuse("diagnostics.previous_message_id: Input should be a string or null")
        return True, previous

    # -- one request -----------------------------------------------------------------------

    def respond(
        self, body: Mapping[str, Any], message_id: str, betas: str | Iterable[str] = ()
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(usage, diagnostics)`` for the request ``body`` answered as ``message_id``.

        ``usage`` holds ``input_tokens``, ``cache_creation_input_tokens``,
        ``cache_read_input_tokens`` and ``cache_creation`` (``ephemeral_5m_input_tokens``,
        ``ephemeral_1h_input_tokens``); add ``output_tokens``. ``diagnostics`` is ``None``
        when the request did not opt in or nothing diverged, else
        ``{"cache_miss_reason": {"type": ...}}``. Reading and writing change the cache.

        Raises:
            ModelError: status 400, what :meth:`refusal` names, the cache left unchanged.
        """
        prompt = self._prompt(body)
        opted_in, previous_id = self._diagnostics_request(body, betas)
        with self._lock:
            now = self.clock.now()
            self._entries = {k: e for k, e in self._entries.items() if now < e.expires}
            read_at = self._read(prompt, now)
            usage, cacheable = self._write(prompt, read_at, now)
            diagnostics = None
            if opted_in:
                if previous_id is not None:
                    diagnostics = self._diagnose(prompt, self._fingerprints.get(previous_id))
                self._fingerprints[message_id] = _Fingerprint(prompt, cacheable)
        return usage, diagnostics

    def _read(self, prompt: _Prompt, now: float) -> int:
        """The block index of the longest live entry a breakpoint reaches (-1: none); renewed."""
        best = -1
        for point in prompt.breakpoints:
            for index in range(point.index, max(-1, point.index - LOOKBACK_BLOCKS - 1), -1):
                if index <= best:
                    break
                if (prompt.model, prompt.chain[index]) in self._entries:
                    best = index
                    break
        if best >= 0:
            entry = self._entries[(prompt.model, prompt.chain[best])]
            entry.expires = now + entry.ttl
        return best

    def _write(self, prompt: _Prompt, read_at: int, now: float) -> tuple[dict[str, Any], int]:
        read = prompt.tokens_to(read_at)
        end, split = read, {"5m": 0, "1h": 0}
        for point in sorted(prompt.breakpoints, key=lambda b: b.index):
            tokens = prompt.tokens_to(point.index)
            if tokens < self.min_tokens or tokens == 0:
                continue
            ttl = _TTL_SECONDS[point.ttl]
            key = (prompt.model, prompt.chain[point.index])
            entry = self._entries.get(key)
            if entry is None or entry.expires < now + ttl:
                self._entries[key] = _Entry(expires=now + ttl, ttl=ttl)
            if tokens > end:
                split[point.ttl] += tokens - end
                end = tokens
        written = end - read
        total = prompt.tokens_to(len(prompt.ends) - 1)
        usage = {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": split["5m"],
                "ephemeral_1h_input_tokens": split["1h"],
            },
        }
        return usage, end

    @staticmethod
    def _diagnose(prompt: _Prompt, before: _Fingerprint | None) -> dict[str, Any] | None:
        if before is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        old = before.prompt
        if old.model != prompt.model:
            reason = "model_changed"
        elif old.part_hash("system") != prompt.part_hash("system"):
            reason = "system_changed"
        elif old.part_hash("tools") != prompt.part_hash("tools"):
            reason = "tools_changed"
        elif len(old.chain) > len(prompt.chain) or (
            old.chain and old.chain[-1] != prompt.chain[len(old.chain) - 1]
        ):
            reason = "messages_changed"
        else:
            return None
        shared = 0
        if old.model == prompt.model:
            while (
                shared < min(len(old.chain), len(prompt.chain))
                and old.chain[shared] == prompt.chain[shared]
            ):
                shared += 1
        missed = max(0, before.cacheable - old.tokens_to(shared - 1))
        return {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": missed}}
