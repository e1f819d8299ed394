"""The one table of reminder fields, and the profiles that read it.

Every field of :class:`~agent_reminders.Reminder` has one row in :data:`FIELDS`: its name, its
camelCase wire name (in the bridge's pending rows), its key in lifecycle events, its default
and its rule — the check that turns an accepted value into the stored one or raises naming the
field. The closed value sets of the enum fields are defined here too. The readers of the table:

- the record: ``Reminder.__post_init__`` (:func:`check_record`), ``to_dict`` (:func:`record_dict`)
  and ``from_dict`` (``RMD-001``, ``RMD-005`` for ``propagate``);
- strict producer options: what a provider or hook returns, an unknown key or a bad value
  refused (:func:`parse_reminder_options`);
- bridge payloads with a caller's grant: what ``session/remind`` pushes, with size limits and
  an authority no higher than the grant (:func:`validate_reminder_payload`,
  ``docs/protocol.md``);
- lenient stored events: foreign events read without raising, a bad value taking its default
  (:func:`lenient_values`, :func:`lenient_dict`);
- the camelCase pending row that ``session/pending_injections`` lists
  (:func:`pending_row_fields`) and lifecycle event payloads (:func:`event_fields`).

A profile decides the order of the checks and the code of a failure; the table decides what a
field accepts. In the input profiles (options, payloads) ``None`` means "not given".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from ._compiled import compile_function
from .errors import ReminderError, did_you_mean
from .frozen import fast_init
from .ids import new_id

__all__ = [
    "AUTHORITY_RANK",
    "DEFAULT_MAX_BODY_BYTES",
    "FIELDS",
    "FIRED_EVENT_FIELDS",
    "INHERITED_EVENT_FIELDS",
    "INJECTED_EVENT_FIELDS",
    "MAX_ID_BYTES",
    "MAX_KEY_BYTES",
    "MAX_META_BYTES",
    "MAX_TAGS",
    "MAX_TAG_BYTES",
    "OPTION_KEYS",
    "PAYLOAD_KEYS",
    "PRODUCER_FIELDS",
    "RECEIPT_FIELDS",
    "REMINDER_FIELDS",
    "Authority",
    "Field",
    "ParsedOptions",
    "Propagate",
    "RoleHint",
    "Selector",
    "Source",
    "check_declaration",
    "check_field",
    "check_id",
    "check_meta",
    "check_record",
    "check_unknown",
    "coerce_enum",
    "event_fields",
    "lenient_dict",
    "lenient_values",
    "lone_surrogate",
    "option_defaults",
    "over_limit",
    "parse_reminder_options",
    "parse_selector",
    "pending_row_fields",
    "record_dict",
    "validate_reminder_payload",
]


# -- the closed value sets of the enum fields --------------------------------------------------


class Authority(StrEnum):
    """Precedence of a directive inside the envelope: contract > corrective > advisory."""

    CONTRACT = "contract"
    CORRECTIVE = "corrective"
    ADVISORY = "advisory"


# Lower rank = higher precedence; used for ordering, dedupe winners and grants.
AUTHORITY_RANK: dict[Authority, int] = {
    Authority.CONTRACT: 0,
    Authority.CORRECTIVE: 1,
    Authority.ADVISORY: 2,
}


class Propagate(StrEnum):
    """Whether sub-agents inherit a reminder (``all``, ``session`` or ``none``)."""

    ALL = "all"
    SESSION = "session"
    NONE = "none"


class RoleHint(StrEnum):
    """Decides the envelope's ``speaker``; never selects a wire role."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER_BLOCK = "user_block"
    EPHEMERAL_CACHE = "ephemeral_cache"


class Source(StrEnum):
    """Where a reminder came from (audit, propagation, authority grants)."""

    STDLIB_PROVIDER = "stdlib_provider"
    HOOK = "hook"
    BRIDGE = "bridge"
    IN_PIPELINE = "in_pipeline"
    INHERITED = "inherited"


_E = TypeVar("_E", bound=StrEnum)


# Each enum's members by wire string: a dict lookup instead of the enum's own (slow) call.
_BY_VALUE: dict[type[StrEnum], dict[str, StrEnum]] = {}


def coerce_enum(enum: type[_E], value: object, name: str, code: str = "RMD-001") -> _E:
    """The one enum coercion: a member or its wire string, else ``code`` naming the allowed
    values (``"propagate must be one of 'all', 'session', 'none'; got 'x'"``)."""
    if type(value) is enum:
        return value
    if isinstance(value, str):
        members = _BY_VALUE.get(enum)
        if members is None:
            members = _BY_VALUE[enum] = {m.value: m for m in enum}
        member = members.get(value)
        if member is not None:
            return member  # type: ignore[return-value]
    allowed = ", ".join(repr(m.value) for m in enum)
    raise ReminderError(code, f"{name} must be one of {allowed}; got {value!r}")


