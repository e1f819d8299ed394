"""Time-ordered unique ids (UUIDv7, RFC 9562) for reminders and transcripts."""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable

__all__ = ["IdFactory", "UUID7Factory", "new_id"]

IdFactory = Callable[[], str]


_POOL_BYTES = 4096  # random bytes read ahead: one getrandom call per ~400 ids
_MASK_48 = (1 << 48) - 1
_RAND_B = (1 << 62) - 1
_VARIANT = 0b10 << 62


class _Entropy:
    """Random bytes from :func:`os.urandom`, read ahead in blocks (not thread-safe: its owner
    holds a lock). A forked child forgets the block it inherited, so parent and child never
    share random bits."""

    __slots__ = ("__weakref__", "at", "pool")

    def __init__(self) -> None:
        self.pool = b""
        self.at = 0
        _ENTROPY.add(self)

    def take(self, size: int) -> int:
        """``size`` random bytes as an int."""
        at = self.at
        if at + size > len(self.pool):
            self.pool, at = os.urandom(_POOL_BYTES), 0
        self.at = at + size
        return int.from_bytes(self.pool[at : at + size], "big")

    def forget(self) -> None:
        """Drop the bytes read ahead."""
        self.pool, self.at = b"", 0


_ENTROPY: weakref.WeakSet[_Entropy] = weakref.WeakSet()


def _forget_in_child() -> None:
    for entropy in list(_ENTROPY):
        entropy.forget()


os.register_at_fork(after_in_child=_forget_in_child)


class UUID7Factory:
    """Makes UUIDv7 strings; ids made later by one factory sort later.

    Within one millisecond a 12-bit counter (seeded randomly) keeps the order; if it overflows,
    the timestamp is advanced by one millisecond, as RFC 9562 allows (section 6.2). ``clock``
    returns nanoseconds since the epoch (default :func:`time.time_ns`); inject one in tests. The
    random bits come from :func:`os.urandom`, read ahead in blocks.

    Example:
        >>> make = UUID7Factory(clock=lambda: 1_800_000_000_000_000_000)
        >>> a, b = make(), make()
        >>> a < b
        True
    """

    def __init__(self, *, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entropy = _Entropy()
        self._last_ms = -1
        self._counter = 0
        self._prefix_ms = -1
        self._prefix = ""  # the first 13 characters: the millisecond, hyphenated

    def __call__(self) -> str:
        with self._lock:
            now = self._clock() // 1_000_000
            if now > self._last_ms:
                self._last_ms = now
                self._counter = self._entropy.take(2) & 0x7FF
            else:
                self._counter += 1
                if self._counter > 0xFFF:
                    self._last_ms += 1
                    self._counter = 0
            ms, counter = self._last_ms, self._counter
            if ms != self._prefix_ms:
                stamp = f"{ms & _MASK_48:012x}"
                self._prefix, self._prefix_ms = f"{stamp[:8]}-{stamp[8:]}", ms
            prefix = self._prefix
            rand = f"{_VARIANT | self._entropy.take(8) & _RAND_B:016x}"
        # the canonical 8-4-4-4-12 form, as str(uuid.UUID(int=...)) writes it
        return f"{prefix}-7{counter:03x}-{rand[:4]}-{rand[4:]}"


_default = UUID7Factory()


def new_id() -> str:
    """Return a new UUIDv7 string from the process-wide factory (ids made later sort later)."""
    return _default()
