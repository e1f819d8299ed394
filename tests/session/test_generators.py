"""Tests for generators: the registry, the default registry, the interval clock, error
isolation, the announced delta, the standalone injector and the ``Session`` integration.

The rules: docs/generators.md, and docs/core.md, "The envelope" (the ``system_reminder``
envelope style) and "Committing an envelope" (append-only placement).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_reminders.generators as gen_module
from agent_reminders import Authority, EventLog, Session, Source, check_append_only
from agent_reminders.generators import (
    GeneratorRegistry,
    ReminderInjector,
    build_reminder_message,
    create_announced_delta,
    default_registry,
    get_generators,
    register_generator,
    reset_generators,
    unregister_generator,
)

PROVIDER_EVALUATED = "transcript.reminder.provider_evaluated"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_tools_delta.py"

T, F = True, False


# -- helpers --------------------------------------------------------------------------------


def pi_text(texts: list[str]) -> str:
    return "<system-reminder>\n" + "\n\n".join(texts) + "\n</system-reminder>"


def pi_message(texts: list[str], timestamp: int = 123) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": pi_text(texts)}],
        "timestamp": timestamp,
    }


class Recorder:
    """A generator that logs every ``force`` it receives and answers through ``speak``.

    ``speak(call, force)`` is called with the generator's own 1-based call number.
    """

    def __init__(
        self,
        id: str,
        speak: Callable[[int, bool], Any],
        *,
        interval: int | None = None,
    ) -> None:
        self.id = id
        self.interval = interval
        self.forces: list[bool] = []
        self._speak = speak

    def compute(self, force: bool) -> Any:
        self.forces.append(force)
        return self._speak(len(self.forces), force)


def when_forced(text: str) -> Callable[[int, bool], str | None]:
    return lambda _call, force: text if force else None


def always(text: str) -> Callable[[int, bool], str | None]:
    return lambda _call, _force: text


def never(_call: int, _force: bool) -> None:
    return None


class Bare:
    """A generator with only ``id`` and ``compute`` (no interval, no reset)."""

    def __init__(self, id: str, text: str | None = None) -> None:
        self.id = id
        self.text = text

    def compute(self, force: bool) -> str | None:
        return self.text


def run(registry: GeneratorRegistry, calls: int, **kwargs: Any) -> list[list[dict[str, Any]]]:
    """Run ``calls`` injection events; return what each call appended."""
    injector = ReminderInjector(registry, clock=lambda: 123, **kwargs)
    appended = []
    messages: list[Any] = []
    for _ in range(calls):
        before = len(messages)
        injector.on_context(messages)
        appended.append(messages[before:])
    return appended


def injector_with(*generators: Any, **kwargs: Any) -> ReminderInjector:
    registry = GeneratorRegistry()
    for g in generators:
        registry.register(g)
    return ReminderInjector(registry, clock=lambda: 123, **kwargs)


def forces_over(generator: Recorder, calls: int = 7) -> list[bool]:
    injector = injector_with(generator)
    for _ in range(calls):
        injector.on_context([])
    return generator.forces


# -- 1. registry ----------------------------------------------------------------------------


def test_register_keeps_registration_order() -> None:
    registry = GeneratorRegistry()
    a, b, c = Bare("a"), Bare("b"), Bare("c")
    for g in (b, a, c):
        registry.register(g)
    assert registry.generators() == [b, a, c]
    assert [g.id for g in registry.generators()] == ["b", "a", "c"]


def test_reregistering_an_id_replaces_the_object_in_place() -> None:
    registry = GeneratorRegistry()
    a, b, c = Bare("a"), Bare("b"), Bare("c")
    for g in (a, b, c):
        registry.register(g)
    b2 = Bare("b", "new")
    registry.register(b2)
    snapshot = registry.generators()
    assert [g.id for g in snapshot] == ["a", "b", "c"]
    assert snapshot[1] is b2
    assert all(g is not b for g in snapshot)


def test_reregistering_keeps_the_clock_of_the_id() -> None:
    registry = GeneratorRegistry()
    first = Recorder("tick", when_forced("Tick."), interval=3)
    registry.register(first)
    injector = ReminderInjector(registry, clock=lambda: 123)
    for _ in range(3):
        injector.on_context([])
    assert first.forces == [F, F, T]
    assert injector.last_emitted_at == {"tick": 3}

    second = Recorder("tick", when_forced("Tock."), interval=3)
    registry.register(second)
    messages: list[Any] = []
    for _ in range(4):
        injector.on_context(messages)
    # the interval keeps counting from call 3: forced on call 6, not on call 4
    assert second.forces == [F, F, T, F]
    assert first.forces == [F, F, T]
    assert injector.call_count == 7
    assert injector.last_emitted_at == {"tick": 6}
    assert messages == [pi_message(["Tock."])]


def test_unregister_returns_true_only_if_present() -> None:
    registry = GeneratorRegistry()
    registry.register(Bare("a"))
    assert registry.unregister("missing") is False
    assert registry.unregister("a") is True
    assert registry.unregister("a") is False
    assert registry.generators() == []


def test_unregister_then_register_moves_it_last() -> None:
    registry = GeneratorRegistry()
    a, b, c = Bare("a"), Bare("b"), Bare("c")
    for g in (a, b, c):
        registry.register(g)
    assert registry.unregister("a") is True
    registry.register(a)
    assert registry.generators() == [b, c, a]


def test_generators_returns_a_fresh_snapshot() -> None:
    registry = GeneratorRegistry()
    a, b = Bare("a"), Bare("b")
    registry.register(a)
    registry.register(b)
    first = registry.generators()
    second = registry.generators()
    assert first == [a, b]
    assert first is not second
    first.clear()
    second.append(Bare("c"))
    second.reverse()
    assert registry.generators() == [a, b]


def test_registry_reset_calls_reset_in_order_only_where_present() -> None:
    calls: list[str] = []

    class Resettable(Bare):
        def reset(self) -> None:
            calls.append(self.id)

    registry = GeneratorRegistry()
    for g in (Resettable("z"), Bare("plain"), Resettable("a"), Resettable("m")):
        registry.register(g)
    registry.reset()
    assert calls == ["z", "a", "m"]
    registry.reset()
    assert calls == ["z", "a", "m", "z", "a", "m"]


class NoId:
    def compute(self, force: bool) -> None:
        return None


class WithId:
    def __init__(self, id: Any, interval: Any = None, compute: Any = "method") -> None:
        self.id = id
        self.interval = interval
        if compute != "method":
            self.compute = compute  # type: ignore[method-assign]

    def compute(self, force: bool) -> None:
        return None


class NoCompute:
    id = "nocompute"


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(NoId(), id="no-id"),
        pytest.param(WithId(""), id="empty-id"),
        pytest.param(WithId("   "), id="blank-id"),
        pytest.param(WithId(None), id="none-id"),
        pytest.param(WithId(7), id="int-id"),
        pytest.param(NoCompute(), id="no-compute"),
        pytest.param(WithId("x", compute="not callable"), id="compute-not-callable"),
        pytest.param(WithId("x", interval=-1), id="negative-interval"),
        pytest.param(WithId("x", interval="3"), id="str-interval"),
        pytest.param(WithId("x", interval=1.5), id="float-interval"),
    ],
)
def test_register_rejects_invalid_generators(bad: Any) -> None:
    registry = GeneratorRegistry()
    registry.register(Bare("ok"))
    with pytest.raises((TypeError, ValueError)):
        registry.register(bad)
    assert [g.id for g in registry.generators()] == ["ok"]


def test_interval_zero_and_none_are_valid() -> None:
    registry = GeneratorRegistry()
    registry.register(WithId("zero", interval=0))
    registry.register(WithId("none", interval=None))
    registry.register(Bare("absent"))
    assert [g.id for g in registry.generators()] == ["zero", "none", "absent"]


# -- 2. default registry --------------------------------------------------------------------


@pytest.fixture
def default_ids() -> Iterator[list[str]]:
    """Ids a test registers on the default registry; unregistered afterwards."""
    before = default_registry().generators()
    added: list[str] = []
    yield added
    for gid in added:
        default_registry().unregister(gid)
    assert default_registry().generators() == before


@pytest.fixture
def restore_generators_module() -> Iterator[Any]:
    """Undo an ``importlib.reload`` of the generators module (restores its namespace)."""
    module = sys.modules["agent_reminders.generators"]
    saved = dict(module.__dict__)
    yield module
    module.__dict__.clear()
    module.__dict__.update(saved)


def test_module_functions_act_on_the_default_registry(default_ids: list[str]) -> None:
    registry = default_registry()
    assert isinstance(registry, GeneratorRegistry)
    assert default_registry() is registry
    before = registry.generators()
    resets: list[str] = []

    class G(Bare):
        def reset(self) -> None:
            resets.append(self.id)

    one, two = G("test-gen-default-1"), G("test-gen-default-2")
    default_ids.extend([one.id, two.id])
    register_generator(one)
    register_generator(two)
    assert registry.generators() == [*before, one, two]
    assert get_generators() == [*before, one, two]
    snapshot = get_generators()
    snapshot.clear()
    assert get_generators() == [*before, one, two]

    reset_generators()
    assert resets == [one.id, two.id]

    assert unregister_generator(one.id) is True
    assert unregister_generator(one.id) is False
    assert registry.generators() == [*before, two]
    assert get_generators() == [*before, two]


def test_injector_without_registry_uses_the_default_registry(default_ids: list[str]) -> None:
    g = Recorder("test-gen-default-injector", always("From the default registry."))
    default_ids.append(g.id)
    register_generator(g)
    injector = ReminderInjector(clock=lambda: 9)
    messages: list[Any] = []
    injector.on_context(messages)
    assert g.forces == [F]
    assert len(messages) == 1
    assert messages[0]["role"] == "user"
    assert messages[0]["timestamp"] == 9
    assert messages[0]["content"][0]["text"].endswith(
        "From the default registry.\n</system-reminder>"
    )


def test_default_registry_survives_reload(
    default_ids: list[str], restore_generators_module: Any
) -> None:
    before = default_registry()
    g = Bare("test-gen-before-reload", "x")
    default_ids.append(g.id)
    register_generator(g)
    old_registry_class = gen_module.GeneratorRegistry

    reloaded = importlib.reload(restore_generators_module)
    assert reloaded.GeneratorRegistry is not old_registry_class  # really re-executed
    assert reloaded.default_registry() is before
    assert g in reloaded.get_generators()

    h = Bare("test-gen-after-reload", "y")
    default_ids.append(h.id)
    reloaded.register_generator(h)
    assert before.generators()[-2:] == [g, h]


def test_default_registry_is_shared_by_a_second_copy_of_the_module(
    default_ids: list[str],
) -> None:
    path = Path(gen_module.__file__)
    name = "agent_reminders._generators_copy"
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=None)
    assert spec is not None
    assert spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    sys.modules[name] = copy
    try:
        spec.loader.exec_module(copy)
    finally:
        sys.modules.pop(name, None)
    assert copy is not gen_module
    assert copy.GeneratorRegistry is not GeneratorRegistry  # a genuinely separate copy
    assert copy.default_registry() is default_registry()

    g = Bare("test-gen-from-copy", "hello")
    default_ids.append(g.id)
    copy.register_generator(g)
    assert g in get_generators()
    assert get_generators() == copy.get_generators()
    assert unregister_generator(g.id) is True
    assert g not in copy.get_generators()


# -- 3. interval clock and forcing ----------------------------------------------------------


@pytest.mark.parametrize(
    ("interval", "speak", "expected"),
    [
        pytest.param(0, when_forced("x"), [T] * 7, id="interval0-speaks-when-forced"),
        pytest.param(0, never, [T] * 7, id="interval0-silent"),
        pytest.param(0, always("x"), [T] * 7, id="interval0-always"),
        pytest.param(1, when_forced("x"), [T] * 7, id="interval1-speaks-when-forced"),
        pytest.param(1, always("x"), [T] * 7, id="interval1-always"),
        pytest.param(1, never, [T] * 7, id="interval1-silent"),
        pytest.param(3, when_forced("x"), [F, F, T, F, F, T, F], id="interval3-when-forced"),
        pytest.param(3, always("x"), [F] * 7, id="interval3-always"),
        pytest.param(3, never, [F, F, T, T, T, T, T], id="interval3-silent"),
        pytest.param(2, when_forced("x"), [F, T, F, T, F, T, F], id="interval2-when-forced"),
        pytest.param(None, when_forced("x"), [F] * 7, id="none-when-forced"),
        pytest.param(None, always("x"), [F] * 7, id="none-always"),
        pytest.param(None, never, [F] * 7, id="none-silent"),
    ],
)
def test_force_sequences(
    interval: int | None, speak: Callable[[int, bool], Any], expected: list[bool]
) -> None:
    assert forces_over(Recorder("g", speak, interval=interval)) == expected


def test_unforced_speech_restarts_the_interval() -> None:
    # speaks unforced on call 2 and whenever forced: forced on calls 5 (2 + 3) and 8 (5 + 3)
    g = Recorder("g", lambda call, force: "x" if force or call == 2 else None, interval=3)
    assert forces_over(g, 8) == [F, F, F, F, T, F, F, T]


def test_absent_interval_attribute_never_forces() -> None:
    forces: list[bool] = []

    class NoInterval:
        id = "nointerval"

        def compute(self, force: bool) -> None:
            forces.append(force)

    injector = injector_with(NoInterval())
    for _ in range(5):
        injector.on_context([])
    assert forces == [F] * 5


def test_silent_when_forced_is_forced_every_call_until_it_speaks() -> None:
    # interval 2; refuses to speak until its 5th call, then speaks only when forced
    g = Recorder("g", lambda call, force: "x" if force and call >= 5 else None, interval=2)
    injector = injector_with(g)
    emitted: list[dict[str, int]] = []
    for _ in range(9):
        injector.on_context([])
        emitted.append(injector.last_emitted_at)
    assert g.forces == [F, T, T, T, T, F, T, F, T]
    assert emitted == [{}, {}, {}, {}, {"g": 5}, {"g": 5}, {"g": 7}, {"g": 7}, {"g": 9}]


def test_call_count_and_last_emitted_at() -> None:
    a = Recorder("a", when_forced("A."), interval=2)
    b = Recorder("b", lambda call, _force: "B." if call == 3 else None)
    injector = injector_with(a, b)
    assert injector.call_count == 0
    assert injector.last_emitted_at == {}
    seen = []
    for _ in range(4):
        injector.on_context([])
        seen.append((injector.call_count, injector.last_emitted_at))
    assert seen == [
        (1, {}),
        (2, {"a": 2}),
        (3, {"a": 2, "b": 3}),
        (4, {"a": 4, "b": 3}),
    ]


def test_last_emitted_at_is_a_snapshot() -> None:
    injector = injector_with(Recorder("a", always("A.")))
    injector.on_context([])
    view = injector.last_emitted_at
    view["a"] = 99
    view["zzz"] = 1
    assert injector.last_emitted_at == {"a": 1}


def test_no_generators_does_not_advance_call_count() -> None:
    g = Recorder("g", when_forced("x"), interval=2)
    registry = GeneratorRegistry()
    registry.register(g)
    injector = ReminderInjector(registry, clock=lambda: 123)
    assert registry.unregister("g") is True
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    for _ in range(3):
        injector.on_context(messages)
    assert injector.call_count == 0
    assert messages == [{"role": "user", "content": "hi"}]

    registry.register(g)
    injector.on_context(messages)
    injector.on_context(messages)
    assert injector.call_count == 2
    assert g.forces == [F, T]

    registry.unregister("g")
    for _ in range(3):
        injector.on_context(messages)
    assert injector.call_count == 2
    assert g.forces == [F, T]

    registry.register(g)
    injector.on_context(messages)
    assert injector.call_count == 3
    assert g.forces == [F, T, F]  # 3 - 2 < 2: the pauses did not count as calls


def test_injector_given_an_empty_registry_uses_that_registry(default_ids: list[str]) -> None:
    # an empty registry passed explicitly is still *the* registry (not the default one)
    intruder = Recorder("test-gen-default-intruder", always("From the default registry."))
    default_ids.append(intruder.id)
    register_generator(intruder)
    registry = GeneratorRegistry()
    injector = ReminderInjector(registry, clock=lambda: 123)
    messages: list[Any] = []
    injector.on_context(messages)
    assert intruder.forces == []
    assert messages == []
    assert injector.call_count == 0

    registry.register(Bare("mine", "Mine."))
    injector.on_context(messages)
    assert messages == [pi_message(["Mine."])]
    assert injector.call_count == 1
    assert intruder.forces == []


@pytest.mark.parametrize("blank", ["", " ", "   \n\t ", "\n"])
def test_whitespace_only_text_is_silent(blank: str) -> None:
    g = Recorder("g", lambda _call, force: blank if force else None, interval=1)
    injector = injector_with(g)
    messages: list[Any] = []
    for _ in range(3):
        injector.on_context(messages)
    assert messages == []
    assert injector.last_emitted_at == {}
    assert g.forces == [T, T, T]
    assert injector.call_count == 3


def test_kept_text_is_stripped() -> None:
    injector = injector_with(
        Bare("a", "  \n Keep the plan short. \n\t"), Bare("b", "\tLine one.\n  Line two.  \n")
    )
    messages: list[Any] = []
    injector.on_context(messages)
    assert messages == [pi_message(["Keep the plan short.", "Line one.\n  Line two."])]


def test_clock_is_keyed_by_id_across_generators() -> None:
    a = Recorder("a", when_forced("A."), interval=2)
    b = Recorder("b", when_forced("B."), interval=3)
    injector = injector_with(a, b)
    for _ in range(6):
        injector.on_context([])
    assert a.forces == [F, T, F, T, F, T]
    assert b.forces == [F, F, T, F, F, T]
    assert injector.last_emitted_at == {"a": 6, "b": 6}


ACTIONS = ("speak", "silent", "blank", "raise", "when_forced")


class Scripted:
    def __init__(self, id: str, interval: int | None, actions: list[str]) -> None:
        self.id = id
        self.interval = interval
        self.actions = actions
        self.forces: list[bool] = []

    def compute(self, force: bool) -> str | None:
        self.forces.append(force)
        call = len(self.forces)
        action = self.actions[call - 1]
        if action == "raise":
            raise RuntimeError(f"{self.id} failed on call {call}")
        if action == "blank":
            return "  \n "
        if action == "speak" or (action == "when_forced" and force):
            return f" {self.id} says {call} "
        return None


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=9).flatmap(
        lambda calls: st.lists(
            st.tuples(
                st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
                st.lists(st.sampled_from(ACTIONS), min_size=calls, max_size=calls),
            ),
            min_size=1,
            max_size=4,
        )
    )
)
def test_injector_matches_the_reference_rule(specs: list[tuple[int | None, list[str]]]) -> None:
    calls = len(specs[0][1])
    generators = [
        Scripted(f"g{i}", interval, actions) for i, (interval, actions) in enumerate(specs)
    ]
    log = EventLog()
    injector = injector_with(*generators, event_log=log)

    last: dict[str, int] = {}
    expected_forces: dict[str, list[bool]] = {g.id: [] for g in generators}
    for call in range(1, calls + 1):
        kept = []
        for g in generators:
            force = g.interval is not None and call - last.get(g.id, 0) >= g.interval
            expected_forces[g.id].append(force)
            action = g.actions[call - 1]
            if action == "speak" or (action == "when_forced" and force):
                kept.append(f"{g.id} says {call}")
                last[g.id] = call
        messages: list[Any] = [{"role": "user", "content": "prior"}]
        injector.on_context(messages)
        assert injector.call_count == call
        assert injector.last_emitted_at == last
        if kept:
            assert messages == [{"role": "user", "content": "prior"}, pi_message(kept)]
        else:
            assert messages == [{"role": "user", "content": "prior"}]
    assert {g.id: g.forces for g in generators} == expected_forces
    errors = [r.payload["provider_id"] for r in log.records if "error" in r.payload]
    expected_errors = [
        g.id for call in range(calls) for g in generators if g.actions[call] == "raise"
    ]
    assert errors == expected_errors


# -- errors are isolated --------------------------------------------------------------------


def error_records(log: EventLog) -> list[Any]:
    return [r for r in log.records if r.kind == PROVIDER_EVALUATED and "error" in r.payload]


def test_raising_generator_is_skipped_and_its_clock_does_not_move() -> None:
    def flaky(call: int, force: bool) -> str | None:
        if call == 2:
            raise RuntimeError("boom")
        return "Flaky spoke." if force else None

    bad = Recorder("flaky", flaky, interval=2)
    before = Recorder("before", always("Before."))
    after = Recorder("after", always("After."))
    log = EventLog()
    injector = injector_with(before, bad, after, event_log=log)

    messages: list[Any] = []
    injector.on_context(messages)
    assert messages == [pi_message(["Before.", "After."])]
    assert error_records(log) == []

    injector.on_context(messages)  # call 2: flaky is due, raises
    assert messages[1:] == [pi_message(["Before.", "After."])]
    assert injector.last_emitted_at == {"before": 2, "after": 2}
    errors = error_records(log)
    assert len(errors) == 1
    assert errors[0].payload["provider_id"] == "flaky"
    assert isinstance(errors[0].payload["error"], str)
    assert "boom" in errors[0].payload["error"]
    assert errors[0].topic == "transcript.reminder.lifecycle"

    injector.on_context(messages)  # call 3: still due (clock did not move), speaks
    assert bad.forces == [F, T, T]
    assert messages[2:] == [pi_message(["Before.", "Flaky spoke.", "After."])]
    assert injector.last_emitted_at == {"before": 3, "flaky": 3, "after": 3}
    assert len(error_records(log)) == 1


def test_only_raising_generator_adds_nothing() -> None:
    def boom(_call: int, _force: bool) -> str:
        raise ValueError("nope")

    g = Recorder("only", boom, interval=1)
    log = EventLog()
    injector = injector_with(g, event_log=log)
    messages: list[Any] = []
    injector.on_context(messages)
    injector.on_context(messages)
    assert messages == []
    assert injector.call_count == 2
    assert injector.last_emitted_at == {}
    assert [r.payload["provider_id"] for r in error_records(log)] == ["only", "only"]


@pytest.mark.parametrize("value", [42, b"bytes", ["a list"], 1.5, True])
def test_non_str_compute_result_is_an_error(value: Any) -> None:
    bad = Recorder("bad", lambda _call, _force: value, interval=1)
    good = Recorder("good", always("Good."))
    log = EventLog()
    injector = injector_with(bad, good, event_log=log)
    messages: list[Any] = []
    injector.on_context(messages)
    injector.on_context(messages)
    assert messages == [pi_message(["Good."]), pi_message(["Good."])]
    assert injector.last_emitted_at == {"good": 2}
    assert bad.forces == [T, T]
    assert [r.payload["provider_id"] for r in error_records(log)] == ["bad", "bad"]


@pytest.mark.parametrize("authority", ["urgent", "ADVISORY", "", 3])
def test_invalid_authority_attribute_is_an_error(authority: Any) -> None:
    bad = Recorder("bad", always("Bad authority."), interval=2)
    bad.authority = authority  # type: ignore[attr-defined]
    good = Recorder("good", always("Good."))
    log = EventLog()
    injector = injector_with(bad, good, event_log=log)
    messages: list[Any] = []
    for _ in range(3):
        injector.on_context(messages)
    assert messages == [pi_message(["Good."])] * 3
    assert injector.last_emitted_at == {"good": 3}
    assert bad.forces == [F, T, T]  # its clock never moved
    assert [r.payload["provider_id"] for r in error_records(log)] == ["bad"] * 3


@pytest.mark.parametrize("authority", ["contract", "corrective", "advisory", None])
def test_valid_authority_attribute_is_fine(authority: Any) -> None:
    g = Recorder("g", always("Fine."))
    g.authority = authority  # type: ignore[attr-defined]
    log = EventLog()
    injector = injector_with(g, event_log=log)
    messages: list[Any] = []
    injector.on_context(messages)
    assert messages == [pi_message(["Fine."])]
    assert error_records(log) == []


def test_no_event_log_still_isolates_errors() -> None:
    def boom(_call: int, _force: bool) -> str:
        raise RuntimeError("boom")

    injector = injector_with(Recorder("bad", boom), Recorder("ok", always("OK.")))
    messages: list[Any] = []
    injector.on_context(messages)
    assert messages == [pi_message(["OK."])]


# -- 5. announced delta ---------------------------------------------------------------------


class Delta:
    """A mutable tool pool and an announced-delta generator over it, with call logs."""

    def __init__(
        self, current: list[str], baseline: list[str] | None = None, *, with_baseline: bool = True
    ) -> None:
        self.current = list(current)
        self.baseline = list(baseline) if baseline is not None else []
        self.current_calls = 0
        self.baseline_calls = 0
        self.added_calls: list[list[str]] = []
        self.removed_calls: list[list[str]] = []
        self.generator = create_announced_delta(
            id="tools",
            get_current=self.get_current,
            get_baseline=self.get_baseline if with_baseline else None,
            render_added=self.render_added,
            render_removed=self.render_removed,
        )

    def get_current(self) -> list[str]:
        self.current_calls += 1
        return list(self.current)

    def get_baseline(self) -> list[str]:
        self.baseline_calls += 1
        return list(self.baseline)

    def render_added(self, names: list[str]) -> str:
        self.added_calls.append(list(names))
        return "Added: " + ", ".join(names)

    def render_removed(self, names: list[str]) -> str:
        self.removed_calls.append(list(names))
        return "Removed: " + ", ".join(names)


def test_delta_baseline_is_seeded_silently() -> None:
    d = Delta(["read", "grep"], baseline=["read", "grep"])
    assert d.baseline_calls == 1
    assert d.current_calls == 0
    assert d.generator.id == "tools"
    assert d.generator.compute(False) is None
    assert d.current_calls == 1
    assert d.added_calls == []
    assert d.removed_calls == []
    assert d.baseline_calls == 1


def test_delta_baseline_order_does_not_matter_for_silence() -> None:
    d = Delta(["grep", "read"], baseline=["read", "grep"])
    assert d.generator.compute(False) is None


def test_delta_without_baseline_announces_everything_first() -> None:
    d = Delta(["read", "grep", "edit"], with_baseline=False)
    assert d.baseline_calls == 0
    assert d.generator.compute(False) == "Added: read, grep, edit"
    assert d.generator.compute(False) is None
    assert d.added_calls == [["read", "grep", "edit"]]
    assert d.removed_calls == []


def test_delta_added_in_current_order_removed_in_announced_order() -> None:
    d = Delta(["c", "a", "b"], baseline=["c", "a", "b"])
    d.current = ["z", "b", "y"]
    assert d.generator.compute(False) == "Added: z, y\nRemoved: c, a"
    assert d.added_calls == [["z", "y"]]
    assert d.removed_calls == [["c", "a"]]
    # the announced set is now the current list, in its order
    d.current = []
    assert d.generator.compute(False) == "Removed: z, b, y"
    assert d.removed_calls == [["c", "a"], ["z", "b", "y"]]


def test_delta_added_first_then_removed_single_newline() -> None:
    d = Delta(["old"], baseline=["old"])
    d.current = ["new"]
    text = d.generator.compute(False)
    assert text == "Added: new\nRemoved: old"
    assert text.index("Added") < text.index("Removed")
    assert "\n\n" not in text


def test_delta_added_only_and_removed_only() -> None:
    d = Delta(["a"], baseline=["a"])
    d.current = ["a", "b"]
    assert d.generator.compute(False) == "Added: b"
    d.current = ["b"]
    assert d.generator.compute(False) == "Removed: a"
    assert d.added_calls == [["b"]]
    assert d.removed_calls == [["a"]]


def test_delta_deduplicates_current_keeping_first_occurrence() -> None:
    d = Delta([], with_baseline=False)
    d.current = ["b", "a", "b", "a", "c", "b"]
    assert d.generator.compute(False) == "Added: b, a, c"
    d.current = ["c", "c", "b"]
    assert d.generator.compute(False) == "Removed: a"
    d.current = []
    assert d.generator.compute(False) == "Removed: c, b"
    assert d.added_calls == [["b", "a", "c"]]
    assert d.removed_calls == [["a"], ["c", "b"]]


def test_delta_both_empty_returns_none() -> None:
    d = Delta([], with_baseline=False)
    assert d.generator.compute(False) is None
    assert d.generator.compute(False) is None
    d2 = Delta(["x"], baseline=["x"])
    assert d2.generator.compute(False) is None
    assert d.added_calls == d.removed_calls == d2.added_calls == d2.removed_calls == []


def test_delta_force_returns_none_without_reading_current() -> None:
    calls = 0

    def get_current() -> list[str]:
        nonlocal calls
        calls += 1
        raise AssertionError("get_current must not be called when forced")

    g = create_announced_delta(
        id="forced",
        get_current=get_current,
        render_added=lambda n: "A",
        render_removed=lambda n: "R",
    )
    assert g.compute(True) is None
    assert g.compute(True) is None
    assert calls == 0


def test_delta_force_does_not_touch_state() -> None:
    d = Delta(["read"], baseline=["read"])
    d.current = ["read", "grep"]
    assert d.generator.compute(True) is None
    assert d.current_calls == 0
    assert d.generator.compute(False) == "Added: grep"
    d.current = ["grep"]
    assert d.generator.compute(True) is None
    assert d.generator.compute(False) == "Removed: read"
    assert d.current_calls == 2


def test_delta_reset_rereads_the_baseline_freshly() -> None:
    d = Delta(["a"], baseline=["a"])
    d.current = ["a", "b"]
    assert d.generator.compute(False) == "Added: b"
    d.baseline = ["x", "y"]
    d.generator.reset()
    assert d.baseline_calls == 2
    d.current = ["x", "y"]
    assert d.generator.compute(False) is None
    d.current = ["x"]
    assert d.generator.compute(False) == "Removed: y"
    d.baseline = ["q"]
    d.generator.reset()
    assert d.baseline_calls == 3
    d.current = ["q", "x"]
    assert d.generator.compute(False) == "Added: x"


def test_delta_reset_without_baseline_empties_the_set() -> None:
    d = Delta(["a", "b"], with_baseline=False)
    assert d.generator.compute(False) == "Added: a, b"
    d.generator.reset()
    assert d.generator.compute(False) == "Added: a, b"
    d.generator.reset()
    d.current = []
    assert d.generator.compute(False) is None


def test_delta_renderers_always_receive_non_empty_lists() -> None:
    d = Delta(["a", "b"], baseline=["a", "b"])
    for current in (["a"], ["a", "c"], ["c"], [], [], ["d", "d"], ["d"], ["e", "f", "d"], []):
        d.current = current
        d.generator.compute(False)
    assert d.added_calls
    assert d.removed_calls
    assert all(names for names in d.added_calls)
    assert all(names for names in d.removed_calls)


def test_delta_has_no_interval() -> None:
    d = Delta([], with_baseline=False)
    assert getattr(d.generator, "interval", None) is None
    registry = GeneratorRegistry()
    registry.register(d.generator)
    assert registry.generators() == [d.generator]


def test_delta_in_an_injector_is_never_forced_and_reset_on_session_start() -> None:
    d = Delta(["read"], baseline=["read"])
    injector = injector_with(d.generator)
    messages: list[Any] = []
    plan = [["read"], ["read", "grep"], ["read", "grep"], ["grep"], ["grep"], ["grep", "ls"]]
    for current in plan:
        d.current = current
        injector.on_context(messages)
    assert messages == [
        pi_message(["Added: grep"]),
        pi_message(["Removed: read"]),
        pi_message(["Added: ls"]),
    ]
    assert d.current_calls == len(plan)  # never forced: every call read the pool
    assert injector.last_emitted_at == {"tools": 6}

    d.baseline = ["grep", "ls"]
    injector.on_session_start()
    assert d.baseline_calls == 2
    injector.on_context(messages)
    assert len(messages) == 3
    assert injector.call_count == 1


# -- 6. the standalone injector -------------------------------------------------------------


def test_on_context_appends_one_message_in_place() -> None:
    injector = injector_with(Bare("a", "First."), Bare("silent"), Bare("b", "Second."))
    prior = {"role": "user", "content": "hi"}
    messages: list[Any] = [prior]
    same = messages
    assert injector.on_context(messages) is None  # type: ignore[func-returns-value]
    assert messages is same
    assert messages[0] is prior
    assert messages == [
        {"role": "user", "content": "hi"},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "<system-reminder>\nFirst.\n\nSecond.\n</system-reminder>",
                }
            ],
            "timestamp": 123,
        },
    ]


def test_on_context_adds_nothing_when_no_generator_speaks() -> None:
    injector = injector_with(Bare("a"), Bare("b", "   "), Recorder("c", never, interval=2))
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    for _ in range(4):
        injector.on_context(messages)
    assert messages == [{"role": "user", "content": "hi"}]
    assert injector.call_count == 4


def test_on_context_uses_the_clock_for_the_timestamp() -> None:
    stamps = iter([1000, 2000, 3000])
    registry = GeneratorRegistry()
    registry.register(Bare("a", "A."))
    injector = ReminderInjector(registry, clock=lambda: next(stamps))
    messages: list[Any] = []
    injector.on_context(messages)
    injector.on_context(messages)
    assert [m["timestamp"] for m in messages] == [1000, 2000]


def test_on_context_default_timestamp_is_epoch_milliseconds() -> None:
    registry = GeneratorRegistry()
    registry.register(Bare("a", "A."))
    injector = ReminderInjector(registry)
    messages: list[Any] = []
    low = int(time.time() * 1000)
    injector.on_context(messages)
    high = int(time.time() * 1000)
    assert isinstance(messages[0]["timestamp"], int)
    assert low <= messages[0]["timestamp"] <= high


def test_build_reminder_message_exact_shape() -> None:
    assert build_reminder_message(["One."], timestamp=5) == {
        "role": "user",
        "content": [{"type": "text", "text": "<system-reminder>\nOne.\n</system-reminder>"}],
        "timestamp": 5,
    }
    assert build_reminder_message(["One.", "Two\nlines.", "Three."], timestamp=0) == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "<system-reminder>\nOne.\n\nTwo\nlines.\n\nThree.\n</system-reminder>",
            }
        ],
        "timestamp": 0,
    }


def test_build_reminder_message_default_timestamp() -> None:
    low = int(time.time() * 1000)
    message = build_reminder_message(["x"])
    high = int(time.time() * 1000)
    assert set(message) == {"role", "content", "timestamp"}
    assert isinstance(message["timestamp"], int)
    assert low <= message["timestamp"] <= high


def test_on_session_start_resets_generators_and_clock() -> None:
    resets: list[str] = []

    class Tick(Recorder):
        def reset(self) -> None:
            resets.append(self.id)

    tick = Tick("tick", when_forced("Tick."), interval=3)
    other = Recorder("other", always("Other."))
    injector = injector_with(tick, other)
    for _ in range(4):
        injector.on_context([])
    assert injector.call_count == 4
    assert injector.last_emitted_at == {"tick": 3, "other": 4}

    injector.on_session_start()
    assert resets == ["tick"]
    assert injector.call_count == 0
    assert injector.last_emitted_at == {}
    for _ in range(3):
        injector.on_context([])
    # the clock starts again: forced on the 3rd call of the new session
    assert tick.forces == [F, F, T, F, F, F, T]
    assert injector.call_count == 3


# -- 7. inside a Session --------------------------------------------------------------------


def generator_reminders(session: Session) -> list[Any]:
    return [r for r in session.transcript.reminders if "generator" in r.tags]


def test_session_rejects_a_non_registry() -> None:
    with pytest.raises(TypeError):
        Session(generators="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Session(generators=[Bare("a", "A.")])  # type: ignore[arg-type]


def test_session_turns_kept_text_into_a_reminder() -> None:
    registry = GeneratorRegistry()
    registry.register(Bare("plain", "  Keep answers short.  "))
    corrective = Bare("fix", "Stop retrying the same command.")
    corrective.authority = "corrective"  # type: ignore[attr-defined]
    registry.register(corrective)
    session = Session(generators=registry)
    session.append({"role": "user", "content": "hi"})

    request = session.prepare_request()
    pending = generator_reminders(session)
    assert len(pending) == 2
    by_id = {r.tags[1]: r for r in pending}
    plain, fix = by_id["plain"], by_id["fix"]
    assert plain.body == "Keep answers short."
    assert plain.source == Source.STDLIB_PROVIDER
    assert plain.dedupe_key == "generator:plain"
    assert plain.tags == ("generator", "plain")
    assert plain.ttl_turns == 1
    assert plain.authority == Authority.ADVISORY
    assert plain.fired_at_turn == 0
    assert fix.body == "Stop retrying the same command."
    assert fix.source == Source.STDLIB_PROVIDER
    assert fix.dedupe_key == "generator:fix"
    assert fix.tags == ("generator", "fix")
    assert fix.ttl_turns == 1
    assert fix.authority == Authority.CORRECTIVE

    # committed in this very request, as the trailing envelope message
    envelope = request.messages[-1]
    assert envelope["role"] == "user"
    content = envelope["content"]
    assert isinstance(content, str)
    assert content.startswith("<context-directives")
    assert (
        '<directive authority="advisory" ttl_turns="1">\nKeep answers short.\n</directive>'
        in content
    )
    assert (
        '<directive authority="corrective" ttl_turns="1">\n'
        "Stop retrying the same command.\n</directive>" in content
    )
    # corrective outranks advisory in the envelope
    assert content.index("Stop retrying") < content.index("Keep answers short.")
    committed = session.transcript.messages[-1]
    assert set(committed["directive_ids"]) == {plain.id, fix.id}


def test_session_generator_reminders_are_kept_in_history() -> None:
    registry = GeneratorRegistry()
    registry.register(Recorder("tick", lambda call, _force: f"Tick {call}."))
    session = Session(generators=registry)
    session.append({"role": "user", "content": "go"})
    requests = []
    for i in range(4):
        request = session.prepare_request()
        requests.append([dict(m) for m in request.messages])
        assert request.turn == i
        assert f"Tick {i + 1}." in request.messages[-1]["content"]
        session.append({"role": "assistant", "content": f"answer {i}"})
        session.post_turn(request.turn)
    assert check_append_only(requests) == []
    last = requests[-1]
    texts = [str(m["content"]) for m in last]
    for n in range(1, 5):
        assert sum(f"Tick {n}." in t for t in texts) == 1
    assert len(last) == 1 + 4 + 3  # prompt, four envelopes, three answers


def test_session_generator_text_not_delivered_keeps_its_clock() -> None:
    g = Recorder("plan", when_forced("Check the plan."), interval=2)
    registry = GeneratorRegistry()
    registry.register(g)
    session = Session(generators=registry)
    session.append({"role": "user", "content": "hi"})
    # a pending contract reminder with the same text wins the projection over the
    # generator's advisory one, so the generator's text is never delivered
    blocker = session.inject({"body": "Check the plan.", "authority": "contract"})

    requests = []
    for _ in range(3):
        request = session.prepare_request()
        requests.append(list(request.messages))
        session.append({"role": "assistant", "content": "ok"})
        session.post_turn(request.turn)
    assert g.forces == [F, T, T]  # not delivered on call 2, so forced again on call 3
    envelopes = [m for m in requests[-1] if "Check the plan." in str(m["content"])]
    assert len(envelopes) == 1
    assert 'authority="contract"' in envelopes[0]["content"]

    session.clear({"id": blocker.reminder_id})
    request = session.prepare_request()  # call 4: forced, now delivered
    assert g.forces == [F, T, T, T]
    assert isinstance(request.messages[-1]["content"], str)
    assert request.messages[-1]["content"].count("Check the plan.") == 1
    assert '<directive authority="advisory" ttl_turns="1">' in request.messages[-1]["content"]
    session.append({"role": "assistant", "content": "ok"})
    session.post_turn(request.turn)
    for _ in range(2):
        session.prepare_request()
    assert g.forces == [F, T, T, T, F, T]


def test_session_isolates_generator_errors() -> None:
    def boom(_call: int, _force: bool) -> str:
        raise RuntimeError("boom")

    registry = GeneratorRegistry()
    registry.register(Recorder("bad", boom, interval=1))
    registry.register(Recorder("good", always("Still here.")))
    log = EventLog()
    session = Session(generators=registry, event_log=log, envelope_style="system_reminder")
    request = session.prepare_request()
    assert request.messages[-1]["content"] == pi_text(["Still here."])
    errors = error_records(log)
    assert [r.payload["provider_id"] for r in errors] == ["bad"]
    assert "boom" in errors[0].payload["error"]


def test_session_without_generator_text_adds_no_envelope() -> None:
    registry = GeneratorRegistry()
    registry.register(Recorder("quiet", never, interval=1))
    session = Session(generators=registry)
    session.append({"role": "user", "content": "hi"})
    request = session.prepare_request()
    assert [dict(m) for m in request.messages] == [{"role": "user", "content": "hi"}]


def make_registry(pool: list[str]) -> GeneratorRegistry:
    """Fresh generators with identical behaviour; the delta reads the shared ``pool``."""
    registry = GeneratorRegistry()
    registry.register(
        Recorder(
            "tick",
            lambda call, _force: f"Tick {call}: re-read the task." if call in (1, 3, 6) else None,
        )
    )
    registry.register(Recorder("quiet", never, interval=3))
    registry.register(
        Recorder("every2", when_forced("Two calls passed; summarize progress."), interval=2)
    )
    registry.register(
        Recorder(
            "note", lambda call, _force: f"Note for call {call}." if call in (1, 4, 5) else None
        )
    )
    registry.register(
        create_announced_delta(
            id="tools",
            get_current=lambda: list(pool),
            get_baseline=lambda: list(pool),
            render_added=lambda names: "New tools are available: " + ", ".join(names) + ".",
            render_removed=lambda names: "These tools are gone: " + ", ".join(names) + ".",
        )
    )
    return registry


def test_session_system_reminder_text_equals_the_pi_message_text() -> None:
    pool = ["read_file", "deploy"]
    injector_registry = make_registry(pool)
    session_registry = make_registry(pool)
    injector = ReminderInjector(injector_registry, clock=lambda: 123)
    session = Session(generators=session_registry, envelope_style="system_reminder")
    session.append({"role": "user", "content": "start"})

    changes: dict[int, Callable[[], None]] = {
        2: lambda: pool.append("search"),
        4: lambda: pool.remove("deploy"),
        5: lambda: (pool.remove("read_file"), pool.extend(["grep", "ls"])),  # type: ignore[dict-item, func-returns-value]
    }
    pi_messages: list[Any] = []
    requests = []
    compared = 0
    for call in range(1, 8):
        if call in changes:
            changes[call]()
        before = len(pi_messages)
        injector.on_context(pi_messages)
        request = session.prepare_request()
        requests.append([dict(m) for m in request.messages])
        added = pi_messages[before:]
        last = request.messages[-1]
        if added:
            assert len(added) == 1
            assert last["role"] == "user"
            assert last["content"] == added[0]["content"][0]["text"]
            compared += 1
        else:
            assert dict(last) == {"role": "assistant", "content": f"answer {call - 1}"}
        session.append({"role": "assistant", "content": f"answer {call}"})
        session.post_turn(request.turn)

    assert compared == 6  # every call but one produced text
    assert [m["content"][0]["text"] for m in pi_messages] == [
        pi_text(["Tick 1: re-read the task.", "Note for call 1."]),
        pi_text(["Two calls passed; summarize progress.", "New tools are available: search."]),
        pi_text(["Tick 3: re-read the task."]),
        pi_text(
            [
                "Two calls passed; summarize progress.",
                "Note for call 4.",
                "These tools are gone: deploy.",
            ]
        ),
        pi_text(
            [
                "Note for call 5.",
                "New tools are available: grep, ls.\nThese tools are gone: read_file.",
            ]
        ),
        pi_text(["Tick 6: re-read the task.", "Two calls passed; summarize progress."]),
    ]
    assert check_append_only(requests) == []
    # both deliveries ran the same clock: identical force sequences
    forces = {
        name: [g.forces for g in reg.generators() if isinstance(g, Recorder)]
        for name, reg in (("injector", injector_registry), ("session", session_registry))
    }
    assert forces["injector"] == forces["session"]
    assert forces["session"][2] == [F, T, F, T, F, T, F]  # every2


# -- 8. the example -------------------------------------------------------------------------


def test_mcp_tools_delta_example_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "New tools are available: search." in out
    assert "These tools are no longer available: deploy." in out
    assert out.index("New tools are available: search.") < out.index(
        "These tools are no longer available: deploy."
    )
    assert "'<system-reminder>\\nNew tools are available: search.\\n</system-reminder>'" in out
    assert (
        "'<system-reminder>\\nThese tools are no longer available: deploy.\\n</system-reminder>'"
        in out
    )
    assert "prefix breaks across 5 requests: []" in out
    # part 2: the same pool on a model that takes tool changes in a system entry
    _, second = out.split("on claude-opus-4-8", 1)
    assert "<system-reminder>" not in second  # the blocks tell the model, no generator text
    assert second.count("tools ['read_file', 'deploy']") == 5  # declared once, never changed
    assert "the request's tools unchanged across 5 requests: True" in second
    envelopes = [
        json.loads(line.split("envelope: ", 1)[1])
        for line in second.splitlines()
        if line.strip().startswith("envelope: ")
    ]
    assert [e["role"] for e in envelopes] == ["system", "system"]
    (added,), (removed,) = (e["content"] for e in envelopes)
    assert added["type"] == "tool_addition"
    assert added["tool"]["type"] == "tool_definition"
    assert added["tool"]["definition"]["name"] == "search"
    assert removed["type"] == "tool_removal"
    assert removed["tool"] == {"type": "tool_reference", "name": "deploy"}
    betas = "anthropic-beta: mid-conversation-tool-changes-2026-07-01, inline-tools-2026-09-15"
    assert second.count(betas) == 2
    assert second.rstrip().endswith("prefix breaks across 5 requests: []")
