"""Issue 8, reminder options: canonical provider config is checked when options are parsed.

The rules: docs/session-loop.md, "Providers" (``reminders``: providers, config, the lint) and
"Canonical providers" (each canonical provider's config keys); RMD-104 (ConfigError).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_reminders import ConfigError, ReminderOptions, Session, lint_agent_options
from agent_reminders.config import parse_reminder_config
from agent_reminders.facts import FactStore
from agent_reminders.providers import CANONICAL_PROVIDERS

CANONICAL_IDS = [p.id for p in CANONICAL_PROVIDERS]

# Every config key docs/session-loop.md ("Canonical providers") names and the providers' code read.
DOCUMENTED_KEYS = {
    "token_pressure": {"context_window"},
    "idle_nudge": {"idle_seconds", "seconds"},
    "tool_output_truncated": set(),
    "post_compact_recap": set(),
    "resume_continuity": set(),
    "project_facts": {
        "store",
        "path",
        "namespace",
        "max_facts",
        "min_confidence",
        "kind_filter",
        "relevance_query",
        "refresh_ratio",
        "context_window",
    },
    "workspace_anchor": set(),
    "grounded_review": {"max_findings", "include_warnings"},
}


def test_each_canonical_provider_declares_its_config_keys_once() -> None:
    assert {p.id: set(p.config_schema) for p in CANONICAL_PROVIDERS} == DOCUMENTED_KEYS


@pytest.mark.parametrize(
    "config",
    [
        {"token_pressure": {"context_window": 128_000}},
        {"idle_nudge": {"idle_seconds": 1.5}, "grounded_review": {"include_warnings": True}},
        {"grounded_review": {"max_findings": 3}},
        {"project_facts": {"path": "x.db", "kind_filter": ["decision"], "min_confidence": 1}},
        {"project_facts": {"kind_filter": "decision", "max_facts": 0, "refresh_ratio": 0.5}},
        {"project_facts": {"store": None, "namespace": None}},  # None means "the default"
        {"token_pressure": None},
        {"mine": {"anything": object()}},  # a user provider's config is its own business
    ],
)
def test_good_config_is_accepted(config: dict[str, Any]) -> None:
    options = parse_reminder_config({"config": config})
    assert dict(options.config) == config
    Session(reminders={"config": config})
    assert [d for d in lint_agent_options({"config": config}) if d.code == "RMD-104"] == []


def test_a_fact_store_object_is_a_good_store_value() -> None:
    with FactStore(":memory:") as store:
        Session(reminders={"config": {"project_facts": {"store": store}}})


@pytest.mark.parametrize(
    ("config", "fragments"),
    [
        (
            {"idle_nudge": {"idle_secs": 5}},
            ["idle_secs", "reminders.config.idle_nudge", "idle_seconds, seconds"],
        ),
        ({"token_pressure": {"window": 1}}, ["window", "context_window"]),
        ({"post_compact_recap": {"summary": "x"}}, ["summary", "takes no config"]),
        ({"project_facts": {"max_fact": 3}}, ["max_fact", "max_facts", "relevance_query"]),
    ],
)
def test_unknown_config_keys_of_a_canonical_provider_are_config_errors(
    config: dict[str, Any], fragments: list[str]
) -> None:
    for value in ({"config": config}, ReminderOptions(config=config)):
        with pytest.raises(ConfigError) as info:
            Session(reminders=value)
        assert info.value.code == "RMD-104"
        assert isinstance(info.value, ValueError)
        for fragment in fragments:
            assert fragment in info.value.message


@pytest.mark.parametrize(
    ("provider", "key", "value", "expected"),
    [
        ("token_pressure", "context_window", "big", "int"),
        ("token_pressure", "context_window", True, "int"),
        ("token_pressure", "context_window", 1.5, "int"),
        ("idle_nudge", "idle_seconds", "60", "int or float"),
        ("grounded_review", "max_findings", "6", "int"),
        ("grounded_review", "include_warnings", "yes", "bool"),
        ("grounded_review", "include_warnings", 1, "bool"),
        ("project_facts", "store", "facts.db", "FactStore"),
        ("project_facts", "path", 5, "str"),
        ("project_facts", "kind_filter", [3], "list of str"),
        ("project_facts", "min_confidence", "high", "float"),
        ("project_facts", "namespace", ["a"], "str"),
    ],
)
def test_wrong_value_types_are_config_errors_naming_the_setting(
    provider: str, key: str, value: Any, expected: str
) -> None:
    config = {provider: {key: value}}
    with pytest.raises(ConfigError) as info:
        parse_reminder_config({"config": config})
    message = info.value.message
    assert f"reminders.config.{provider}.{key}" in message
    assert repr(value) in message
    assert expected in message
    (diag,) = lint_agent_options({"config": config})
    assert (diag.code, diag.severity, diag.message) == ("RMD-104", "error", message)


@pytest.mark.parametrize(
    ("reminders", "bad", "meant"),
    [
        ({"providers": ["-token_presure"]}, "token_presure", "token_pressure"),
        ({"providers": ["grounded-review"]}, "grounded-review", "grounded_review"),
        ({"config": {"project_fact": {"max_facts": 2}}}, "project_fact", "project_facts"),
    ],
)
def test_misspelt_canonical_ids_are_config_errors(
    reminders: dict[str, Any], bad: str, meant: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Session(reminders=reminders)
    message = info.value.message
    assert repr(bad) in message
    assert f"did you mean {meant!r}" in message
    for pid in CANONICAL_IDS:
        assert pid in message
    assert "registered" in message  # says how user providers work
    assert "enabled by default" in message
    assert [d.code for d in lint_agent_options(reminders) if d.severity == "error"] == ["RMD-104"]


def test_lint_reports_every_problem_instead_of_raising() -> None:
    reminders = {
        "providers": ["-idle_nudg"],
        "config": {"token_pressure": {"window": 1}, "grounded_review": {"max_findings": "9"}},
    }
    found = lint_agent_options(reminders)
    assert [d.code for d in found] == ["RMD-104"] * 3
    assert all(d.severity == "error" for d in found)
    text = " | ".join(d.message for d in found)
    for fragment in ("idle_nudg", "window", "max_findings"):
        assert fragment in text


def test_lint_with_the_user_providers_flags_unknown_ids() -> None:
    reminders = {"providers": ["-nope", "-mine"], "config": {"other": {}}}
    assert lint_agent_options(reminders) == []  # without them, ids may be user providers
    found = lint_agent_options(reminders, user_providers=["mine"])
    assert [d.code for d in found] == ["RMD-104", "RMD-104"]
    assert "'nope'" in found[0].message
    assert "'other'" in found[1].message
    assert "token_pressure" in found[0].message
    assert "mine" in found[0].message  # the known ones include the user providers
    session = Session()
    session.providers.register("mine", subscribes_to="post_step", evaluate=lambda c: None)
    assert len(lint_agent_options(reminders, user_providers=session.providers)) == 2


def test_lint_still_reports_rmd_007_next_to_rmd_104() -> None:
    found = lint_agent_options(
        {"providers": ["a", "b"], "config": {"token_pressure": {"context_window": "x"}}}
    )
    assert [(d.code, d.severity) for d in found] == [("RMD-104", "error"), ("RMD-007", "info")]


def test_an_unknown_provider_id_is_an_error_when_the_session_fires() -> None:
    """Issue 8: ``Session(reminders={"providers": ["nope"]})`` no longer passes silently: an id
    that is neither canonical nor registered by the first fire is a ConfigError naming the
    known ones (ids registered before that are user providers)."""
    from agent_reminders import ConfigError, Session

    session = Session(reminders={"providers": ["nope"], "config": {"other": {}}})
    with pytest.raises(ConfigError) as info:
        session.fire("post_step")
    message = info.value.message
    assert "'nope'" in message
    assert "'other'" in message
    assert "token_pressure" in message  # the known ones
    session.providers.register("nope", subscribes_to="post_step", evaluate=lambda c: None)
    session.providers.register("other", subscribes_to="post_step", evaluate=lambda c: None)
    assert session.fire("post_step").fired_count == 0  # now both are user providers


def test_a_disabled_session_does_not_check_provider_ids() -> None:
    from agent_reminders import Session

    session = Session(reminders={"enabled": False, "providers": ["nope"]})
    assert session.fire("post_step").fired_count == 0
