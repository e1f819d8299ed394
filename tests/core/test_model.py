"""Enumerations and the Reminder record (docs/core.md, "Reminder options")."""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import re
import time
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from agent_reminders import (
    Authority,
    DeliveryMode,
    Propagate,
    Reminder,
    ReminderError,
    RoleHint,
    Source,
    new_id,
)

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

ALWAYS_KEYS = {
    "id",
    "body",
    "tags",
    "preserve_on_compact",
    "propagate",
    "role_hint",
    "authority",
    "source",
    "fired_at_turn",
}
OPTIONAL_KEYS = {"dedupe_key", "ttl_turns", "originating_agent_id"}


# ------------------------------------------------------------------------------- enums

ENUM_VALUES: list[tuple[type[enum.StrEnum], list[str]]] = [
    (Authority, ["contract", "corrective", "advisory"]),
    (Propagate, ["all", "session", "none"]),
    (RoleHint, ["system", "developer", "user_block", "ephemeral_cache"]),
    (Source, ["stdlib_provider", "hook", "bridge", "in_pipeline", "inherited"]),
    (DeliveryMode, ["interrupt_immediate", "finish_step", "audit_only"]),
]


class TestEnums:
    @pytest.mark.parametrize(
        ("cls", "values"), [pytest.param(c, v, id=c.__name__) for c, v in ENUM_VALUES]
    )
    def test_exact_values_in_order(self, cls: type[enum.StrEnum], values: list[str]) -> None:
        assert [m.value for m in cls] == values

    @pytest.mark.parametrize("cls", [c for c, _ in ENUM_VALUES], ids=lambda c: c.__name__)
    def test_is_str_enum(self, cls: type[enum.StrEnum]) -> None:
        assert issubclass(cls, enum.StrEnum)
        assert issubclass(cls, str)

    @pytest.mark.parametrize(
        ("cls", "value"),
        [pytest.param(c, v, id=f"{c.__name__}-{v}") for c, vs in ENUM_VALUES for v in vs],
    )
    def test_values_are_wire_strings(self, cls: type[enum.StrEnum], value: str) -> None:
        member = cls(value)
        assert member == value
        assert str(member) == value
        assert f"{member}" == value
        assert json.dumps(member) == json.dumps(value)

    @pytest.mark.parametrize(
        ("cls", "bad"),
        [(Authority, "CONTRACT"), (Propagate, "children"), (RoleHint, "user"), (Source, "cli")],
    )
    def test_unknown_value_rejected(self, cls: type[enum.StrEnum], bad: str) -> None:
        with pytest.raises(ValueError, match=repr(bad)):
            cls(bad)

    def test_defaults(self) -> None:
        r = Reminder(body="x")
        assert r.authority is Authority.CONTRACT
        assert r.propagate is Propagate.SESSION
        assert r.role_hint is RoleHint.SYSTEM
        assert r.source is Source.IN_PIPELINE

    def test_member_names(self) -> None:
        assert Authority.CONTRACT.value == "contract"
        assert Authority.CORRECTIVE.value == "corrective"
        assert Authority.ADVISORY.value == "advisory"
        assert Propagate.ALL.value == "all"
        assert Propagate.SESSION.value == "session"
        assert Propagate.NONE.value == "none"
        assert RoleHint.USER_BLOCK.value == "user_block"
        assert RoleHint.EPHEMERAL_CACHE.value == "ephemeral_cache"
        assert Source.STDLIB_PROVIDER.value == "stdlib_provider"
        assert Source.INHERITED.value == "inherited"
        assert DeliveryMode.INTERRUPT_IMMEDIATE.value == "interrupt_immediate"
        assert DeliveryMode.FINISH_STEP.value == "finish_step"
        assert DeliveryMode.AUDIT_ONLY.value == "audit_only"


# ----------------------------------------------------------------------------- ids


