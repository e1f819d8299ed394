"""ReminderError, explain(), strict option validation (docs/core.md, "Reminder options") and
lint_reminder_options."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from agent_reminders import (
    Authority,
    Diagnostic,
    Propagate,
    Reminder,
    ReminderError,
    RoleHint,
    Source,
    Transcript,
    explain,
    inject_reminder,
    lint_reminder_options,
)

ALL_CODES = [f"RMD-00{n}" for n in range(1, 10)]


def inject(options: Any) -> Reminder:
    """Run the public strict API and return the reminder it queued."""
    done = inject_reminder(Transcript(), options)
    assert len(done.transcript.reminders) == 1
    reminder = done.transcript.reminders[0]
    assert reminder.id == done.reminder_id
    return reminder


def reject(options: Any) -> ReminderError:
    """Run the public strict API and return the ReminderError it raised."""
    with pytest.raises(ReminderError) as info:
        inject_reminder(Transcript(), options)
    return info.value


# --------------------------------------------------------------------------- ReminderError


class TestReminderError:
    def test_is_value_error(self) -> None:
        assert issubclass(ReminderError, ValueError)
        err = ReminderError("RMD-001", "unknown option(s): colour")
        assert isinstance(err, ValueError)

    def test_code_and_message_attributes(self) -> None:
        err = ReminderError("RMD-005", "propagate must be one of all, session, none")
        assert err.code == "RMD-005"
        assert err.message == "propagate must be one of all, session, none"

    @pytest.mark.parametrize("code", ALL_CODES)
    def test_str_is_code_colon_message(self, code: str) -> None:
        err = ReminderError(code, "something is off")
        assert str(err) == f"{code}: something is off"

    def test_str_exact_example(self) -> None:
        assert str(ReminderError("RMD-001", "unknown option(s): colour")) == (
            "RMD-001: unknown option(s): colour"
        )

    def test_can_be_caught_as_value_error(self) -> None:
        with pytest.raises(ValueError, match=r"^RMD-001: unknown option\(s\): nope$"):
            inject_reminder(Transcript(), {"body": "x", "nope": 1})

    @pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
    def test_pickle_round_trip(self, protocol: int) -> None:
        err = ReminderError("RMD-004", "preserve_on_compact=False without ttl_turns")
        clone = pickle.loads(pickle.dumps(err, protocol=protocol))
        assert type(clone) is ReminderError
        assert clone.code == "RMD-004"
        assert clone.message == "preserve_on_compact=False without ttl_turns"
        assert str(clone) == str(err)
        assert clone.args == err.args

    def test_pickle_round_trip_of_raised_error(self) -> None:
        err = reject({"body": "x", "propagate": "sideways"})
        clone = pickle.loads(pickle.dumps(err))
        assert (clone.code, clone.message, str(clone)) == (err.code, err.message, str(err))
        assert clone.code == "RMD-005"


# --------------------------------------------------------------------------------- explain


class TestExplain:
    @pytest.mark.parametrize("code", ALL_CODES)
    def test_every_code_has_a_paragraph_starting_with_the_code(self, code: str) -> None:
        text = explain(code)
        assert isinstance(text, str)
        assert text.startswith(code)
        # A paragraph, not just the code echoed back.
        assert len(text.strip()) > len(code) + 20
        assert text.strip() != code

    def test_paragraphs_are_distinct(self) -> None:
        texts = [explain(code) for code in ALL_CODES]
        assert len(set(texts)) == len(ALL_CODES)

    @pytest.mark.parametrize(
        ("given", "canonical"),
        [
            ("rmd-004", "RMD-004"),
            ("Rmd-004", "RMD-004"),
            ("RMD-004", "RMD-004"),
            ("harn-rmd-004", "RMD-004"),
            ("HARN-RMD-004", "RMD-004"),
            ("Harn-Rmd-004", "RMD-004"),
            ("harn-RMD-001", "RMD-001"),
            ("HARN-rmd-009", "RMD-009"),
        ],
    )
    def test_accepts_any_case_and_harn_prefix(self, given: str, canonical: str) -> None:
        text = explain(given)
        assert text == explain(canonical)
        assert text.startswith(canonical)

    def test_content_matches_the_code_meaning(self) -> None:
        assert "propagate" in explain("RMD-005")
        assert "ttl_turns" in explain("RMD-004")
        assert "retired" in explain("RMD-003").lower()

    @pytest.mark.parametrize(
        "code",
        ["RMD-010", "RMD-000", "RMD-1", "RMD001", "HARN-", "harn-rmd-010", "", "XYZ-001", "rmd"],
    )
    def test_unknown_code_raises_key_error(self, code: str) -> None:
        with pytest.raises(KeyError):
            explain(code)

    @pytest.mark.parametrize("code", [None, 1, 4.0, b"RMD-001", ["RMD-001"]])
    def test_non_str_raises_type_error(self, code: object) -> None:
        with pytest.raises(TypeError):
            explain(code)  # type: ignore[arg-type]


# ------------------------------------------------------------------ step 1: options mapping


class TestOptionsMapping:
    @pytest.mark.parametrize(
        "options", [None, [], [("body", "x")], "body", 1, ("body", "x"), {"body"}]
    )
    def test_missing_or_not_a_mapping_is_rmd_001(self, options: object) -> None:
        assert reject(options).code == "RMD-001"

    def test_any_mapping_is_accepted(self) -> None:
        reminder = inject(MappingProxyType({"body": "Run the tests."}))
        assert reminder.body == "Run the tests."

    def test_custom_mapping_is_accepted(self) -> None:
        class Opts(Mapping[str, Any]):
            def __init__(self, data: dict[str, Any]) -> None:
                self._data = data

            def __getitem__(self, key: str) -> Any:
                return self._data[key]

            def __iter__(self) -> Any:
                return iter(self._data)

            def __len__(self) -> int:
                return len(self._data)

        reminder = inject(Opts({"body": "b", "ttl_turns": 2}))
        assert (reminder.body, reminder.ttl_turns) == ("b", 2)

    def test_input_is_not_mutated(self) -> None:
        options = {"body": " b ", "tags": [" a ", "a"], "dedupe_key": " k "}
        snapshot = {"body": " b ", "tags": [" a ", "a"], "dedupe_key": " k "}
        inject(options)
        assert options == snapshot


# --------------------------------------------------------------------- step 2: unknown keys


class TestUnknownKeys:
    @pytest.mark.parametrize(
        ("extra", "expected"),
        [
            ({"colour": "red"}, "unknown option(s): colour"),
            ({"b": 1, "a": 2}, "unknown option(s): a, b"),
            ({"zeta": 1, "alpha": 2, "mid": 3}, "unknown option(s): alpha, mid, zeta"),
            ({"ttl": 2}, "unknown option(s): ttl"),
            ({"source": "hook"}, "unknown option(s): source"),
            ({"id": "x"}, "unknown option(s): id"),
            ({"fired_at_turn": 1}, "unknown option(s): fired_at_turn"),
            ({"content": "x"}, "unknown option(s): content"),
            ({"Body": "x"}, "unknown option(s): Body"),
        ],
    )
    def test_unknown_keys_rmd_001_sorted(self, extra: dict[str, Any], expected: str) -> None:
        err = reject({"body": "x", **extra})
        assert err.code == "RMD-001"
        assert expected in err.message
        assert str(err) == f"RMD-001: {err.message}"

    def test_exact_message_for_two_unknown_keys(self) -> None:
        err = reject({"b": 1, "body": "x", "a": 1})
        assert err.message == "unknown option(s): a, b"

    def test_unknown_keys_without_body_still_reports_unknown(self) -> None:
        err = reject({"colour": "red"})
        assert err.code == "RMD-001"
        assert "unknown option(s): colour" in err.message

    @pytest.mark.parametrize(
        "key",
        [
            "body",
            "tags",
            "dedupe_key",
            "ttl_turns",
            "preserve_on_compact",
            "propagate",
            "role_hint",
            "authority",
        ],
    )
    def test_every_allowed_key_is_known(self, key: str) -> None:
        # None is "not given" for every key but body.
        options: dict[str, Any] = {"body": "x"}
        if key != "body":
            options[key] = None
        assert inject(options).body == "x"

    def test_all_allowed_keys_together(self) -> None:
        reminder = inject(
            {
                "body": "Use the staging database.",
                "tags": ["db", "env"],
                "dedupe_key": "db-target",
                "ttl_turns": 3,
                "preserve_on_compact": True,
                "propagate": "all",
                "role_hint": "developer",
                "authority": "corrective",
            }
        )
        assert reminder.body == "Use the staging database."
        assert reminder.tags == ("db", "env")
        assert reminder.dedupe_key == "db-target"
        assert reminder.ttl_turns == 3
        assert reminder.preserve_on_compact is True
        assert reminder.propagate is Propagate.ALL
        assert reminder.role_hint is RoleHint.DEVELOPER
        assert reminder.authority is Authority.CORRECTIVE


# ----------------------------------------------------------------------------- step 3: tags


class TestTags:
    @pytest.mark.parametrize(
        ("tags", "expected"),
        [
            (None, ()),
            ([], ()),
            ((), ()),
            (["a"], ("a",)),
            (("a", "b"), ("a", "b")),
            (["a", "a"], ("a",)),
            ([" a ", "a", "b"], ("a", "b")),
            (["b", "a", "b", "c", "a"], ("b", "a", "c")),
            (["\tx\n", "y "], ("x", "y")),
            (["two words"], ("two words",)),
        ],
    )
    def test_valid_tags_are_stripped_and_deduplicated(
        self, tags: Any, expected: tuple[str, ...]
    ) -> None:
        reminder = inject({"body": "x", "tags": tags})
        assert reminder.tags == expected
        assert type(reminder.tags) is tuple

    @pytest.mark.parametrize(
        "tags",
        [
            "a",
            "a,b",
            {"a"},
            {"a": 1},
            1,
            True,
            ["a", 1],
            [None],
            [b"a"],
            ["a", ""],
            ["   "],
            ["\n\t"],
            [["a"]],
        ],
    )
    def test_bad_tags_rmd_001_naming_tags(self, tags: Any) -> None:
        err = reject({"body": "x", "tags": tags})
        assert err.code == "RMD-001"
        assert "tags" in err.message


# ----------------------------------------------------------------------- step 4: dedupe_key


class TestDedupeKey:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, None),
            ("k", "k"),
            ("  k  ", "k"),
            ("\tkey one\n", "key one"),
            ("", None),
            ("   ", None),
            ("\n\t", None),
        ],
    )
    def test_stripped_and_blank_becomes_none(self, value: Any, expected: str | None) -> None:
        assert inject({"body": "x", "dedupe_key": value}).dedupe_key == expected

    @pytest.mark.parametrize("value", [1, 0, False, 1.5, ["k"], {"k": 1}, b"k"])
    def test_non_str_rmd_001_naming_dedupe_key(self, value: Any) -> None:
        err = reject({"body": "x", "dedupe_key": value})
        assert err.code == "RMD-001"
        assert "dedupe_key" in err.message


# ------------------------------------------------------------------------ step 5: ttl_turns


class TestTtlTurns:
    @pytest.mark.parametrize(
        ("value", "expected"), [(None, None), (1, 1), (2, 2), (10_000, 10_000)]
    )
    def test_valid(self, value: Any, expected: int | None) -> None:
        reminder = inject({"body": "x", "ttl_turns": value})
        assert reminder.ttl_turns == expected
        if expected is not None:
            assert type(reminder.ttl_turns) is int

    @pytest.mark.parametrize(
        "value", [True, False, 1.0, 2.5, 0, -1, -100, "2", "1", [1], float("nan"), 0.0]
    )
    def test_invalid_rmd_001_naming_ttl_turns(self, value: Any) -> None:
        err = reject({"body": "x", "ttl_turns": value})
        assert err.code == "RMD-001"
        assert "ttl_turns" in err.message


# -------------------------------------------------------------- step 6: preserve_on_compact


class TestPreserveOnCompact:
    @pytest.mark.parametrize(("value", "expected"), [(None, False), (False, False), (True, True)])
    def test_valid(self, value: Any, expected: bool) -> None:
        assert inject({"body": "x", "preserve_on_compact": value}).preserve_on_compact is expected

    @pytest.mark.parametrize("value", [1, 0, "true", "false", "", 1.0, [True]])
    def test_invalid_rmd_001_naming_key(self, value: Any) -> None:
        err = reject({"body": "x", "preserve_on_compact": value})
        assert err.code == "RMD-001"
        assert "preserve_on_compact" in err.message


# ------------------------------------------------------------------------ step 7: propagate


class TestPropagate:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, Propagate.SESSION),
            ("all", Propagate.ALL),
            ("session", Propagate.SESSION),
            ("none", Propagate.NONE),
            (Propagate.ALL, Propagate.ALL),
            (Propagate.NONE, Propagate.NONE),
        ],
    )
    def test_valid(self, value: Any, expected: Propagate) -> None:
        reminder = inject({"body": "x", "propagate": value})
        assert reminder.propagate is expected

    @pytest.mark.parametrize(
        "value", ["sideways", "", "ALL", "children", 1, 0, True, ["all"], "contract"]
    )
    def test_invalid_is_rmd_005(self, value: Any) -> None:
        err = reject({"body": "x", "propagate": value})
        assert err.code == "RMD-005"
        assert "propagate" in err.message


# ------------------------------------------------------------- step 8: role_hint, authority


ROLE_HINT_VALUES = ["system", "developer", "user_block", "ephemeral_cache"]
AUTHORITY_VALUES = ["contract", "corrective", "advisory"]


class TestRoleHintAndAuthority:
    @pytest.mark.parametrize("value", ROLE_HINT_VALUES)
    def test_role_hint_valid(self, value: str) -> None:
        reminder = inject({"body": "x", "role_hint": value})
        assert reminder.role_hint is RoleHint(value)

    def test_role_hint_default(self) -> None:
        assert inject({"body": "x", "role_hint": None}).role_hint is RoleHint.SYSTEM

    @pytest.mark.parametrize("value", AUTHORITY_VALUES)
    def test_authority_valid(self, value: str) -> None:
        reminder = inject({"body": "x", "authority": value})
        assert reminder.authority is Authority(value)

    def test_authority_default(self) -> None:
        assert inject({"body": "x", "authority": None}).authority is Authority.CONTRACT

    @pytest.mark.parametrize("value", ["assistant", "user", "", "SYSTEM", 1, True, ["system"]])
    def test_role_hint_invalid_names_allowed_values(self, value: Any) -> None:
        err = reject({"body": "x", "role_hint": value})
        assert err.code == "RMD-001"
        assert "role_hint" in err.message
        for allowed in ROLE_HINT_VALUES:
            assert allowed in err.message

    @pytest.mark.parametrize("value", ["boss", "", "CONTRACT", "high", 0, False, ["advisory"]])
    def test_authority_invalid_names_allowed_values(self, value: Any) -> None:
        err = reject({"body": "x", "authority": value})
        assert err.code == "RMD-001"
        assert "authority" in err.message
        for allowed in AUTHORITY_VALUES:
            assert allowed in err.message


# ----------------------------------------------------------------------------- step 9: body


class TestBody:
    @pytest.mark.parametrize(
        "options",
        [
            {},
            {"body": None},
            {"body": ""},
            {"body": "   "},
            {"body": "\n\t "},
            {"body": 1},
            {"body": b"hello"},
            {"body": ["hello"]},
            {"body": {"text": "hello"}},
            {"tags": ["a"]},
        ],
    )
    def test_missing_non_str_or_blank_body_rmd_001(self, options: dict[str, Any]) -> None:
        err = reject(options)
        assert err.code == "RMD-001"
        assert "body" in err.message

    @pytest.mark.parametrize(
        "body", ["  hi \n", "hi", "\n\nline one\nline two\n", "  x", "tab\t", "ünïcode ✓"]
    )
    def test_body_kept_exactly_as_given(self, body: str) -> None:
        assert inject({"body": body}).body == body


# ------------------------------------------------------------------ defaults via the strict API


def test_strict_api_defaults() -> None:
    reminder = inject({"body": "x"})
    assert reminder.tags == ()
    assert reminder.dedupe_key is None
    assert reminder.ttl_turns is None
    assert reminder.preserve_on_compact is False
    assert reminder.propagate is Propagate.SESSION
    assert reminder.role_hint is RoleHint.SYSTEM
    assert reminder.authority is Authority.CONTRACT
    assert reminder.source is Source.IN_PIPELINE
    assert reminder.fired_at_turn == 0
    assert reminder.originating_agent_id is None


# ------------------------------------------------------------------------------ check order

# Checks 2..9 of docs/core.md ("Reminder options"), each with a way to break it and what the
# failure looks like:
# (name, options patch, expected code, substring that must be in the message).
_STEPS: list[tuple[str, dict[str, Any], str, str]] = [
    ("unknown", {"colour": "red"}, "RMD-001", "unknown option(s): colour"),
    ("tags", {"tags": [""]}, "RMD-001", "tags"),
    ("dedupe_key", {"dedupe_key": 7}, "RMD-001", "dedupe_key"),
    ("ttl_turns", {"ttl_turns": 0}, "RMD-001", "ttl_turns"),
    ("preserve_on_compact", {"preserve_on_compact": 1}, "RMD-001", "preserve_on_compact"),
    ("propagate", {"propagate": "sideways"}, "RMD-005", "propagate"),
    ("role_hint", {"role_hint": "narrator"}, "RMD-001", "role_hint"),
    ("authority", {"authority": "boss"}, "RMD-001", "authority"),
    ("body", {"body": "   "}, "RMD-001", "body"),
]
_PAIRS = [
    pytest.param(first, second, id=f"{first[0]}-before-{second[0]}")
    for i, first in enumerate(_STEPS)
    for second in _STEPS[i + 1 :]
]


class TestCheckOrder:
    @pytest.mark.parametrize("step", [pytest.param(step, id=step[0]) for step in _STEPS])
    def test_each_step_alone(self, step: tuple[str, dict[str, Any], str, str]) -> None:
        _, patch, code, needle = step
        err = reject({"body": "ok", **patch})
        assert err.code == code
        assert needle in err.message

    @pytest.mark.parametrize(("first", "second"), _PAIRS)
    def test_earlier_step_wins(
        self,
        first: tuple[str, dict[str, Any], str, str],
        second: tuple[str, dict[str, Any], str, str],
    ) -> None:
        options: dict[str, Any] = {"body": "ok", **first[1], **second[1]}
        err = reject(options)
        assert err.code == first[2]
        assert first[3] in err.message
        assert second[0] not in err.message

    def test_all_steps_broken_reports_unknown_keys(self) -> None:
        options: dict[str, Any] = {}
        for _, patch, _, _ in _STEPS:
            options.update(patch)
        err = reject(options)
        assert err.code == "RMD-001"
        assert err.message == "unknown option(s): colour"

    def test_unknown_key_and_bad_propagate_is_rmd_001(self) -> None:
        err = reject({"body": "x", "propagate": "bogus", "zzz": 1})
        assert err.code == "RMD-001"
        assert "unknown option(s): zzz" in err.message

    def test_bad_tags_and_bad_propagate_is_rmd_001_for_tags(self) -> None:
        err = reject({"body": "x", "tags": "not-a-list", "propagate": "bogus"})
        assert err.code == "RMD-001"
        assert "tags" in err.message

    def test_bad_propagate_and_missing_body_is_rmd_005(self) -> None:
        err = reject({"propagate": "bogus"})
        assert err.code == "RMD-005"
        assert "propagate" in err.message

    def test_bad_ttl_and_bad_body_mentions_ttl_turns(self) -> None:
        err = reject({"body": "", "ttl_turns": -1})
        assert err.code == "RMD-001"
        assert "ttl_turns" in err.message
        assert "body" not in err.message

    def test_bad_authority_and_missing_body_mentions_authority(self) -> None:
        err = reject({"authority": "boss"})
        assert err.code == "RMD-001"
        assert "authority" in err.message

    def test_failed_validation_does_not_touch_transcript(self) -> None:
        transcript = inject_reminder(Transcript(), {"body": "first"}).transcript
        with pytest.raises(ReminderError):
            inject_reminder(transcript, {"body": "second", "ttl_turns": 0})
        assert [r.body for r in transcript.reminders] == ["first"]


# ------------------------------------------------------------------- lint_reminder_options


class TestLintReminderOptions:
    @pytest.mark.parametrize(
        "options",
        [
            {"preserve_on_compact": False},
            {"preserve_on_compact": False, "ttl_turns": None},
            {"body": "x", "preserve_on_compact": False},
            {"body": "x", "preserve_on_compact": False, "tags": ["a"], "ttl_turns": None},
        ],
    )
    def test_rmd_004_when_discardable_without_ttl(self, options: dict[str, Any]) -> None:
        found = lint_reminder_options(options)
        assert len(found) == 1
        diag = found[0]
        assert isinstance(diag, Diagnostic)
        assert diag.code == "RMD-004"
        assert diag.severity == "warning"
        assert isinstance(diag.message, str)
        assert "preserve_on_compact" in diag.message
        assert "ttl_turns" in diag.message

    @pytest.mark.parametrize(
        "options",
        [
            {},
            {"body": "x"},
            {"preserve_on_compact": None},
            {"preserve_on_compact": True},
            {"preserve_on_compact": True, "ttl_turns": None},
            {"preserve_on_compact": False, "ttl_turns": 3},
            {"preserve_on_compact": False, "ttl_turns": 1},
            {"preserve_on_compact": None, "ttl_turns": None},
            {"ttl_turns": 2},
            # Only the literal False counts.
            {"preserve_on_compact": 0},
            {"preserve_on_compact": ""},
        ],
    )
    def test_no_finding(self, options: dict[str, Any]) -> None:
        assert lint_reminder_options(options) == []

    def test_returns_a_list(self) -> None:
        assert type(lint_reminder_options({})) is list
        assert type(lint_reminder_options({"preserve_on_compact": False})) is list

    def test_accepts_any_mapping(self) -> None:
        found = lint_reminder_options(MappingProxyType({"preserve_on_compact": False}))
        assert [d.code for d in found] == ["RMD-004"]

    def test_does_not_raise_on_otherwise_invalid_options(self) -> None:
        # Lint reports smells; it is not the strict validator.
        found = lint_reminder_options({"preserve_on_compact": False, "colour": "red"})
        assert [d.code for d in found] == ["RMD-004"]

    @pytest.mark.parametrize("options", [None, [], "preserve_on_compact", 1, [("a", 1)]])
    def test_non_mapping_raises_type_error(self, options: Any) -> None:
        with pytest.raises(TypeError):
            lint_reminder_options(options)

    def test_does_not_mutate_input(self) -> None:
        options = {"preserve_on_compact": False}
        lint_reminder_options(options)
        assert options == {"preserve_on_compact": False}


class TestDiagnostic:
    def test_fields(self) -> None:
        diag = Diagnostic(code="RMD-007", severity="info", message="nine providers")
        assert (diag.code, diag.severity, diag.message) == ("RMD-007", "info", "nine providers")
        assert [f.name for f in dataclasses.fields(Diagnostic)] == ["code", "severity", "message"]

    def test_frozen(self) -> None:
        diag = Diagnostic(code="RMD-004", severity="warning", message="m")
        with pytest.raises(dataclasses.FrozenInstanceError):
            diag.code = "RMD-001"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            diag.severity = "error"  # type: ignore[misc]
        assert diag.code == "RMD-004"

    def test_value_equality(self) -> None:
        a = Diagnostic(code="RMD-004", severity="warning", message="m")
        b = Diagnostic(code="RMD-004", severity="warning", message="m")
        assert a == b
        assert hash(a) == hash(b)
        assert a != Diagnostic(code="RMD-004", severity="info", message="m")

    def test_lint_findings_are_equal_across_calls(self) -> None:
        first = lint_reminder_options({"preserve_on_compact": False})
        second = lint_reminder_options({"preserve_on_compact": False})
        assert first == second