# -- text ---------------------------------------------------------------------------------------


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (it cannot be encoded as UTF-8), or
    ``None``. O(1) for ASCII text."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _text(value: str, name: str, code: str) -> str:
    at = lone_surrogate(value)
    if at is not None:
        raise ReminderError(
            code,
            f"{name} contains a lone surrogate {value[at]!r} at index {at}; "
            "it must be valid Unicode text (encodable as UTF-8)",
        )
    return value


# -- the rules: (value, name, code) -> the stored value, or ReminderError(code) naming the field


Rule = Callable[[Any, str, str], Any]


# Rules run in every Reminder construction: ASCII text (the usual case) skips the encoding.


def _id_rule(value: Any, name: str, code: str) -> str:
    if isinstance(value, str) and value.strip():
        return value if value.isascii() else _text(value, name, code)
    raise ReminderError(code, f"{name} must be a non-blank string; got {_short(value)}")


def _body_rule(value: Any, name: str, code: str) -> str:
    # kept as given (not stripped): the body is what the model reads
    if isinstance(value, str) and value.strip():
        return value if value.isascii() else _text(value, name, code)
    raise ReminderError(
        code, f"{name} must be a string with non-blank content; got {_short(value)}"
    )


def _tags_rule(value: Any, name: str, code: str) -> tuple[str, ...]:
    if type(value) is tuple:
        # Fast path (C-level calls only) for tags that are already stored form: stripped,
        # non-blank, unique, ASCII. Anything else takes the loop below.
        try:
            if (
                tuple(map(str.strip, value)) == value
                and all(value)
                and len(set(value)) == len(value)
                and "".join(value).isascii()
            ):
                return value
        except TypeError:  # an entry that is not a string
            pass
    if not isinstance(value, list | tuple):
        raise ReminderError(
            code, f"{name} must be a list of non-blank strings; got {type(value).__name__}"
        )
    seen: dict[str, None] = {}  # a repeated key keeps its first position
    for index, tag in enumerate(value):
        if not isinstance(tag, str) or not (stripped := tag.strip()):
            raise ReminderError(
                code, f"{name}[{index}] must be a non-blank string; got {_short(tag)}"
            )
        if not stripped.isascii():
            _text(stripped, f"{name}[{index}]", code)
        seen[stripped] = None
    # stripped, first occurrence kept: every accepted value survives a JSON round trip
    tags = tuple(seen)
    return value if type(value) is tuple and tags == value else tags


def _key_rule(value: Any, name: str, code: str) -> str | None:
    if not isinstance(value, str):
        raise ReminderError(code, f"{name} must be a string or None; got {_short(value)}")
    key = value.strip()
    if not key:
        return None  # a blank key means "no key", not an error
    if not key.isascii():
        _text(key, name, code)
    return value if key == value else key


def _positive_int_rule(value: Any, name: str, code: str) -> int:
    if type(value) is int and value > 0:
        return value
    raise ReminderError(code, f"{name} must be an int > 0 or None; got {_short(value)}")


def _turn_rule(value: Any, name: str, code: str) -> int:
    if type(value) is int and value >= 0:
        return value
    raise ReminderError(code, f"{name} must be an int >= 0; got {_short(value)}")


def _bool_rule(value: Any, name: str, code: str) -> bool:
    if type(value) is bool:
        return value
    raise ReminderError(code, f"{name} must be a bool (true or false); got {_short(value)}")


def _optional_text_rule(value: Any, name: str, code: str) -> str:
    if isinstance(value, str):
        return value if value.isascii() else _text(value, name, code)
    raise ReminderError(code, f"{name} must be a string or None; got {_short(value)}")


def _enum_rule(enum: type[StrEnum]) -> Rule:
    def rule(value: Any, name: str, code: str) -> StrEnum:
        return value if type(value) is enum else coerce_enum(enum, value, name, code)

    return rule


# Lenient readings (of foreign stored events) that differ from "the rule, else the default".
def _lenient_body(value: object) -> str:
    return value if isinstance(value, str) else ""  # a blank body is kept; readers drop it


