"""Every function the library generates from source agrees with its plain reference version:
on valid and invalid inputs, the same result, or the same exception with the same message.

The generated functions are the ``__init__`` of each ``fast_init`` record and the field checks of
the reminder table (``check_record``, the option parser, ``ParsedOptions.given``, the payload
checks). All of them are compiled in one place, ``_core/_compiled.py``, which keeps each beside
its reference; this suite runs every pair it holds.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_reminders
from agent_reminders import Authority, Propagate, ReminderError, RoleHint, Source

# The one suite that reads private modules, on purpose: what it tests is the generated code
# and its reference versions themselves, which no public name reaches (the exemption is
# named in tests/core/test_layout.py).
from agent_reminders._core import _compiled, fields

GENERATED: dict[str, Any] = _compiled.GENERATED
Generated: Any = _compiled.Generated
generated: Callable[..., Any] = _compiled.generated
FIELDS: tuple[Any, ...] = fields.FIELDS
OPTION_KEYS: frozenset[str] = fields.OPTION_KEYS
PAYLOAD_KEYS: frozenset[str] = fields.PAYLOAD_KEYS
ParsedOptions: Any = fields.ParsedOptions

PACKAGE = Path(agent_reminders.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _calls_of(path: Path, names: set[str]) -> list[str]:
    """The names of ``names`` that ``path`` calls as plain builtins (``exec(...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]


# Every module that generates a function: it applies fast_init or calls compile_function.
GENERATING = sorted(
    _module_name(path)
    for path in PACKAGE.rglob("*.py")
    if path.name != "_compiled.py"
    and ("@fast_init" in (text := path.read_text(encoding="utf-8")) or "compile_function(" in text)
)
for _name in GENERATING:
    importlib.import_module(_name)

# Every pair the library holds (a test may add its own records later: taken now).
PAIRS: list[Generated] = [
    entry
    for entry in GENERATED.values()
    if entry.filename.startswith("<reminder ")
    or str(entry.function.__module__).startswith("agent_reminders.")
]
RECORDS = [e for e in PAIRS if e.filename.startswith("<fast_init ")]
VALIDATORS = {e.filename: e for e in PAIRS if not e.filename.startswith("<fast_init ")}


def test_one_place_compiles() -> None:
    """No module of the package but ``_compiled`` calls ``exec``, ``eval`` or ``compile``."""
    found = {
        str(path.relative_to(PACKAGE)): calls
        for path in PACKAGE.rglob("*.py")
        if path.name != "_compiled.py" and (calls := _calls_of(path, {"exec", "eval", "compile"}))
    }
    assert found == {}


def test_every_generated_function_has_its_pair_and_its_source() -> None:
    assert {"EventRecord", "ParsedOptions", "ProviderContext", "FireResult"} <= {
        e.function.__qualname__.removesuffix(".__init__") for e in RECORDS
    }
    assert set(VALIDATORS) == {
        "<reminder field table>",
        "<reminder option rules>",
        "<reminder options given>",
        "<reminder payload rules>",
    }
    for entry in PAIRS:
        assert generated(entry.function) is entry
        assert entry.reference is not entry.function
        assert entry.function.__code__.co_filename == entry.filename
        assert entry.source.startswith(f"def {entry.name}(")


def test_a_traceback_shows_the_generated_line() -> None:
    import traceback

    with pytest.raises(ReminderError) as caught:
        fields.check_record({**_valid_record(), "ttl_turns": -1})
    text = "".join(traceback.format_exception(caught.value))
    assert 'File "<reminder field table>"' in text
    assert "rule4(value, 'ttl_turns', 'RMD-001')" in text


# -- values: valid ones per field, and anything else ---------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "ok \udfff"])
WORDS = st.sampled_from(
    [
        "",
        " ",
        "x",
        " x ",
        "run tests",
        "Ünï ✓",
        *(m.value for enum in (Authority, Propagate, RoleHint, Source) for m in enum),
        "god",
    ]
)
TEXT = st.one_of(WORDS, st.text(max_size=6), SURROGATES)
LONG = st.sampled_from(["k" * 257, "é" * 129, "t" * 65, "b" * 40])
MEMBERS = st.sampled_from([m for enum in (Authority, Propagate, RoleHint, Source) for m in enum])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.just(1.5), TEXT, LONG, MEMBERS)
MANY_TAGS = st.integers(30, 34).map(lambda n: [f"t{i}" for i in range(n)])
ANY = st.one_of(
    SCALARS,
    st.lists(st.one_of(TEXT, st.integers(0, 1)), max_size=4),
    st.lists(TEXT, max_size=4).map(tuple),
    MANY_TAGS,
    st.dictionaries(st.just("a"), st.integers(), max_size=1),
)
TAGS = st.lists(st.one_of(WORDS, st.sampled_from(["t", " t", "t ", "x"])), max_size=4)
VALID: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from(["r1", " r2 ", "Ünï"]),
    "body": st.sampled_from(["Run tests", " run tests\n", "Ünï ✓"]),
    "tags": st.one_of(TAGS, TAGS.map(tuple), st.just(())),
    "dedupe_key": st.sampled_from([None, "k", " k ", " "]),
    "ttl_turns": st.one_of(st.none(), st.integers(1, 3)),
    "first_after": st.one_of(st.none(), st.integers(0, 3)),
    "cooldown_turns": st.one_of(st.none(), st.integers(1, 3)),
    "max_fires": st.one_of(st.none(), st.integers(1, 3)),
    "preserve_on_compact": st.booleans(),
    "propagate": st.sampled_from([*Propagate, *(m.value for m in Propagate)]),
    "role_hint": st.sampled_from([*RoleHint, *(m.value for m in RoleHint)]),
    "authority": st.sampled_from([*Authority, *(m.value for m in Authority)]),
    "source": st.sampled_from([*Source, *(m.value for m in Source)]),
    "fired_at_turn": st.integers(0, 3),
    "originating_agent_id": st.sampled_from([None, "agent-1", ""]),
}


