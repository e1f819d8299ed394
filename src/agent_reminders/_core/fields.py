"""Strict option parsing: the one place where the RMD-001 / RMD-005 rules live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from .errors import Diagnostic, ReminderError
from .records import PRODUCER_FIELDS, REMINDER_FIELDS, Authority, Propagate, RoleHint

__all__ = [
    "OPTION_KEYS",
    "ParsedOptions",
    "Selector",
    "lint_reminder_options",
    "parse_reminder_options",
    "parse_selector",
]

# The keys a producer may set: every reminder field except those the producer owns.
OPTION_KEYS: frozenset[str] = frozenset(REMINDER_FIELDS) - PRODUCER_FIELDS
SELECTOR_KEYS: frozenset[str] = frozenset({"id", "tag", "dedupe_key"})

_E = TypeVar("_E", bound=StrEnum)


@dataclass(frozen=True, kw_only=True, slots=True)
class ParsedOptions:
    """Validated reminder options; ``None`` means "not given, use the default"."""

    body: str
    tags: tuple[str, ...] = ()
    dedupe_key: str | None = None
    ttl_turns: int | None = None
    preserve_on_compact: bool | None = None
    propagate: Propagate | None = None
    role_hint: RoleHint | None = None
    authority: Authority | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Selector:
    """A validated ``clear_reminders`` selector; every given field must match."""

    id: str | None = None
    tag: str | None = None
    dedupe_key: str | None = None


def _require_mapping(options: object, what: str) -> Mapping[str, Any]:
    if options is None:
        raise ReminderError("RMD-001", f"{what} are missing: pass a mapping")
    if not isinstance(options, Mapping):
        raise ReminderError("RMD-001", f"{what} must be a mapping, not {type(options).__name__}")
    return options


def _check_unknown(options: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(str(k) for k in options if k not in allowed)
    if unknown:
        raise ReminderError("RMD-001", f"unknown option(s): {', '.join(unknown)}")


def _parse_tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise ReminderError(
            "RMD-001", f"tags must be a list of strings; got {type(value).__name__}"
        )
    seen: dict[str, None] = {}
    for index, tag in enumerate(value):
        if not isinstance(tag, str) or not tag.strip():
            raise ReminderError("RMD-001", f"tags[{index}] must be a non-blank string; got {tag!r}")
        seen.setdefault(tag.strip(), None)
    return tuple(seen)


def _parse_enum(enum: type[_E], value: object, key: str, code: str) -> _E | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return enum(value)
        except ValueError:
            pass
    allowed = ", ".join(repr(m.value) for m in enum)
    raise ReminderError(code, f"{key} must be one of {allowed}; got {value!r}")


def parse_reminder_options(options: object) -> ParsedOptions:
    """Validate strict reminder options in the specified order; the first failure raises.

    Raises:
        ReminderError: ``RMD-001`` (``RMD-005`` for ``propagate``) naming the bad key.
    """
    opts = _require_mapping(options, "reminder options")
    _check_unknown(opts, OPTION_KEYS)
    tags = _parse_tags(opts.get("tags"))

    dedupe_key = opts.get("dedupe_key")
    if dedupe_key is not None:
        if not isinstance(dedupe_key, str):
            raise ReminderError("RMD-001", f"dedupe_key must be a string; got {dedupe_key!r}")
        dedupe_key = dedupe_key.strip() or None

    ttl = opts.get("ttl_turns")
    if ttl is not None and (type(ttl) is not int or ttl <= 0):
        raise ReminderError("RMD-001", f"ttl_turns must be an int > 0 or None; got {ttl!r}")

    preserve = opts.get("preserve_on_compact")
    if preserve is not None and type(preserve) is not bool:
        raise ReminderError(
            "RMD-001", f"preserve_on_compact must be a bool or None; got {preserve!r}"
        )

    propagate = _parse_enum(Propagate, opts.get("propagate"), "propagate", "RMD-005")
    role_hint = _parse_enum(RoleHint, opts.get("role_hint"), "role_hint", "RMD-001")
    authority = _parse_enum(Authority, opts.get("authority"), "authority", "RMD-001")

    body = opts.get("body")
    if not isinstance(body, str) or not body.strip():
        raise ReminderError(
            "RMD-001", f"body must be a string with non-blank content; got {body!r}"
        )
    return ParsedOptions(
        body=body,
        tags=tags,
        dedupe_key=dedupe_key,
        ttl_turns=ttl,
        preserve_on_compact=preserve,
        propagate=propagate,
        role_hint=role_hint,
        authority=authority,
    )


def parse_selector(selector: object) -> Selector:
    """Validate a ``clear_reminders`` selector (keys ``id``, ``tag``, ``dedupe_key``)."""
    sel = _require_mapping(selector, "selector")
    _check_unknown(sel, SELECTOR_KEYS)
    values: dict[str, str | None] = {}
    for key in ("id", "tag", "dedupe_key"):
        value = sel.get(key)
        if value is not None and not isinstance(value, str):
            raise ReminderError("RMD-001", f"selector {key} must be a string; got {value!r}")
        values[key] = value.strip() if value is not None and value.strip() else None
    if not any(values.values()):
        raise ReminderError(
            "RMD-001", "selector needs at least one non-blank key of: dedupe_key, id, tag"
        )
    return Selector(id=values["id"], tag=values["tag"], dedupe_key=values["dedupe_key"])


def lint_reminder_options(options: Mapping[str, Any]) -> list[Diagnostic]:
    """Report lifecycle smells in reminder options without raising.

    ``RMD-004`` (warning): ``preserve_on_compact`` is literally ``False`` and ``ttl_turns`` is
    absent or ``None`` — the reminder lives forever during normal turns and vanishes at the next
    compaction.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping, not {type(options).__name__}")
    found: list[Diagnostic] = []
    if options.get("preserve_on_compact") is False and options.get("ttl_turns") is None:
        found.append(
            Diagnostic(
                code="RMD-004",
                severity="warning",
                message=(
                    "preserve_on_compact=False without ttl_turns: the reminder is re-sent "
                    "until cleared and vanishes at the next compaction; give it a ttl_turns "
                    "or set preserve_on_compact=True"
                ),
            )
        )
    return found