def _lenient_tags(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    kept = (t.strip() for t in value if isinstance(t, str) and t.strip())
    return tuple(dict.fromkeys(t for t in kept if lone_surrogate(t) is None))


# str.__str__ gives a StrEnum member's value as a plain str, without the enum's (slow)
# ``value`` descriptor.
_enum_wire: Callable[[StrEnum], str] = str.__str__


def _list_wire(value: tuple[str, ...]) -> list[str]:
    return list(value)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


_REQUIRED: Any = _Required()  # no default: the field must be given (or made by a factory)


@dataclass(frozen=True, slots=True)
class Field:
    """One reminder field: what it accepts, where it may be set and how it is spelled.

    Attributes:
        name: The snake_case name (attribute, ``to_dict`` key, option key).
        rule: ``rule(value, name, code)`` returns the stored value or raises ``code``.
        default: The default (a ``REQUIRED`` marker when required or made by ``factory``).
        factory: Makes the default (``id``: a new unique id).
        code: A code of the field's own in every profile (``propagate``: ``RMD-005``).
        omit_none: ``to_dict`` leaves the key out when the value is ``None``.
        option: A strict producer option (a provider or hook may set it).
        payload: A key of a reminder pushed over the bridge (``session/remind``).
        lenient: The lenient reading when it is not "the rule, else the default".
        wire: Turns the stored value into its JSON form (``None``: as is).
        exact: A value of exactly this type is valid as it is (enums, ``bool``).
        event: The key in lifecycle event payloads (``id`` is ``reminder_id``).
        row_when_set: In the bridge's pending rows only when set (the cadence fields: a row
            without them keeps the shape it always had).
        camel: The camelCase name in the bridge's pending rows, derived from ``name``.
    """

    name: str
    rule: Rule
    default: Any = _REQUIRED
    factory: Callable[[], Any] | None = None
    code: str | None = None
    omit_none: bool = False
    option: bool = True
    payload: bool = True
    lenient: Callable[[object], Any] | None = None
    wire: Callable[[Any], Any] | None = None
    exact: type | None = None
    event: str = ""
    row_when_set: bool = False
    camel: str = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        head, *rest = self.name.split("_")
        object.__setattr__(self, "camel", head + "".join(w.title() for w in rest))
        if not self.event:
            object.__setattr__(self, "event", self.name)

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and self.factory is None

    def default_value(self) -> Any:
        return self.factory() if self.factory is not None else self.default


FIELDS: tuple[Field, ...] = (
    Field("id", _id_rule, factory=new_id, option=False, event="reminder_id"),
    Field("body", _body_rule, lenient=_lenient_body),
    Field("tags", _tags_rule, default=(), lenient=_lenient_tags, wire=_list_wire),
    Field("dedupe_key", _key_rule, default=None, omit_none=True),
    Field("ttl_turns", _positive_int_rule, default=None, omit_none=True),
    # cadence (docs/core.md, "Cadence"): how often the reminder's key may fire in a session
    Field("first_after", _turn_rule, default=None, omit_none=True, row_when_set=True),
    Field("cooldown_turns", _positive_int_rule, default=None, omit_none=True, row_when_set=True),
    Field("max_fires", _positive_int_rule, default=None, omit_none=True, row_when_set=True),
    Field("preserve_on_compact", _bool_rule, default=False, exact=bool),
    Field(
        "propagate",
        _enum_rule(Propagate),
        default=Propagate.SESSION,
        code="RMD-005",
        wire=_enum_wire,
        exact=Propagate,
    ),
    Field(
        "role_hint",
        _enum_rule(RoleHint),
        default=RoleHint.SYSTEM,
        wire=_enum_wire,
        exact=RoleHint,
    ),
    Field(
        "authority",
        _enum_rule(Authority),
        default=Authority.CONTRACT,
        wire=_enum_wire,
        exact=Authority,
    ),
    Field(
        "source",
        _enum_rule(Source),
        default=Source.IN_PIPELINE,
        option=False,
        wire=_enum_wire,
        exact=Source,
    ),
    Field("fired_at_turn", _turn_rule, default=0, option=False),
    Field(
        "originating_agent_id",
        _optional_text_rule,
        default=None,
        omit_none=True,
        option=False,
        payload=False,
    ),
)
_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

# Every field of the record, in declaration order (the JSON payload's keys).
REMINDER_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS)
# Set by the producer, never by strict options (RMD-001 names them as unknown options).
PRODUCER_FIELDS: frozenset[str] = frozenset(f.name for f in FIELDS if not f.option)
# The keys a producer may set (a provider's or a hook's options).
OPTION_KEYS: frozenset[str] = frozenset(f.name for f in FIELDS if f.option)
# A pushed reminder may carry every field but the inheritance origin, plus host metadata.
PAYLOAD_KEYS: frozenset[str] = frozenset(f.name for f in FIELDS if f.payload) | {"_meta"}
_SELECTOR_ORDER: tuple[str, ...] = ("id", "tag", "dedupe_key")
SELECTOR_KEYS: frozenset[str] = frozenset(_SELECTOR_ORDER)
DEFAULT_MAX_BODY_BYTES = 16384
# Bounds on what a pushed item may carry besides its body, in UTF-8 bytes: short, so that what
# a session holds (pending items times these) is bounded by the limits, whatever a client
# sends. Ids cover reminder, message and session ids; the tag bound is per tag.
MAX_ID_BYTES = 256
MAX_KEY_BYTES = 256
MAX_TAG_BYTES = 64
MAX_TAGS = 32
MAX_META_BYTES = 4096