def _valid_record() -> dict[str, Any]:
    return {f.name: f.default_value() for f in FIELDS} | {"body": "b"}


@st.composite
def _mostly_valid(
    draw: st.DrawFn, names: list[str], keep_out: bool, valid: dict[str, Any] = VALID
) -> dict[str, Any]:
    """A mapping of ``names``: most values valid for their field, a few anything at all; with
    ``keep_out`` some names are left out (not given; the body only when it is a bad one)."""
    bad = draw(st.sets(st.sampled_from(names), max_size=2))
    out: dict[str, Any] = {}
    for name in names:
        if keep_out and (name != "body" or name in bad) and draw(st.booleans()):
            continue
        out[name] = draw(ANY if name in bad else valid[name])
    return out


def _outcome(function: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    try:
        return ("returned", function(*args))
    except Exception as exc:  # the same exception, with the same message, is the claim
        return ("raised", type(exc), str(exc), exc.args)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types, all the way down (``1 == True``, ``'a' == StrEnum.A``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def _agree(entry: Generated, *args: Any) -> tuple[Any, ...]:
    got, want = _outcome(entry.function, *args), _outcome(entry.reference, *args)
    assert _same(got, want), (got, want)
    return got


# -- the validators of the field table --------------------------------------------------------

NAMES = [f.name for f in FIELDS]
RECORD_RUNS = settings(max_examples=300, deadline=None)


@RECORD_RUNS
@given(_mostly_valid(NAMES, keep_out=False))
def test_check_record(values: dict[str, Any]) -> None:
    entry = VALIDATORS["<reminder field table>"]
    # it checks in place: both get their own copy, and both copies must end the same
    mine, theirs = dict(values), dict(values)
    got = _outcome(entry.function, mine)
    want = _outcome(entry.reference, theirs)
    assert _same(got, want), (got, want)
    assert _same(mine, theirs)


@RECORD_RUNS
@given(_mostly_valid(NAMES, keep_out=False))
def test_check_record_keeps_the_defaults_it_skips(values: dict[str, Any]) -> None:
    """Values that are the defaults themselves, or members of an exact type, are kept."""
    values.update({f.name: f.default for f in FIELDS if not f.required and f.factory is None})
    _agree(VALIDATORS["<reminder field table>"], dict(values))


def test_check_record_without_a_field_fails_alike() -> None:
    values = _valid_record()
    del values["authority"]
    assert _agree(VALIDATORS["<reminder field table>"], values)[1] is KeyError


OPTIONS = sorted(OPTION_KEYS, key=NAMES.index)


@RECORD_RUNS
@given(_mostly_valid(OPTIONS, keep_out=True))
def test_option_parser(options: dict[str, Any]) -> None:
    _agree(VALIDATORS["<reminder option rules>"], options)


@RECORD_RUNS
@given(st.dictionaries(st.sampled_from(OPTIONS), ANY))
def test_option_parser_on_anything(options: dict[str, Any]) -> None:
    _agree(VALIDATORS["<reminder option rules>"], options)


@RECORD_RUNS
@given(st.fixed_dictionaries({}, optional=dict.fromkeys(OPTIONS, ANY)))
def test_options_given(values: dict[str, Any]) -> None:
    """``given`` reads whatever the record holds (it is made unchecked here)."""
    parsed = ParsedOptions(**{"body": "b", **values})
    _agree(VALIDATORS["<reminder options given>"], parsed)


PAYLOAD = sorted(PAYLOAD_KEYS - {"_meta"}, key=NAMES.index)
GRANTS = st.sampled_from(list(Authority))
# a pushed reminder's source may only be bridge
PAYLOAD_VALID = VALID | {"source": st.sampled_from([Source.BRIDGE, "bridge"])}
BODY_LIMITS = st.sampled_from([0, 12, 16384, 16384])


@RECORD_RUNS
@given(_mostly_valid(PAYLOAD, keep_out=True, valid=PAYLOAD_VALID), GRANTS, BODY_LIMITS)
def test_payload_checks(payload: dict[str, Any], grant: Authority, limit: int) -> None:
    _agree(VALIDATORS["<reminder payload rules>"], payload, grant, limit)


@RECORD_RUNS
@given(st.dictionaries(st.sampled_from(PAYLOAD), ANY), GRANTS, BODY_LIMITS)
def test_payload_checks_on_anything(payload: dict[str, Any], grant: Authority, limit: int) -> None:
    _agree(VALIDATORS["<reminder payload rules>"], payload, grant, limit)


# -- the __init__ of every fast_init record ---------------------------------------------------


def _record_class(entry: Generated) -> type:
    owner: Any = sys.modules[entry.function.__module__]
    for part in entry.function.__qualname__.removesuffix(".__init__").split("."):
        owner = getattr(owner, part)
    assert isinstance(owner, type)
    return owner


def _as_dataclasses_makes_it(cls: type) -> type:
    """The same fields through ``dataclasses`` alone: its ``__init__`` words argument errors."""
    spec: list[Any] = []
    for f in dataclasses.fields(cls):
        options: dict[str, Any] = {"kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            options["default_factory"] = f.default_factory
        spec.append((f.name, f.type, dataclasses.field(**options)))
    return dataclasses.make_dataclass(cls.__qualname__, spec, frozen=True, slots=True)


MISTAKES = ("none", "none", "drop a required one", "one too many", "unknown", "twice")


@st.composite
def _arguments(draw: st.DrawFn, cls: type) -> tuple[list[Any], dict[str, Any], str]:
    """Arguments for ``cls(...)``: each field given (positionally while it can be) or left to
    its default (the ``<factory>`` marker may be given too); then perhaps one mistake, named."""
    parameters = list(inspect.signature(cls).parameters.values())
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    for p in parameters:
        if p.default is not p.empty and draw(st.booleans()):
            positional = False  # a later one cannot go by position
            continue
        value = draw(st.one_of(ANY, st.just(p.default)) if p.default is not p.empty else ANY)
        if p.kind is p.POSITIONAL_OR_KEYWORD and positional and draw(st.booleans()):
            args.append(value)
        else:
            positional = False
            kwargs[p.name] = value
    mistake = draw(st.sampled_from(MISTAKES))
    required = [p.name for p in parameters if p.default is p.empty and p.name in kwargs]
    if mistake == "drop a required one" and required:
        del kwargs[draw(st.sampled_from(required))]
    elif mistake == "one too many":
        args += ["extra"] * (len(parameters) + 1 - len(args))
        kwargs.clear()
    elif mistake == "unknown":
        kwargs["nope"] = 1
    elif mistake == "twice" and args:
        kwargs[parameters[0].name] = "again"
    else:
        mistake = "none"
    return args, kwargs, mistake


def _make(init: Callable[..., None], cls: type, args: list[Any], kwargs: dict[str, Any]) -> Any:
    record: Any = object.__new__(cls)
    init(record, *args, **kwargs)
    return record


def _binding_error(init: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(TypeError) as caught:
        init(*args, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize("entry", RECORDS, ids=lambda e: e.function.__qualname__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_record_init(entry: Generated, data: st.DataObject) -> None:
    cls = _record_class(entry)
    args, kwargs, mistake = data.draw(_arguments(cls))
    if mistake != "none":
        # Argument binding fails in both: the reference binds with inspect (in its words); the
        # generated one fails in the interpreter's, as the __init__ dataclasses writes does.
        message = _binding_error(_make, entry.function, cls, args, kwargs)
        _binding_error(_make, entry.reference, cls, args, kwargs)
        assert message == _binding_error(_as_dataclasses_makes_it(cls), *args, **kwargs)
        return
    got = _make(entry.function, cls, args, kwargs)
    want = _make(entry.reference, cls, args, kwargs)
    parameters = inspect.signature(cls).parameters
    given_values = dict(zip(parameters, args, strict=False)) | kwargs
    for f in dataclasses.fields(cls):
        mine, theirs = getattr(got, f.name), getattr(want, f.name)
        marker = parameters[f.name].default
        value = given_values.get(f.name, marker)
        if f.default_factory is not dataclasses.MISSING and value is marker:
            assert _same(mine, theirs)  # each made its own with the factory
            assert mine is not theirs or not isinstance(mine, list | dict | set)
        else:
            assert mine is theirs is value
