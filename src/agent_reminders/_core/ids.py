"""Time-ordered unique ids (UUIDv7, RFC 9562) for reminders and transcripts."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

__all__ = ["IdFactory", "UUID7Factory", "new_id"]

IdFactory = Callable[[], str]


class UUID7Factory:
    """Makes UUIDv7 strings; ids made later by one factory sort later.

    Within one millisecond a 12-bit counter (seeded randomly) keeps the order; if it overflows,
    the timestamp is advanced by one millisecond, as RFC 9562 §6.2 allows. ``clock`` returns
    nanoseconds since the epoch (default :func:`time.time_ns`); inject one in tests.

    Example:
        >>> make = UUID7Factory(clock=lambda: 1_800_000_000_000_000_000)
        >>> a, b = make(), make()
        >>> a < b
        True
    """

    def __init__(self, *, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_ms = 0
        self._counter = 0

    def __call__(self) -> str:
        # 80 random bits in one read: 16 seed a new millisecond's counter, 62 fill rand_b
        entropy = int.from_bytes(os.urandom(10), "big")
        with self._lock:
            now = self._clock() // 1_000_000
            if now > self._last_ms:
                self._last_ms = now
                self._counter = (entropy >> 64) & 0x7FF
            else:
                self._counter += 1
                if self._counter > 0xFFF:
                    self._last_ms += 1
                    self._counter = 0
            ms, counter = self._last_ms, self._counter
        rand = entropy & ((1 << 62) - 1)
        value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand
        # the canonical 8-4-4-4-12 form, as str(uuid.UUID(int=value)) writes it
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_default = UUID7Factory()


def new_id() -> str:
    """Return a new UUIDv7 string from the process-wide factory (ids made later sort later)."""
    return _default()