# The reminder fields each lifecycle record carries (injected, fired, inherited) and a tool
# call's receipt lists, in payload order.
INJECTED_EVENT_FIELDS: tuple[str, ...] = (
    "id",
    "tags",
    "dedupe_key",
    "source",
    "role_hint",
    "authority",
    "ttl_turns",
    "propagate",
    "originating_agent_id",
)
FIRED_EVENT_FIELDS: tuple[str, ...] = ("id", "authority", "tags", "source", "ttl_turns")
INHERITED_EVENT_FIELDS: tuple[str, ...] = ("id", "originating_agent_id", "propagate")
RECEIPT_FIELDS: tuple[str, ...] = INJECTED_EVENT_FIELDS[:7]


def check_declaration(names_and_defaults: Iterable[tuple[str, Any]]) -> None:
    """Fail at import when the ``Reminder`` declaration and the table disagree.

    Raises:
        TypeError: a field missing on either side, out of order, or with another default.
    """
    declared = [
        (name, _REQUIRED if default is dataclasses.MISSING else default)
        for name, default in names_and_defaults
    ]
    expected = [(f.name, f.default) for f in FIELDS]
    if declared != expected:
        raise TypeError(f"Reminder fields {declared} do not match the field table {expected}")


# -- the record profile (Reminder.__post_init__, to_dict) --------------------------------------

_WIRED: tuple[tuple[str, Callable[[Any], Any]], ...] = tuple(
    (f.name, f.wire) for f in FIELDS if f.wire is not None
)
_OMIT_NONE: tuple[str, ...] = tuple(f.name for f in FIELDS if f.omit_none)


def _check_record_reference(values: dict[str, Any]) -> None:
    """The plain version of the generated ``check_record``, which specifies it: for each field,
    in table order, a value identical to the field's default (a field with a factory, or a
    required one, has none) or of the field's exact type is kept as it is; any other value goes
    through the field's rule (code ``RMD-001`` unless the field has its own), and the checked
    value replaces it when it is another object."""
    for f in FIELDS:
        value = values[f.name]
        has_default = f.factory is None and not f.required
        if (has_default and value is f.default) or (f.exact is not None and type(value) is f.exact):
            continue
        checked = f.rule(value, f.name, f.code or "RMD-001")
        if checked is not value:
            values[f.name] = checked


def _compile_check_record() -> Callable[[dict[str, Any]], None]:
    """Build ``check_record`` from the table as straight-line code, the way ``dataclasses``
    builds ``__init__``: it runs in every ``Reminder`` construction, and the loop over the
    table, :func:`_check_record_reference` (the plain version), takes about twice as long
    (``bench/compiled.py``). For each field, in table order: a value identical to a
    non-factory default, or of the field's exact type, is valid as it is; any other value goes
    through the field's rule (code ``RMD-001`` unless the field has its own)."""
    env: dict[str, Any] = {}
    lines = ["def check_record(values):"]
    for index, f in enumerate(FIELDS):
        env[f"skip{index}"] = object() if f.factory is not None or f.required else f.default
        env[f"exact{index}"] = f.exact or type("_NoExactType", (), {})
        env[f"rule{index}"] = f.rule
        lines += [
            f"    value = values[{f.name!r}]",
            f"    if value is not skip{index} and type(value) is not exact{index}:",
            f"        checked = rule{index}(value, {f.name!r}, {f.code or 'RMD-001'!r})",
            "        if checked is not value:",
            f"            values[{f.name!r}] = checked",
        ]
    check: Callable[[dict[str, Any]], None] = compile_function(
        "\n".join(lines),
        env,
        "check_record",
        filename="<reminder field table>",
        reference=_check_record_reference,
    )
    check.__doc__ = """Validate and normalize a record's field values in place (a ``Reminder``'s
    ``__dict__``).

    Raises:
        ReminderError: ``RMD-001`` naming the field (``RMD-005`` for ``propagate``).
    """
    return check


check_record = _compile_check_record()


def check_field(name: str, value: object) -> Any:
    """One field's rule: ``value`` in its stored form, or ``ReminderError`` naming ``name``."""
    f = _BY_NAME[name]
    return f.rule(value, name, f.code or "RMD-001")


