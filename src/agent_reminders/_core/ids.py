"""Time-ordered unique ids (UUIDv7, RFC 9562) for reminders and transcripts."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable

__all__ = ["IdFactory", "new_id"]

IdFactory = Callable[[], str]

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """Return a new UUIDv7 string; ids made later in the same process sort later.

    Within one millisecond a 12-bit counter (seeded randomly) keeps the order; if it overflows,
    the timestamp is advanced by one millisecond, as RFC 9562 §6.2 allows.
    """
    global _last_ms, _counter
    with _lock:
        now = time.time_ns() // 1_000_000
        if now > _last_ms:
            _last_ms = now
            _counter = int.from_bytes(os.urandom(2), "big") & 0x7FF
        else:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
        ms, counter = _last_ms, _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand
    return str(uuid.UUID(int=value))