class TestIds:
    def test_new_id_is_uuid7(self) -> None:
        value = new_id()
        assert isinstance(value, str)
        assert UUID_RE.match(value), value
        parsed = uuid.UUID(value)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == value

    def test_new_ids_unique_and_time_ordered(self) -> None:
        ids = [new_id() for _ in range(5000)]
        assert len(set(ids)) == len(ids)
        assert ids == sorted(ids)
        as_ints = [uuid.UUID(i).int for i in ids]
        assert all(a < b for a, b in itertools.pairwise(as_ints))

    def test_timestamp_is_recent_milliseconds(self) -> None:
        before = time.time_ns() // 1_000_000
        value = uuid.UUID(new_id())
        after = time.time_ns() // 1_000_000
        ms = value.int >> 80
        # The generator may run at most a little ahead of the clock on counter overflow.
        assert before <= ms <= after + 1000


# ------------------------------------------------------------------------ Reminder


class TestReminderDefaults:
    def test_documented_defaults(self) -> None:
        r = Reminder(body="Run the tests.")
        assert r.body == "Run the tests."
        assert r.tags == ()
        assert r.dedupe_key is None
        assert r.ttl_turns is None
        assert r.preserve_on_compact is False
        assert r.propagate is Propagate.SESSION
        assert r.role_hint is RoleHint.SYSTEM
        assert r.authority is Authority.CONTRACT
        assert r.source is Source.IN_PIPELINE
        assert r.fired_at_turn == 0
        assert r.originating_agent_id is None

    def test_default_id_is_uuid7(self) -> None:
        r = Reminder(body="x")
        assert isinstance(r.id, str)
        assert UUID_RE.match(r.id), r.id
        assert uuid.UUID(r.id).version == 7

    def test_default_ids_unique_and_time_ordered(self) -> None:
        ids = [Reminder(body="x").id for _ in range(2000)]
        assert len(set(ids)) == len(ids)
        assert ids == sorted(ids)
        assert all(uuid.UUID(i).version == 7 for i in ids)

    def test_explicit_id_kept(self) -> None:
        assert Reminder(id="r-1", body="x").id == "r-1"

    def test_field_names_and_order(self) -> None:
        assert [f.name for f in dataclasses.fields(Reminder)] == [
            "id",
            "body",
            "tags",
            "dedupe_key",
            "ttl_turns",
            "first_after",
            "cooldown_turns",
            "max_fires",
            "preserve_on_compact",
            "propagate",
            "role_hint",
            "authority",
            "source",
            "fired_at_turn",
            "originating_agent_id",
        ]

    def test_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            Reminder("x")  # type: ignore[call-arg]

    def test_body_required(self) -> None:
        with pytest.raises(TypeError):
            Reminder()  # type: ignore[call-arg]

    def test_body_not_stripped(self) -> None:
        assert Reminder(body="  hi \n").body == "  hi \n"


class TestReminderFrozen:
    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("body", "y"),
            ("id", "other"),
            ("tags", ("t",)),
            ("ttl_turns", 3),
            ("propagate", Propagate.ALL),
            ("fired_at_turn", 4),
        ],
    )
    def test_assignment_raises(self, name: str, value: Any) -> None:
        r = Reminder(body="x")
        before = r.to_dict()
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(r, name, value)
        assert r.to_dict() == before

    def test_delete_raises(self) -> None:
        r = Reminder(body="x")
        with pytest.raises(dataclasses.FrozenInstanceError):
            del r.body

    def test_replace_makes_a_new_value(self) -> None:
        r = Reminder(body="x", ttl_turns=2)
        s = dataclasses.replace(r, ttl_turns=1)
        assert (r.ttl_turns, s.ttl_turns) == (2, 1)
        assert s.id == r.id

    def test_value_equality_and_hash(self) -> None:
        a = Reminder(id="r1", body="x", tags=("a",))
        b = Reminder(id="r1", body="x", tags=("a",))
        assert a == b
        assert hash(a) == hash(b)
        assert a != Reminder(id="r2", body="x", tags=("a",))