def record_dict(values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON payload of stored field values (exactly the fields, in table order, as a
    ``Reminder`` holds them): enum values as strings, tags as a list, and the ``omit_none``
    keys left out when ``None``."""
    out = dict(values)
    for name, wire in _WIRED:
        out[name] = wire(out[name])
    for name in _OMIT_NONE:
        if out[name] is None:
            del out[name]
    return out


def event_fields(reminder: object, names: Iterable[str]) -> dict[str, Any]:
    """The named fields of ``reminder`` in their JSON form, under their event keys.

    Example:
        >>> from agent_reminders import Reminder
        >>> event_fields(Reminder(id="r1", body="x"), ("id", "authority"))
        {'reminder_id': 'r1', 'authority': 'contract'}
    """
    key = names if isinstance(names, tuple) else tuple(names)
    plan = _EVENT_PLANS.get(key)
    if plan is None:
        plan = tuple((name, _BY_NAME[name].event, _BY_NAME[name].wire) for name in key)
        _EVENT_PLANS[key] = plan
    out: dict[str, Any] = {}
    for name, event, wire in plan:
        value = getattr(reminder, name)
        out[event] = value if value is None or wire is None else wire(value)
    return out


# Per tuple of field names (the few the library passes): (attribute, event key, wire).
_EVENT_PLANS: dict[tuple[str, ...], tuple[tuple[str, str, Callable[[Any], Any] | None], ...]] = {}


def check_unknown(
    mapping: Mapping[Any, Any], allowed: frozenset[str], code: str = "RMD-001", where: str = ""
) -> None:
    """Raise ``code`` with ``unknown option(s): a, b`` (sorted) for keys outside ``allowed``."""
    if mapping.keys() <= allowed:  # the usual case, at C speed
        return
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        error = ReminderError(code, f"unknown option(s): {', '.join(unknown)}{where}")
        # the message's wording is fixed; the guess is a note, shown under it in a traceback
        hint = did_you_mean(unknown[0], allowed) if len(unknown) == 1 else ""
        if hint:
            error.add_note(f"{unknown[0]!r}: {hint}")
        raise error


# -- strict producer options --------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ParsedOptions:
    """Validated reminder options; ``None`` means "not given, use the default"."""

    body: str
    tags: tuple[str, ...] = ()
    dedupe_key: str | None = None
    ttl_turns: int | None = None
    first_after: int | None = None
    cooldown_turns: int | None = None
    max_fires: int | None = None
    preserve_on_compact: bool | None = None
    propagate: Propagate | None = None
    role_hint: RoleHint | None = None
    authority: Authority | None = None

    def given(self) -> dict[str, Any]:
        """The options that were given (not ``None``), as ``Reminder`` keyword arguments."""
        return _given(self)


# Check order: the option fields in table order, the body last (the first failure wins).
_OPTION_ORDER: tuple[Field, ...] = tuple(
    [f for f in FIELDS if f.option and not f.required]
    + [f for f in FIELDS if f.option and f.required]
)


def _require_mapping(options: object, what: str) -> Mapping[str, Any]:
    if options is None:
        raise ReminderError("RMD-001", f"{what} are missing: pass a mapping")
    if type(options) is not dict and not isinstance(options, Mapping):
        raise ReminderError("RMD-001", f"{what} must be a mapping, not {type(options).__name__}")
    return options


_PARSED_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(ParsedOptions)}


def _parse_options_reference(opts: Mapping[str, Any]) -> ParsedOptions:
    """The plain version of the generated option parser, which specifies it: for each option in
    the order the checks run (the table's, the body last), a given value (not ``None``) goes
    through the field's rule (code ``RMD-001`` unless the field has its own), a missing one
    takes ``ParsedOptions``' default; the body, required, always goes through its rule."""
    values: dict[str, Any] = {}
    for f in _OPTION_ORDER:
        value = opts.get(f.name)
        if value is None and not f.required:
            values[f.name] = _PARSED_DEFAULTS[f.name]
        else:
            values[f.name] = f.rule(value, f.name, f.code or "RMD-001")
    return ParsedOptions(**values)


def _compile_parse_options() -> Callable[[Mapping[str, Any]], ParsedOptions]:
    """Build the body of ``parse_reminder_options`` from the table as straight-line code (as
    ``check_record`` is built): providers' results go through it after every event. For each
    option in check order, a given value (not ``None``) goes through the field's rule, a
    missing one takes ``ParsedOptions``' default; the body (required) always goes through its
    rule, last. :func:`_parse_options_reference` is the plain version."""
    defaults = _PARSED_DEFAULTS
    env: dict[str, Any] = {"ParsedOptions": ParsedOptions}
    lines = ["def parse(opts):"]
    for index, f in enumerate(_OPTION_ORDER):
        env[f"rule{index}"] = f.rule
        call = f"rule{index}(value, {f.name!r}, {f.code or 'RMD-001'!r})"
        if f.required:
            lines.append(f"    value = opts.get({f.name!r})")
            lines.append(f"    v{index} = {call}")
        else:
            env[f"default{index}"] = defaults[f.name]
            lines += [
                f"    value = opts.get({f.name!r})",
                f"    v{index} = default{index} if value is None else {call}",
            ]
    keywords = ", ".join(f"{f.name}=v{i}" for i, f in enumerate(_OPTION_ORDER))
    lines.append(f"    return ParsedOptions({keywords})")
    parse: Callable[[Mapping[str, Any]], ParsedOptions] = compile_function(
        "\n".join(lines),
        env,
        "parse",
        filename="<reminder option rules>",
        reference=_parse_options_reference,
    )
    return parse


_parse_options = _compile_parse_options()


def _given_reference(parsed: ParsedOptions) -> dict[str, Any]:
    """The plain version of the generated ``ParsedOptions.given``, which specifies it: each
    option that is not ``None``, in check order."""
    out: dict[str, Any] = {}
    for f in _OPTION_ORDER:
        value = getattr(parsed, f.name)
        if value is not None:
            out[f.name] = value
    return out


def _compile_given() -> Callable[[ParsedOptions], dict[str, Any]]:
    """``ParsedOptions.given`` as straight-line code: each option not ``None``, in check order
    (a reminder is made from it on every provider injection); :func:`_given_reference` is the
    plain version."""
    lines = ["def given(parsed):", "    out = {}"]
    for f in _OPTION_ORDER:
        lines += [
            f"    value = parsed.{f.name}",
            "    if value is not None:",
            f"        out[{f.name!r}] = value",
        ]
    lines.append("    return out")
    given: Callable[[ParsedOptions], dict[str, Any]] = compile_function(
        "\n".join(lines),
        {},
        "given",
        filename="<reminder options given>",
        reference=_given_reference,
    )
    return given


_given = _compile_given()


def parse_reminder_options(options: object) -> ParsedOptions:
    """Validate strict reminder options in docs/core.md's order; the first failure raises.

    Raises:
        ReminderError: ``RMD-001`` (``RMD-005`` for ``propagate``) naming the bad key.
    """
    opts = _require_mapping(options, "reminder options")
    check_unknown(opts, OPTION_KEYS)
    return _parse_options(opts)


def option_defaults() -> dict[str, Any]:
    """Every strict option with its default, in JSON form (the body left out); new lists."""
    return {k: list(v) if type(v) is list else v for k, v in _OPTION_DEFAULTS.items()}


_OPTION_DEFAULTS: dict[str, Any] = {
    f.name: f.default if f.wire is None else f.wire(f.default)
    for f in FIELDS
    if f.option and not f.required
}


# -- bridge payloads with a caller's grant (docs/protocol.md, session/remind) -------------------

_PAYLOAD_FIELDS: tuple[Field, ...] = tuple(f for f in FIELDS if f.payload)
_ROW_FIELDS: tuple[Field, ...] = tuple(f for f in _PAYLOAD_FIELDS if f.name != "id")


# The order of a pushed reminder's field checks, first failure wins (the checks of its keys
# come before): the one error a client sees for a payload with several bad fields.
_PAYLOAD_ORDER: tuple[str, ...] = (
    "ttl_turns",
    "first_after",
    "cooldown_turns",
    "max_fires",
    "fired_at_turn",
    "source",
    "propagate",
    "role_hint",
    "authority",
    "tags",
    "body",
    "dedupe_key",
    "preserve_on_compact",
    "id",
)


def _bad_source(value: object) -> ReminderError:
    return ReminderError(
        "RMD-002", f"source must be 'bridge' for pushed reminders; got {_short(value)}"
    )


def _above_grant(wanted: Authority, grant: Authority) -> ReminderError:
    return ReminderError(
        "RMD-009", f"authority {wanted.value!r} is above this source's grant {grant.value!r}"
    )


def _utf8_size(text: str) -> int:
    # the rules refuse lone surrogates before a size is taken; surrogatepass only keeps this
    # from raising when called on its own
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def over_limit(name: str, size: int, limit: int) -> ReminderError:
    """The one refusal of a value over its size limit (``RMD-002``, bytes named)."""
    return ReminderError("RMD-002", f"{name} is {size} bytes; the limit is {limit}")


def _check_tags(tags: tuple[str, ...]) -> None:
    if len(tags) > MAX_TAGS:
        raise ReminderError("RMD-002", f"tags has {len(tags)} entries; the limit is {MAX_TAGS}")
    for index, tag in enumerate(tags):
        if (size := _utf8_size(tag)) > MAX_TAG_BYTES:
            raise over_limit(f"tags[{index}]", size, MAX_TAG_BYTES)


# The size bound checked right after each field's rule (the body's is the caller's).
_SIZE_LIMITS: dict[str, int] = {"dedupe_key": MAX_KEY_BYTES, "id": MAX_ID_BYTES}


def check_id(value: object, name: str = "id", code: str = "RMD-002") -> str:
    """An id given by a client (a reminder's, a message's, a session's): a non-blank string of
    valid Unicode, at most ``MAX_ID_BYTES`` bytes.

    Raises:
        ReminderError: ``code`` naming ``name`` (``RMD-002`` for the size).

    Example:
        >>> check_id("x" * 300, "sessionId")
        Traceback (most recent call last):
        ...
        agent_reminders.ReminderError: RMD-002: sessionId is 300 bytes; the limit...
    """
    checked: str = _id_rule(value, name, code)
    size = _utf8_size(checked)
    if size > MAX_ID_BYTES:
        raise over_limit(name, size, MAX_ID_BYTES)
    return checked


def check_meta(meta: object, name: str = "_meta") -> dict[str, Any] | None:
    """A pushed item's host metadata: ``None``, or an object that JSON can hold (no lone
    surrogate, no NaN or infinity) of at most ``MAX_META_BYTES`` bytes as compact JSON;
    returns a copy.

    Raises:
        ReminderError: ``RMD-002`` naming what is wrong.
    """
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise ReminderError("RMD-002", f"{name} must be an object; got {type(meta).__name__}")
    try:
        text = _META_ENCODER.encode(meta)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ReminderError(
            "RMD-002", f"{name} contains a lone surrogate; it must be valid Unicode text"
        ) from None
    except ValueError:  # allow_nan=False (a circular reference is a ValueError too)
        raise ReminderError(
            "RMD-002", f"{name} holds NaN, an infinity or a cycle, which JSON cannot carry"
        ) from None
    except (TypeError, RecursionError) as exc:
        raise ReminderError("RMD-002", f"{name} holds a value JSON cannot carry: {exc}") from None
    if size > MAX_META_BYTES:
        raise over_limit(name, size, MAX_META_BYTES)
    return dict(meta)


_META_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _payload_fields_reference(
    payload: Mapping[str, Any], grant: Authority, max_body_bytes: int
) -> dict[str, Any]:
    """The plain version of the generated payload checks, which specifies them: in
    ``_PAYLOAD_ORDER``, first failure wins, a given value (not ``None``) goes through its
    field's rule (code ``RMD-002`` unless the field has its own) and a missing one takes its
    default (``authority``: the grant; ``id``: ``None``); ``source`` may only be ``bridge``,
    ``authority`` may not rise above the grant, the body must fit ``max_body_bytes``, the tags,
    the dedupe key and the id their limits. The result has every payload field in table
    order, in JSON form (``None`` stays ``None``)."""
    checked: dict[str, Any] = {}
    for name in _PAYLOAD_ORDER:
        value: Any = payload.get(name)
        if name == "source":
            if value is not None and value != Source.BRIDGE:
                raise _bad_source(value)
            continue
        f = _BY_NAME[name]
        if value is not None or f.required:
            value = f.rule(value, name, f.code or "RMD-002")
        elif name == "authority":
            value = grant
        else:
            value = None if f.factory is not None else f.default
        if name == "authority" and AUTHORITY_RANK[value] < AUTHORITY_RANK[grant]:
            raise _above_grant(value, grant)
        if name == "body" and (size := _utf8_size(value)) > max_body_bytes:
            raise over_limit(name, size, max_body_bytes)
        if name == "tags":
            _check_tags(value)
        limit = _SIZE_LIMITS.get(name)
        if limit is not None and value is not None and (size := _utf8_size(value)) > limit:
            raise over_limit(name, size, limit)
        checked[name] = value
    out: dict[str, Any] = {}
    for f in _PAYLOAD_FIELDS:
        value = "bridge" if f.name == "source" else checked[f.name]
        out[f.name] = value if f.wire is None or value is None else f.wire(value)
    return out


def _compile_payload_fields() -> Callable[[Mapping[str, Any], Authority, int], dict[str, Any]]:
    """Build the field checks of :func:`validate_reminder_payload` from the table as
    straight-line code (as ``check_record`` is built; every ``session/remind`` runs it). In
    ``_PAYLOAD_ORDER``, a given value (not ``None``) goes through its field's rule (code
    ``RMD-002`` unless the field has its own), a missing one takes its default (``authority``:
    the grant; ``id``: ``None``, the caller makes one); ``source`` may only be ``bridge``,
    ``authority`` may not rise above the grant, the body (required) must fit the limit. The
    result has every payload field in table order, in JSON form.
    :func:`_payload_fields_reference` is the plain version."""
    env: dict[str, Any] = {
        "RANK": AUTHORITY_RANK,
        "BRIDGE": Source.BRIDGE,
        "bad_source": _bad_source,
        "above_grant": _above_grant,
        "check_tags": _check_tags,
        "utf8_size": _utf8_size,
        "over_limit": over_limit,
    }
    lines = ["def payload_fields(payload, grant, max_body_bytes):"]
    for name in _PAYLOAD_ORDER:
        if name == "source":
            lines += [
                "    value = payload.get('source')",
                "    if value is not None and value != BRIDGE:",
                "        raise bad_source(value)",
            ]
            continue
        f = _BY_NAME[name]
        env[f"rule_{name}"] = f.rule
        call = f"rule_{name}(value, {name!r}, {f.code or 'RMD-002'!r})"
        lines.append(f"    value = payload.get({name!r})")
        if f.required:
            lines.append(f"    v_{name} = {call}")
        else:
            default = "grant" if name == "authority" else f"default_{name}"
            env[f"default_{name}"] = None if f.factory is not None else f.default
            lines.append(f"    v_{name} = {default} if value is None else {call}")
        if name == "authority":
            lines += [
                "    if RANK[v_authority] < RANK[grant]:",
                "        raise above_grant(v_authority, grant)",
            ]
        elif name == "body":
            lines += [
                "    size = utf8_size(v_body)",
                "    if size > max_body_bytes:",
                "        raise over_limit('body', size, max_body_bytes)",
            ]
        elif name == "tags":
            lines.append("    check_tags(v_tags)")
        elif name in _SIZE_LIMITS:
            lines += [
                f"    if v_{name} is not None and utf8_size(v_{name}) > {_SIZE_LIMITS[name]}:",
                f"        raise over_limit({name!r}, utf8_size(v_{name}), {_SIZE_LIMITS[name]})",
            ]
    items = []
    for f in _PAYLOAD_FIELDS:
        if f.name == "source":
            items.append("'source': 'bridge'")
            continue
        value = f"v_{f.name}"
        if f.wire is not None:
            env[f"wire_{f.name}"] = f.wire
            value = f"wire_{f.name}({value})"
            if not f.required and (f.factory is not None or f.default is None):
                value = f"None if v_{f.name} is None else {value}"
        items.append(f"{f.name!r}: {value}")
    lines.append(f"    return {{{', '.join(items)}}}")
    compiled: Callable[[Mapping[str, Any], Authority, int], dict[str, Any]] = compile_function(
        "\n".join(lines),
        env,
        "payload_fields",
        filename="<reminder payload rules>",
        reference=_payload_fields_reference,
    )
    return compiled


_payload_fields = _compile_payload_fields()


def validate_reminder_payload(
    payload: object,
    *,
    grant: Authority = Authority.CONTRACT,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> dict[str, Any]:
    """Validate a pushed reminder (first failure wins) and return its fields.

    The result has every payload field (snake_case, JSON form) with defaults filled in;
    ``source`` is always ``bridge``; a missing ``authority`` takes ``grant``; ``id`` is kept
    when given (else ``None``); ``_meta`` is a copy or ``None``.

    Raises:
        ReminderError: ``RMD-002`` (shape), ``RMD-001`` (unknown keys), ``RMD-005``
            (``propagate``), ``RMD-009`` (authority above ``grant``).
    """
    if type(payload) is not dict and not isinstance(payload, Mapping):
        raise ReminderError(
            "RMD-002", f"a reminder must be an object; got {type(payload).__name__}"
        )
    grant = coerce_enum(Authority, grant, "grant")
    if "content" in payload:
        raise ReminderError("RMD-002", "reminders take 'body', not a user message's 'content'")
    check_unknown(payload, PAYLOAD_KEYS)
    meta = check_meta(payload.get("_meta"))
    out = _payload_fields(payload, grant, max_body_bytes)
    out["_meta"] = meta
    return out


def pending_row_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The reminder fields of a bridge pending row, camelCase, from a validated payload."""
    pairs = ((f, payload.get(f.name)) for f in _ROW_FIELDS)
    return {
        f.camel: list(v) if isinstance(v, list) else v
        for f, v in pairs
        if not (f.row_when_set and v is None)
    }


# -- lenient stored events ---------------------------------------------------------------------


def lenient_values(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of a reminder-like mapping, never raising: an invalid value takes the
    default (a missing ``id`` a new one), ``tags`` keep their valid entries, a non-string
    ``body`` becomes ``""`` (a blank body is kept; readers drop such reminders)."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        value = payload.get(f.name)
        if f.lenient is not None:
            out[f.name] = f.lenient(value)
            continue
        if value is not None:
            try:
                out[f.name] = f.rule(value, f.name, "RMD-001")
                continue
            except ReminderError:
                pass
        out[f.name] = f.default_value()
    return out


def lenient_dict(payload: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`lenient_values` in ``Reminder.to_dict()`` shape."""
    return record_dict(lenient_values(payload))


# -- clear_reminders selectors ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Selector:
    """A validated ``clear_reminders`` selector; every given field must match."""

    id: str | None = None
    tag: str | None = None
    dedupe_key: str | None = None


def parse_selector(selector: object) -> Selector:
    """Validate a ``clear_reminders`` selector (keys ``id``, ``tag``, ``dedupe_key``)."""
    sel = _require_mapping(selector, "selector")
    check_unknown(sel, SELECTOR_KEYS)
    values: dict[str, str | None] = {}
    for key in _SELECTOR_ORDER:
        value = sel.get(key)
        if value is not None and not isinstance(value, str):
            raise ReminderError("RMD-001", f"selector {key} must be a string; got {value!r}")
        values[key] = value.strip() if value is not None and value.strip() else None
    if not any(values.values()):
        raise ReminderError(
            "RMD-001", "selector needs at least one non-blank key of: dedupe_key, id, tag"
        )
    return Selector(**values)
