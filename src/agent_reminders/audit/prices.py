"""What a model's tokens cost: the price table the audit bills the providers' numbers at
(docs/audit.md, "Prices").

A price is per million tokens, in US dollars: uncached input, output, and the cache multipliers
of an input token — a read, a write that lives 5 minutes, one that lives an hour. A model name
is priced by the longest entry that is a prefix of it (``claude-sonnet-4-5-20250929`` by
``claude-sonnet-4``); a file given with ``--prices`` adds entries or replaces them.

Example:
    >>> table = PriceTable.default()
    >>> price = table.lookup("claude-sonnet-4-5-20250929")
    >>> price.input, price.read, price.write_5m, price.write_1h
    (3.0, 0.1, 1.25, 2.0)
    >>> table.lookup("my-local-model") is None
    True
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .._core.errors import ConfigError

__all__ = ["PRICES_AS_OF", "Price", "PriceTable"]

PRICES_AS_OF = "2026-12-01"
"""When the default table was read off the providers' price pages."""


@dataclass(frozen=True, slots=True)
class Price:
    """The price of one model's tokens.

    Attributes:
        input: US dollars per million uncached input tokens.
        output: US dollars per million output tokens.
        read: A cached input token read, as a multiple of ``input``.
        write_5m: An input token written to a 5-minute cache entry, as a multiple of
            ``input`` (OpenAI writes for free: 1.0).
        write_1h: Likewise for a 1-hour entry.
    """

    input: float
    output: float
    read: float = 0.1
    write_5m: float = 1.25
    write_1h: float = 2.0

    def cost(
        self, *, uncached: int, read: int, written_5m: int, written_1h: int, output: int
    ) -> float:
        """US dollars for one request's tokens."""
        units = (
            uncached + read * self.read + written_5m * self.write_5m + written_1h * self.write_1h
        )
        return (units * self.input + output * self.output) / 1_000_000


_CLAUDE = {"read": 0.1, "write_5m": 1.25, "write_1h": 2.0}
_OPENAI = {"write_5m": 1.0, "write_1h": 1.0}  # OpenAI bills no cache write

# (prefix, input $/MTok, output $/MTok, extra) — the longest prefix of a name wins.
_DEFAULTS: tuple[tuple[str, float, float, Mapping[str, float]], ...] = (
    ("claude-opus-4-5", 5.0, 25.0, _CLAUDE),
    ("claude-opus-4-6", 5.0, 25.0, _CLAUDE),
    ("claude-opus-4-7", 5.0, 25.0, _CLAUDE),
    ("claude-opus-4-8", 5.0, 25.0, _CLAUDE),
    ("claude-opus-4", 15.0, 75.0, _CLAUDE),  # Opus 4 and 4.1
    ("claude-opus", 5.0, 25.0, _CLAUDE),
    ("claude-sonnet", 3.0, 15.0, _CLAUDE),
    ("claude-haiku-4", 1.0, 5.0, _CLAUDE),
    ("claude-3-7-sonnet", 3.0, 15.0, _CLAUDE),
    ("claude-3-5-sonnet", 3.0, 15.0, _CLAUDE),
    ("claude-3-5-haiku", 0.8, 4.0, _CLAUDE),
    ("claude-3-opus", 15.0, 75.0, _CLAUDE),
    ("claude-3-haiku", 0.25, 1.25, _CLAUDE),
    ("gpt-5", 1.25, 10.0, {"read": 0.1, **_OPENAI}),
    ("gpt-5-mini", 0.25, 2.0, {"read": 0.1, **_OPENAI}),
    ("gpt-5-nano", 0.05, 0.4, {"read": 0.1, **_OPENAI}),
    ("gpt-4.1", 2.0, 8.0, {"read": 0.25, **_OPENAI}),
    ("gpt-4.1-mini", 0.4, 1.6, {"read": 0.25, **_OPENAI}),
    ("gpt-4.1-nano", 0.1, 0.4, {"read": 0.25, **_OPENAI}),
    ("gpt-4o", 2.5, 10.0, {"read": 0.5, **_OPENAI}),
    ("gpt-4o-mini", 0.15, 0.6, {"read": 0.5, **_OPENAI}),
    ("o3", 2.0, 8.0, {"read": 0.25, **_OPENAI}),
    ("o4-mini", 1.1, 4.4, {"read": 0.25, **_OPENAI}),
)
_FIELDS = tuple(f.name for f in fields(Price))


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number; got {value!r}")
    if value < 0:
        raise ConfigError(f"{where} must be 0 or more; got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model-name prefix; :meth:`lookup` picks the longest prefix of a name."""

    entries: Mapping[str, Price]

    @classmethod
    def default(cls) -> PriceTable:
        """The published list prices (:data:`PRICES_AS_OF`)."""
        return cls(
            {prefix: Price(input=inp, output=out, **extra) for prefix, inp, out, extra in _DEFAULTS}
        )

    def lookup(self, model: str | None) -> Price | None:
        """The price of ``model`` (a provider prefix such as ``anthropic:`` is dropped);
        ``None`` when no entry is a prefix of its name."""
        if not model:
            return None
        name = model.split(":", 1)[1] if ":" in model else model
        best = max((p for p in self.entries if name.startswith(p)), key=len, default=None)
        return None if best is None else self.entries[best]

    def merged(self, overrides: Mapping[str, Any], where: str = "--prices") -> PriceTable:
        """This table with ``overrides`` (``{prefix: {input, output, read, write_5m,
        write_1h}}``) on top: a field left out keeps the entry's (or, for a new prefix, the
        default's; ``input`` and ``output`` are then required).

        Raises:
            ConfigError: an entry that is not a table of known, non-negative numbers.
        """
        entries = dict(self.entries)
        for prefix, given in overrides.items():
            at = f"{where}: {prefix!r}"
            if not isinstance(given, Mapping):
                raise ConfigError(f"{at} must be a table of prices, not {type(given).__name__}")
            unknown = sorted(set(given) - set(_FIELDS))
            if unknown:
                raise ConfigError(
                    f"{at}: unknown field {unknown[0]!r}; the fields are {', '.join(_FIELDS)}"
                )
            values = {k: _number(v, f"{at}.{k}") for k, v in given.items()}
            base = entries.get(prefix)
            if base is None:
                missing = [k for k in ("input", "output") if k not in values]
                if missing:
                    raise ConfigError(f"{at}: a new model needs {' and '.join(missing)}")
                entries[prefix] = Price(**values)
            else:
                entries[prefix] = replace(base, **values)
        return PriceTable(entries)

    def load(self, path: str | Path) -> PriceTable:
        """This table with a TOML or JSON file's entries on top (see :meth:`merged`).

        Raises:
            ConfigError: the file cannot be read or parsed, or an entry is wrong.
        """
        where = f"--prices {path}"
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc})") from None
        try:
            data: Any = json.loads(text) if str(path).endswith(".json") else tomllib.loads(text)
        except ValueError as exc:
            kind = "JSON" if str(path).endswith(".json") else "TOML"
            raise ConfigError(f"{where}: not valid {kind} ({exc})") from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: must hold a table of models")
        return self.merged(data, where)
