"""The six self-contained canonical providers (docs/session-loop.md, "Canonical providers"): when
they fire and what they say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from agent_reminders.config import ReminderOptions, Workspace
from agent_reminders.providers import (
    idle_nudge,
    parse_reminder_options,
    post_compact_recap,
    resume_continuity,
    token_pressure,
    tool_output_truncated,
    workspace_anchor,
)
from agent_reminders.providers.base import ProviderContext, ProviderSpec

MODULES = [
    token_pressure,
    idle_nudge,
    tool_output_truncated,
    post_compact_recap,
    resume_continuity,
    workspace_anchor,
]
LIFECYCLE_KEYS = {
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
}
ODD_PAYLOADS: list[Any] = [
    {},
    None,
    "text",
    42,
    ["a"],
    {"context_tokens": "many", "context_window": None},
    {"wake_interval_ms": None, "truncated": "yes", "result": "x", "archived_messages": "3"},
    {"usage": ["input_tokens"], "result": {"truncated": 1}, "archived_messages": True},
]


def ctx(
    event: str,
    payload: Any = None,
    *,
    config: Mapping[str, Any] | None = None,
    workspace: Any = None,
) -> ProviderContext:
    return ProviderContext(
        event=event,
        session_id="s",
        payload={} if payload is None else payload,
        options=ReminderOptions(),
        config=config,
        workspace=workspace,
    )


def fired(result: Mapping[str, Any] | None) -> dict[str, Any]:
    """Assert a single strict reminder mapping with every lifecycle key set, and return it."""
    assert result is not None
    assert isinstance(result, dict)
    assert set(result) == LIFECYCLE_KEYS
    parsed = parse_reminder_options(result)
    assert parsed.body == result["body"]
    assert result["body"].strip()
    return result


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("module", "provider_id", "events"),
    [
        (token_pressure, "token_pressure", ("on_budget_threshold",)),
        (idle_nudge, "idle_nudge", ("session_idle",)),
        (tool_output_truncated, "tool_output_truncated", ("post_tool_use",)),
        (post_compact_recap, "post_compact_recap", ("post_compact",)),
        (resume_continuity, "resume_continuity", ("worker_resumed",)),
        (workspace_anchor, "workspace_anchor", ("session_start", "on_budget_threshold")),
    ],
)
def test_provider_metadata(module: Any, provider_id: str, events: tuple[str, ...]) -> None:
    spec = module.PROVIDER
    assert isinstance(spec, ProviderSpec)
    assert spec.id == provider_id
    assert spec.subscribes_to == events
    assert spec.canonical is True
    assert spec.evaluate is module.evaluate
    assert spec.description.strip()
    assert "\n" not in spec.description


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("payload", ODD_PAYLOADS)
def test_odd_payloads_never_raise(module: Any, payload: Any) -> None:
    event = module.PROVIDER.subscribes_to[0]
    result = module.evaluate(ctx(event, payload, config={"context_window": "big"}))
    if module is resume_continuity:
        # resume_continuity always fires; odd fields are stated as unknown.
        assert "unknown turn" in fired(result)["body"]
    else:
        assert result is None


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("config", [None, {}, "odd", {"idle_seconds": "x", "context_window": -5}])
def test_odd_config_never_raises(module: Any, config: Any) -> None:
    event = module.PROVIDER.subscribes_to[0]
    result = module.evaluate(ctx(event, {"context_tokens": 10}, config=config))
    if module is resume_continuity:
        assert fired(result)
    else:
        assert result is None


# ---------------------------------------------------------------- token_pressure


def pressure(payload: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    return token_pressure.evaluate(ctx("on_budget_threshold", payload, config=config))


@pytest.mark.parametrize(
    ("used", "level"),
    [
        (139_999, None),
        (140_000, "CAUTION"),
        (169_999, "CAUTION"),
        (170_000, "WARNING"),
        (189_999, "WARNING"),
        (190_000, "CRITICAL"),
        (200_000, "CRITICAL"),
        (250_000, "CRITICAL"),
        (0, None),
    ],
)
def test_token_pressure_threshold_boundaries(used: int, level: str | None) -> None:
    result = pressure({"context_tokens": used, "context_window": 200_000})
    if level is None:
        assert result is None
        return
    reminder = fired(result)
    assert level in reminder["body"]
    assert f"{used}/200000 tokens" in reminder["body"]
    for other in {"CAUTION", "WARNING", "CRITICAL"} - {level}:
        assert other not in reminder["body"]


@pytest.mark.parametrize(("used", "window"), [(7, 10), (17, 20), (19, 20), (70, 100), (95, 100)])
def test_token_pressure_exact_ratios_fire_despite_float_rounding(used: int, window: int) -> None:
    assert fired(pressure({"context_tokens": used, "context_window": window}))


@pytest.mark.parametrize(
    ("used", "percent"), [(174_000, "87%"), (140_000, "70%"), (190_000, "95%"), (175_000, "88%")]
)
def test_token_pressure_body_states_rounded_percent(used: int, percent: str) -> None:
    body = fired(pressure({"context_tokens": used, "context_window": 200_000}))["body"]
    assert percent in body
    assert f"{used}/200000 tokens" in body
    assert "compact" in body.lower()
    assert "summarize" in body.lower()


@pytest.mark.parametrize(
    ("used", "preserve"), [(140_000, False), (170_000, False), (190_000, True)]
)
def test_token_pressure_lifecycle(used: int, preserve: bool) -> None:
    reminder = fired(pressure({"context_tokens": used, "context_window": 200_000}))
    assert reminder["tags"] == ["token_pressure"]
    assert reminder["dedupe_key"] == "token_pressure"
    assert reminder["ttl_turns"] == 2
    assert reminder["role_hint"] == "developer"
    assert reminder["authority"] == "contract"
    assert reminder["propagate"] == "session"
    assert reminder["preserve_on_compact"] is preserve


def test_token_pressure_live_token_precedence() -> None:
    window = {"context_window": 100}
    full: dict[str, Any] = {
        "context_tokens": 96,
        "prompt_tokens": 86,
        "usage": {"input_tokens": 71, "output_tokens": 1},
        "tokens_used": 75,
        **window,
    }
    assert "96/100" in fired(pressure(full))["body"]
    without_context = {k: v for k, v in full.items() if k != "context_tokens"}
    assert "86/100" in fired(pressure(without_context))["body"]
    without_prompt = {k: v for k, v in without_context.items() if k != "prompt_tokens"}
    # usage: input_tokens plus output_tokens
    assert "72/100" in fired(pressure(without_prompt))["body"]
    without_usage = {k: v for k, v in without_prompt.items() if k != "usage"}
    assert "75/100" in fired(pressure(without_usage))["body"]
    assert pressure(window) is None


def test_token_pressure_usage_without_output_tokens() -> None:
    body = fired(pressure({"usage": {"input_tokens": 80}, "context_window": 100}))["body"]
    assert "80/100" in body
    assert "CAUTION" in body


def test_token_pressure_invalid_sources_fall_through() -> None:
    payload = {
        "context_tokens": True,
        "prompt_tokens": 90.0,
        "usage": {"input_tokens": "80", "output_tokens": 5},
        "tokens_used": 99,
        "context_window": 100,
    }
    assert "99/100" in fired(pressure(payload))["body"]
    assert pressure({"context_tokens": -1, "context_window": 100}) is None
    assert pressure({"usage": {"output_tokens": 99}, "context_window": 100}) is None


def test_token_pressure_bool_is_not_a_token_count() -> None:
    assert pressure({"tokens_used": True, "context_window": 1}) is None


def test_token_pressure_config_window_fallback() -> None:
    body = fired(pressure({"context_tokens": 900}, {"context_window": 1000}))["body"]
    assert "900/1000" in body
    assert "WARNING" in body
    # The payload window wins over the config window.
    body = fired(pressure({"context_tokens": 900, "context_window": 950}, {"context_window": 10}))[
        "body"
    ]
    assert "900/950" in body
    # An unusable payload window falls back to the config.
    assert (
        "900/1000"
        in fired(
            pressure({"context_tokens": 900, "context_window": "x"}, {"context_window": 1000})
        )["body"]
    )


@pytest.mark.parametrize(
    ("payload", "config"),
    [
        ({"context_tokens": 190_000}, None),
        ({"context_tokens": 190_000}, {}),
        ({"context_tokens": 190_000, "context_window": 0}, None),
        ({"context_tokens": 190_000, "context_window": -10}, {"context_window": 0}),
        ({"context_tokens": 190_000, "context_window": 200_000.0}, None),
        ({"context_tokens": 190_000, "context_window": True}, None),
    ],
)
def test_token_pressure_no_window_no_fire(payload: Any, config: Any) -> None:
    assert pressure(payload, config) is None


def test_token_pressure_helpers() -> None:
    assert token_pressure.live_tokens({"usage": {"input_tokens": 3, "output_tokens": 4}}) == 7
    assert token_pressure.live_tokens(None) is None
    assert token_pressure.context_window({}, {"context_window": 5}) == 5
    assert token_pressure.context_window(None, None) is None


# ---------------------------------------------------------------- idle_nudge


def idle(payload: Any, config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    return idle_nudge.evaluate(ctx("session_idle", payload, config=config))


@pytest.mark.parametrize(
    ("wake_ms", "config", "fires"),
    [
        (59_999, None, False),
        (60_000, None, True),
        (61_500, {}, True),
        (9_999, {"idle_seconds": 10}, False),
        (10_000, {"idle_seconds": 10}, True),
        (4_999, {"seconds": 5}, False),
        (5_000, {"seconds": 5}, True),
        (5_000, {"idle_seconds": 30, "seconds": 5}, False),
        (30_000, {"idle_seconds": 30, "seconds": 5}, True),
        (999, {"idle_seconds": 0}, False),
        (1_000, {"idle_seconds": 0}, True),
        (1_000, {"idle_seconds": -5}, True),
        (999, {"seconds": 0.2}, False),
        (2_500, {"idle_seconds": 2.5}, True),
        (2_499, {"idle_seconds": 2.5}, False),
        (60_000, {"idle_seconds": "10"}, True),
        (10_000, {"idle_seconds": "10"}, False),
        (60_000, {"idle_seconds": True}, True),
        (1_000, {"idle_seconds": float("nan")}, False),
    ],
)
def test_idle_nudge_threshold(wake_ms: int, config: Any, fires: bool) -> None:
    result = idle({"wake_interval_ms": wake_ms}, config)
    if fires:
        assert fired(result)
    else:
        assert result is None


def test_idle_nudge_body_and_lifecycle() -> None:
    reminder = fired(idle({"wake_interval_ms": 125_999}))
    assert "125 seconds" in reminder["body"]
    assert "re-check" in reminder["body"]
    assert reminder["tags"] == ["idle"]
    assert reminder["dedupe_key"] == "idle_nudge"
    assert reminder["ttl_turns"] == 1
    assert reminder["propagate"] == "none"
    assert reminder["preserve_on_compact"] is False
    assert reminder["role_hint"] == "system"
    assert reminder["authority"] == "contract"


def test_idle_nudge_float_interval_is_whole_seconds() -> None:
    assert "61 seconds" in fired(idle({"wake_interval_ms": 61_999.9}))["body"]


@pytest.mark.parametrize("wake", [None, True, "70000", float("inf"), -70_000, [70_000]])
def test_idle_nudge_bad_interval(wake: Any) -> None:
    assert idle({"wake_interval_ms": wake}) is None


def test_idle_nudge_huge_interval() -> None:
    assert f"{10**30} seconds" in fired(idle({"wake_interval_ms": 10**33}))["body"]


# ---------------------------------------------------------------- tool_output_truncated


def truncation(payload: Any) -> dict[str, Any] | None:
    return tool_output_truncated.evaluate(ctx("post_tool_use", payload))


def test_truncated_top_level_flag() -> None:
    reminder = fired(
        truncation({"tool_name": "read_file", "truncated": True, "original_size": 123_456})
    )
    assert "read_file" in reminder["body"]
    assert "123456 characters" in reminder["body"]
    assert "smaller pieces" in reminder["body"]
    assert reminder["tags"] == ["truncation"]
    assert reminder["dedupe_key"] == "tool_output_truncated:read_file"
    assert reminder["ttl_turns"] == 1
    assert reminder["propagate"] == "none"
    assert reminder["preserve_on_compact"] is False
    assert reminder["role_hint"] == "system"
    assert reminder["authority"] == "contract"


def test_truncated_in_result() -> None:
    reminder = fired(
        truncation({"tool_name": "bash", "result": {"truncated": True, "original_size": 9000}})
    )
    assert "bash" in reminder["body"]
    assert "9000 characters" in reminder["body"]
    assert reminder["dedupe_key"] == "tool_output_truncated:bash"


def test_truncated_payload_size_wins_over_result_size() -> None:
    body = fired(
        truncation(
            {
                "tool_name": "grep",
                "truncated": True,
                "original_size": 500,
                "result": {"original_size": 700},
            }
        )
    )["body"]
    assert "500 characters" in body
    assert "700" not in body


def test_truncated_unknown_size() -> None:
    body = fired(truncation({"tool_name": "grep", "truncated": True, "original_size": "big"}))[
        "body"
    ]
    assert "unknown size" in body


def test_truncated_without_tool_name() -> None:
    reminder = fired(truncation({"truncated": True}))
    assert reminder["dedupe_key"] == "tool_output_truncated:unknown"
    assert "unknown" in reminder["body"]


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_name": "grep"},
        {"tool_name": "grep", "truncated": False},
        {"tool_name": "grep", "truncated": "true"},
        {"tool_name": "grep", "truncated": 1},
        {"tool_name": "grep", "result": {"truncated": False}},
        {"tool_name": "grep", "result": {"truncated": None}},
        {"tool_name": "grep", "result": ["truncated"]},
    ],
)
def test_not_truncated_no_fire(payload: Any) -> None:
    assert truncation(payload) is None


# ---------------------------------------------------------------- post_compact_recap


def recap(payload: Any) -> dict[str, Any] | None:
    return post_compact_recap.evaluate(ctx("post_compact", payload))


def test_recap_with_summary() -> None:
    reminder = fired(recap({"archived_messages": 12, "summary": "Fixed the parser; tests pass."}))
    assert "Fixed the parser; tests pass." in reminder["body"]
    assert reminder["tags"] == ["recap"]
    assert reminder["dedupe_key"] == "post_compact_recap"
    assert reminder["ttl_turns"] is None
    assert reminder["preserve_on_compact"] is True
    assert reminder["propagate"] == "session"
    assert reminder["role_hint"] == "system"
    assert reminder["authority"] == "contract"


@pytest.mark.parametrize("summary", [None, "", "   ", 7])
def test_recap_without_summary_states_the_count(summary: Any) -> None:
    body = fired(recap({"archived_messages": 37, "summary": summary}))["body"]
    assert "37" in body
    assert "archived" in body


def test_recap_is_deterministic() -> None:
    payload = {"archived_messages": 4, "summary": "Plan: refactor the loader."}
    assert recap(payload) == recap(dict(payload))
    assert recap({"archived_messages": 4}) == recap({"archived_messages": 4})


@pytest.mark.parametrize("archived", [0, -1, None, True, 2.0, "3"])
def test_recap_needs_archived_messages(archived: Any) -> None:
    assert recap({"archived_messages": archived, "summary": "something"}) is None


# ---------------------------------------------------------------- resume_continuity


def resume(payload: Any) -> dict[str, Any]:
    return fired(resume_continuity.evaluate(ctx("worker_resumed", payload)))


def test_resume_full_payload() -> None:
    reminder = resume(
        {
            "suspended_at_turn": 14,
            "reason": "waiting for CI",
            "initiator": "trigger",
            "trigger_id": "trg-7",
            "event_id": "evt-42",
            "input": "CI finished: green",
            "continue_transcript": False,
            "digest": "Refactored storage; two tests left.",
        }
    )
    body = reminder["body"]
    for fact in (
        "14",
        "waiting for CI",
        "trigger",
        "trg-7",
        "evt-42",
        "CI finished: green",
        "Refactored storage; two tests left.",
    ):
        assert fact in body
    assert reminder["tags"] == ["resume_continuity"]
    assert reminder["dedupe_key"] == "resume_continuity"
    assert reminder["ttl_turns"] == 1
    assert reminder["preserve_on_compact"] is True
    assert reminder["propagate"] == "none"
    assert reminder["role_hint"] == "system"
    assert reminder["authority"] == "contract"


@pytest.mark.parametrize("initiator", ["parent", "timeout", "trigger", "operator"])
def test_resume_names_each_initiator(initiator: str) -> None:
    body = resume({"suspended_at_turn": 3, "reason": "r", "initiator": initiator})["body"]
    assert initiator in body
    assert "turn 3" in body


def test_resume_unknown_initiator() -> None:
    body = resume({"suspended_at_turn": 3, "initiator": "mallory"})["body"]
    assert "mallory" not in body
    assert "unknown initiator" in body


@pytest.mark.parametrize("given", [None, "", "  "])
def test_resume_without_input(given: Any) -> None:
    body = resume({"suspended_at_turn": 1, "reason": "r", "initiator": "parent", "input": given})[
        "body"
    ]
    assert "No input was given" in body


def test_resume_structured_input() -> None:
    body = resume({"initiator": "operator", "input": {"b": 2, "a": "x"}})["body"]
    assert '{"a": "x", "b": 2}' in body


def test_resume_unrenderable_input_does_not_raise() -> None:
    loop: list[Any] = []
    loop.append(loop)
    body = resume({"initiator": "operator", "input": loop})["body"]
    assert "could not be rendered" in body


@pytest.mark.parametrize("continue_transcript", [True, None, "false", 0])
def test_resume_digest_only_when_transcript_not_continued(continue_transcript: Any) -> None:
    body = resume(
        {
            "suspended_at_turn": 2,
            "initiator": "parent",
            "continue_transcript": continue_transcript,
            "digest": "DIGEST-TEXT",
        }
    )["body"]
    assert "DIGEST-TEXT" not in body


def test_resume_without_digest() -> None:
    body = resume({"suspended_at_turn": 2, "initiator": "parent", "continue_transcript": False})[
        "body"
    ]
    assert "digest" not in body.lower()


def test_resume_always_fires_on_empty_payload() -> None:
    body = resume({})["body"]
    assert "unknown turn" in body
    assert "No input was given" in body


def test_resume_ids_without_initiator() -> None:
    body = resume({"event_id": "evt-1", "trigger_id": 5})["body"]
    assert "evt-1" in body
    assert "trigger_id" not in body


# ---------------------------------------------------------------- workspace_anchor


def anchor(workspace: Any, event: str = "session_start") -> dict[str, Any] | None:
    return workspace_anchor.evaluate(ctx(event, {}, workspace=workspace))


def test_workspace_anchor_roots_and_modes() -> None:
    workspace: Workspace = {
        "primary": "/repo",
        "roots": [{"path": "/data", "mount_mode": "ro"}, {"path": "/scratch", "mount_mode": "rw"}],
    }
    for event in workspace_anchor.PROVIDER.subscribes_to:
        reminder = fired(anchor(workspace, event))
        assert "/repo" in reminder["body"]
        assert "/data (read-only)" in reminder["body"]
        assert "/scratch (read-write)" in reminder["body"]
        assert reminder["tags"] == ["workspace_anchor"]
        assert reminder["dedupe_key"] == "workspace_anchor"
        assert reminder["ttl_turns"] == 1
        assert reminder["preserve_on_compact"] is False
        assert reminder["propagate"] == "session"
        assert reminder["role_hint"] == "system"
        assert reminder["authority"] == "contract"


def test_workspace_anchor_primary_only() -> None:
    body = fired(anchor({"primary": "/repo", "roots": []}))["body"]
    assert "/repo" in body
    assert "no additional roots" in body


def test_workspace_anchor_skips_malformed_roots() -> None:
    body = fired(
        anchor(
            {
                "primary": "/repo",
                "roots": [
                    {"path": "/ok"},
                    {"path": "/bad", "mount_mode": "wx"},
                    {"path": "/list", "mount_mode": ["ro"]},
                    {"mount_mode": "ro"},
                    "/plain",
                ],
            }
        )
    )["body"]
    assert "/ok (read-write)" in body
    for missing in ("/bad", "/list", "/plain"):
        assert missing not in body


@pytest.mark.parametrize("workspace", [None, {}, {"primary": ""}, {"primary": 3}, "/repo"])
def test_workspace_anchor_no_workspace(workspace: Any) -> None:
    assert anchor(workspace) is None
