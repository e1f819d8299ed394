"""The library's hot records (made with a faster ``__init__`` than ``dataclasses`` writes)
keep the generated signature, defaults, factories and immutability."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
from typing import Any

import pytest

from agent_reminders import EventRecord, FireResult, ModelRequest, ToolResult

PUBLIC = ("agent_reminders", "agent_reminders.providers", "agent_reminders.session")


def _fast_records() -> list[type]:
    found: dict[str, type] = {}
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if isinstance(obj, type) and dataclasses.is_dataclass(obj):
                code = getattr(obj.__init__, "__code__", None)
                if code is not None and code.co_filename.startswith("<fast_init"):
                    found[obj.__qualname__] = obj
    return list(found.values())


FAST = _fast_records()


def _as_dataclasses_makes_it(cls: type) -> type:
    """The same fields through ``dataclasses`` alone."""
    spec: list[Any] = []
    for f in dataclasses.fields(cls):
        options: dict[str, Any] = {"kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            options["default_factory"] = f.default_factory
        spec.append((f.name, f.type, dataclasses.field(**options)))
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True)


def test_the_hot_records_use_it() -> None:
    names = {cls.__name__ for cls in FAST}
    assert {"EventRecord", "ProviderContext", "FireResult", "ToolResult", "ModelRequest"} <= names


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_signature_is_the_generated_one(cls: type) -> None:
    assert str(inspect.signature(cls)) == str(inspect.signature(_as_dataclasses_makes_it(cls)))
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"  # type: ignore[misc]


def test_values_defaults_and_factories() -> None:
    result = FireResult(fired_count=0)
    assert result.reports == []
    assert result.reports is not FireResult(fired_count=0).reports
    assert ToolResult("out") == ToolResult(content="out", ok=True, truncated=False)
    request = ModelRequest(system="s", messages=[], tools=[], session_id="x", turn=0)
    assert dataclasses.replace(request, turn=3).turn == 3


def test_still_frozen_and_picklable() -> None:
    record = EventRecord(seq=1, topic="t", kind="k", payload={"a": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.seq = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(record)) == record
    assert record != EventRecord(seq=2, topic="t", kind="k", payload={"a": 1})


def test_wrong_arguments_fail_as_before() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'payload'"):
        EventRecord(1, "t", "k")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        ToolResult("x", nope=1)  # type: ignore[call-arg]
