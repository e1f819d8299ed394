"""Request rate limits (docs/protocol.md, "Limits"): a token bucket per WebSocket connection."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .errors import QUEUE_FULL, RpcError

__all__ = ["TokenBucket"]


class TokenBucket:
    """Holds ``rate`` tokens (one second of requests), refilled at ``rate`` per second.

    Example:
        >>> now = [0.0]
        >>> bucket = TokenBucket(2, clock=lambda: now[0])
        >>> bucket.take(), bucket.take()
        (None, None)
        >>> bucket.take()
        500
        >>> now[0] = 0.5
        >>> bucket.take() is None
        True
    """

    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0; got {rate!r}")
        self.rate = float(rate)
        self._clock = clock
        self._tokens = self.rate
        self._at = clock()

    def take(self) -> int | None:
        """Take one token: ``None`` when allowed, else the milliseconds until one is back."""
        now = self._clock()
        self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return None
        return max(1, math.ceil((1 - self._tokens) / self.rate * 1000))

    def admit(self) -> None:
        """Take a token or raise ``-32005`` with ``data.retryAfterMs``."""
        wait = self.take()
        if wait is not None:
            raise RpcError(QUEUE_FULL, "Rate limited", {"retryAfterMs": wait})