class TestReminderCoercion:
    @pytest.mark.parametrize(
        ("field", "value", "expected"),
        [
            ("propagate", "all", Propagate.ALL),
            ("propagate", "none", Propagate.NONE),
            ("role_hint", "developer", RoleHint.DEVELOPER),
            ("role_hint", "ephemeral_cache", RoleHint.EPHEMERAL_CACHE),
            ("authority", "advisory", Authority.ADVISORY),
            ("authority", "corrective", Authority.CORRECTIVE),
            ("source", "hook", Source.HOOK),
            ("source", "bridge", Source.BRIDGE),
            ("source", "inherited", Source.INHERITED),
            ("source", "stdlib_provider", Source.STDLIB_PROVIDER),
        ],
    )
    def test_strings_coerced_to_enums(self, field: str, value: str, expected: Any) -> None:
        kwargs: dict[str, Any] = {field: value}
        r = Reminder(body="x", **kwargs)
        got = getattr(r, field)
        assert got is expected
        assert type(got) is type(expected)

    def test_tags_list_becomes_tuple(self) -> None:
        r = Reminder(body="x", tags=["a", "b"])  # type: ignore[arg-type]
        assert r.tags == ("a", "b")
        assert type(r.tags) is tuple

    def test_hashable_after_coercion(self) -> None:
        r = Reminder(body="x", tags=["a"], propagate="all")  # type: ignore[arg-type]
        assert hash(r) == hash(Reminder(id=r.id, body="x", tags=("a",), propagate=Propagate.ALL))


