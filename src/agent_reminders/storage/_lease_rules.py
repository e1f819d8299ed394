"""The arguments of a lease (``claim``, ``renew``, ``release``), checked alike by every
backend."""

from __future__ import annotations

import math

from .._core.errors import ConfigError


def check_lease(owner: object, ttl_seconds: object) -> tuple[str, float]:
    """The ``owner`` (a non-blank string naming the worker) and ``ttl_seconds`` (a finite
    number > 0) of ``claim`` / ``renew``.

    Raises:
        TypeError: ``owner`` is not a non-blank string, or ``ttl_seconds`` not a number.
        ConfigError: ``ttl_seconds`` is not > 0 (``lease_seconds`` in the bridge config).
    """
    check_owner(owner)
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float):
        raise TypeError(f"ttl_seconds must be a number of seconds; got {ttl_seconds!r}")
    if not math.isfinite(ttl_seconds) or ttl_seconds <= 0:
        raise ConfigError(f"a lease lasts a finite number of seconds > 0; got {ttl_seconds!r}")
    return str(owner), float(ttl_seconds)


def check_owner(owner: object) -> str:
    """A lease owner argument: a non-blank string (the worker's id)."""
    if not isinstance(owner, str) or not owner.strip():
        raise TypeError(f"a lease owner must be a non-blank string (a worker id); got {owner!r}")
    return owner


def check_replace(replace: object) -> str | None:
    """``claim``'s ``replace``: ``None``, or the owner (a non-blank string) whose lease may
    be taken over."""
    return None if replace is None else check_owner(replace)