class TestReminderValidation:
    @pytest.mark.parametrize("body", ["", "   ", "\n\t", None, 1, b"x", ["x"]])
    def test_bad_body(self, body: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body=body)
        assert info.value.code == "RMD-001"
        assert "body" in info.value.message

    @pytest.mark.parametrize("ttl", [0, -1, True, False, 1.0, 1.5, "2"])
    def test_bad_ttl(self, ttl: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", ttl_turns=ttl)
        assert info.value.code == "RMD-001"
        assert "ttl_turns" in info.value.message

    @pytest.mark.parametrize("tags", ["abc", 1, None, {"a"}, ("a", ""), ["a", 1], ("  ",), [None]])
    def test_bad_tags(self, tags: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", tags=tags)
        assert info.value.code == "RMD-001"
        assert "tags" in info.value.message

    @pytest.mark.parametrize("value", ["sideways", "ALL", "", 1, None])
    def test_bad_propagate_is_rmd_005(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", propagate=value)
        assert info.value.code == "RMD-005"
        assert "propagate" in info.value.message

    @pytest.mark.parametrize("value", ["boss", "CONTRACT", "", 0, None])
    def test_bad_authority_is_rmd_001(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", authority=value)
        assert info.value.code == "RMD-001"
        assert "authority" in info.value.message

    @pytest.mark.parametrize("value", ["user", "assistant", 1])
    def test_bad_role_hint_is_rmd_001(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", role_hint=value)
        assert info.value.code == "RMD-001"
        assert "role_hint" in info.value.message

    @pytest.mark.parametrize("value", ["cli", "HOOK", 3])
    def test_bad_source_is_rmd_001(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", source=value)
        assert info.value.code == "RMD-001"
        assert "source" in info.value.message

    @pytest.mark.parametrize("turn", [-1, -10, 1.0, "1", None, True])
    def test_bad_fired_at_turn(self, turn: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", fired_at_turn=turn)
        assert info.value.code == "RMD-001"
        assert "fired_at_turn" in info.value.message

    @pytest.mark.parametrize("turn", [0, 1, 1000])
    def test_good_fired_at_turn(self, turn: int) -> None:
        assert Reminder(body="x", fired_at_turn=turn).fired_at_turn == turn

    @pytest.mark.parametrize("value", [1, b"k", ["k"]])
    def test_bad_dedupe_key(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", dedupe_key=value)
        assert info.value.code == "RMD-001"
        assert "dedupe_key" in info.value.message

    @pytest.mark.parametrize("value", [1, "yes", None])
    def test_bad_preserve_on_compact(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", preserve_on_compact=value)
        assert info.value.code == "RMD-001"
        assert "preserve_on_compact" in info.value.message

    @pytest.mark.parametrize("value", [1, ["agent"]])
    def test_bad_originating_agent_id(self, value: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder(body="x", originating_agent_id=value)
        assert info.value.code == "RMD-001"
        assert "originating_agent_id" in info.value.message


# ------------------------------------------------------------------------ to_dict / from_dict


def full_reminder() -> Reminder:
    return Reminder(
        id="0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        body="  Use the staging DB.\n",
        tags=("db", "env"),
        dedupe_key="db-target",
        ttl_turns=3,
        preserve_on_compact=True,
        propagate=Propagate.ALL,
        role_hint=RoleHint.DEVELOPER,
        authority=Authority.CORRECTIVE,
        source=Source.INHERITED,
        fired_at_turn=7,
        originating_agent_id="parent-agent",
    )


SAMPLES = [
    pytest.param(lambda: Reminder(body="x"), id="minimal"),
    pytest.param(full_reminder, id="full"),
    pytest.param(lambda: Reminder(body="b", ttl_turns=1), id="ttl-only"),
    pytest.param(lambda: Reminder(body="b", dedupe_key="k"), id="dedupe-only"),
    pytest.param(
        lambda: Reminder(body="b", originating_agent_id="a", source=Source.INHERITED),
        id="origin-only",
    ),
    pytest.param(
        lambda: Reminder(
            body="multi\nline ✓",
            tags=("a",),
            role_hint="user_block",  # type: ignore[arg-type]
            propagate="none",  # type: ignore[arg-type]
        ),
        id="coerced",
    ),
    pytest.param(
        lambda: Reminder(
            body="b",
            authority="advisory",  # type: ignore[arg-type]
            source="bridge",  # type: ignore[arg-type]
            fired_at_turn=12,
        ),
        id="bridge",
    ),
]


class TestToDict:
    def test_minimal_exact_payload(self) -> None:
        r = Reminder(id="r1", body="Run the tests.")
        assert r.to_dict() == {
            "id": "r1",
            "body": "Run the tests.",
            "tags": [],
            "preserve_on_compact": False,
            "propagate": "session",
            "role_hint": "system",
            "authority": "contract",
            "source": "in_pipeline",
            "fired_at_turn": 0,
        }

    def test_full_exact_payload(self) -> None:
        assert full_reminder().to_dict() == {
            "id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            "body": "  Use the staging DB.\n",
            "tags": ["db", "env"],
            "dedupe_key": "db-target",
            "ttl_turns": 3,
            "preserve_on_compact": True,
            "propagate": "all",
            "role_hint": "developer",
            "authority": "corrective",
            "source": "inherited",
            "fired_at_turn": 7,
            "originating_agent_id": "parent-agent",
        }

    def test_minimal_key_set(self) -> None:
        assert set(Reminder(body="x").to_dict()) == ALWAYS_KEYS

    def test_full_key_set(self) -> None:
        assert set(full_reminder().to_dict()) == ALWAYS_KEYS | OPTIONAL_KEYS

    @pytest.mark.parametrize(
        ("kwargs", "present"),
        [
            ({"dedupe_key": "k"}, {"dedupe_key"}),
            ({"ttl_turns": 2}, {"ttl_turns"}),
            ({"originating_agent_id": "p"}, {"originating_agent_id"}),
            ({"dedupe_key": "k", "ttl_turns": 1}, {"dedupe_key", "ttl_turns"}),
            ({"dedupe_key": None, "ttl_turns": None, "originating_agent_id": None}, set()),
        ],
    )
    def test_optional_keys_only_when_set(self, kwargs: dict[str, Any], present: set[str]) -> None:
        d = Reminder(body="x", **kwargs).to_dict()
        assert set(d) == ALWAYS_KEYS | present
        for key in present:
            assert d[key] == kwargs[key]

    def test_types_are_plain_json(self) -> None:
        d = full_reminder().to_dict()
        for key in ("propagate", "role_hint", "authority", "source"):
            assert type(d[key]) is str, key
        assert type(d["tags"]) is list
        assert type(d["preserve_on_compact"]) is bool
        assert type(d["fired_at_turn"]) is int
        assert json.loads(json.dumps(d)) == d

    def test_returns_a_fresh_dict(self) -> None:
        r = Reminder(body="x", tags=("a",))
        d = r.to_dict()
        d["tags"].append("b")
        d["body"] = "changed"
        assert r.tags == ("a",)
        assert r.to_dict()["tags"] == ["a"]
        assert r.body == "x"


class TestFromDict:
    @pytest.mark.parametrize("make", SAMPLES)
    def test_round_trip(self, make: Any) -> None:
        r = make()
        again = Reminder.from_dict(r.to_dict())
        assert again == r
        assert again.to_dict() == r.to_dict()
        assert type(again.propagate) is Propagate
        assert type(again.tags) is tuple

    @pytest.mark.parametrize("make", SAMPLES)
    def test_json_round_trip(self, make: Any) -> None:
        r = make()
        assert Reminder.from_dict(json.loads(json.dumps(r.to_dict()))) == r

    def test_accepts_any_mapping(self) -> None:
        r = full_reminder()
        assert Reminder.from_dict(MappingProxyType(r.to_dict())) == r

    def test_explicit_none_optionals_accepted(self) -> None:
        d: dict[str, Any] = Reminder(id="r1", body="x").to_dict()
        d.update(dedupe_key=None, ttl_turns=None, originating_agent_id=None)
        assert Reminder.from_dict(d) == Reminder(id="r1", body="x")

    def test_does_not_mutate_input(self) -> None:
        d = full_reminder().to_dict()
        snapshot = json.loads(json.dumps(d))
        Reminder.from_dict(d)
        assert d == snapshot

    @pytest.mark.parametrize(
        ("extra", "expected"),
        [
            ({"colour": "red"}, "unknown option(s): colour"),
            ({"b": 1, "a": 2}, "unknown option(s): a, b"),
            ({"kind": "system_reminder"}, "unknown option(s): kind"),
            ({"ttl": 2}, "unknown option(s): ttl"),
        ],
    )
    def test_unknown_key_rmd_001(self, extra: dict[str, Any], expected: str) -> None:
        d = {**Reminder(body="x").to_dict(), **extra}
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict(d)
        assert info.value.code == "RMD-001"
        assert expected in info.value.message

    @pytest.mark.parametrize("value", ["sideways", "ALL", 3, None])
    def test_bad_propagate_rmd_005(self, value: Any) -> None:
        d = {**Reminder(body="x").to_dict(), "propagate": value}
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict(d)
        assert info.value.code == "RMD-005"
        assert "propagate" in info.value.message

    @pytest.mark.parametrize("data", [None, [], [("body", "x")], "body", 1, ("body",)])
    def test_not_a_mapping_rmd_001(self, data: Any) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict(data)
        assert info.value.code == "RMD-001"

    def test_missing_body_rmd_001(self) -> None:
        d = Reminder(body="x").to_dict()
        del d["body"]
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict(d)
        assert info.value.code == "RMD-001"
        assert "body" in info.value.message

    def test_empty_mapping_rmd_001(self) -> None:
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict({})
        assert info.value.code == "RMD-001"
        assert "body" in info.value.message

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("body", "   "),
            ("body", 5),
            ("ttl_turns", 0),
            ("ttl_turns", "2"),
            ("ttl_turns", True),
            ("tags", "a"),
            ("tags", [""]),
            ("tags", [1]),
            ("authority", "boss"),
            ("role_hint", "user"),
            ("source", "cli"),
            ("fired_at_turn", -1),
            ("preserve_on_compact", "false"),
            ("dedupe_key", 1),
        ],
    )
    def test_bad_values_rmd_001_naming_key(self, key: str, value: Any) -> None:
        d = {**Reminder(body="x").to_dict(), key: value}
        with pytest.raises(ReminderError) as info:
            Reminder.from_dict(d)
        assert info.value.code == "RMD-001"
        assert key in info.value.message

    def test_is_the_inverse_for_a_mapping_subclass(self) -> None:
        class Payload(Mapping[str, Any]):
            def __init__(self, data: dict[str, Any]) -> None:
                self._data = data

            def __getitem__(self, key: str) -> Any:
                return self._data[key]

            def __iter__(self) -> Any:
                return iter(self._data)

            def __len__(self) -> int:
                return len(self._data)

        r = full_reminder()
        assert Reminder.from_dict(Payload(r.to_dict())) == r
