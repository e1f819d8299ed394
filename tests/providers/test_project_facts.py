"""The canonical provider ``project_facts`` (docs/session-loop.md, "Canonical providers";
docs/facts.md, "The ``project_facts`` provider"): when it fires, what
its body states, its lifecycle, its config, and its place among the canonical providers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_reminders import Authority, Propagate, RoleHint, Session, Source
from agent_reminders.config import ReminderOptions
from agent_reminders.facts import FactStore
from agent_reminders.providers import CANONICAL_PROVIDERS, parse_reminder_options
from agent_reminders.providers import project_facts as pf
from agent_reminders.providers.base import ProviderContext

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


def ctx(event: str = "session_start", payload: Any = None, config: Any = None) -> ProviderContext:
    return ProviderContext(
        event=event,
        session_id="s-facts",
        payload={} if payload is None else payload,
        options=ReminderOptions(),
        config=config,
    )


def fact(claim: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "decision", "claim": claim, "confidence": 0.9, **extra}


def fired(result: Mapping[str, Any] | None) -> dict[str, Any]:
    """Assert a strict reminder mapping with the project_facts lifecycle; return it."""
    assert result is not None
    assert isinstance(result, dict)
    assert set(result) <= LIFECYCLE_KEYS
    assert "body" in result
    parsed = parse_reminder_options(result)
    assert parsed.body == result["body"]
    assert result["body"].strip()
    return result


def lines(result: Mapping[str, Any] | None) -> list[str]:
    body: str = fired(result)["body"]
    return body.splitlines()


@pytest.fixture
def store() -> Iterator[FactStore]:
    s = FactStore(":memory:")
    yield s
    s.close()


# ---------------------------------------------------------------- body and lifecycle


def test_session_start_body_names_namespace_then_one_line_per_fact(store: FactStore) -> None:
    store.store_fact(
        {
            "kind": "Design-Note",
            "claim": "Use PostgreSQL for storage.",
            "confidence": 0.9,
            "evidence": [{"kind": "adr", "ref": "ADR-7"}, {"kind": "file", "ref": "db.py"}],
        }
    )
    store.store_fact(
        {"kind": "constraint", "claim": "Never log secrets.", "confidence": 1, "evidence": []}
    )
    store.store_fact(
        {
            "kind": "convention",
            "claim": "Tests live under tests/.",
            "confidence": 0.75,
            "evidence": [{"kind": "doc", "ref": "CONTRIBUTING.md"}],
        }
    )
    result = pf.evaluate(ctx("session_start", {"task": "storage"}, {"store": store}))
    body = lines(result)
    assert "project/facts" in body[0]
    assert all(claim not in body[0] for claim in ("PostgreSQL", "secrets", "Tests live"))
    assert len(body) == 4

    (pg,) = [line for line in body[1:] if "Use PostgreSQL for storage." in line]
    assert "design_note" in pg
    assert "0.90" in pg
    assert "adr" in pg
    assert "ADR-7" in pg

    (secrets,) = [line for line in body[1:] if "Never log secrets." in line]
    assert "constraint" in secrets
    assert "1.00" in secrets

    (tests,) = [line for line in body[1:] if "Tests live under tests/." in line]
    assert "convention" in tests
    assert "0.75" in tests
    assert "doc" in tests
    assert "CONTRIBUTING.md" in tests

    # the task-relevant fact comes first
    assert body[1] == pg


def test_lifecycle_fields(store: FactStore) -> None:
    store.store_fact(fact("Lifecycle fact."))
    result = fired(pf.evaluate(ctx(config={"store": store})))
    assert result["ttl_turns"] == 1
    assert result["tags"] == ["project_facts"]
    assert result["dedupe_key"] == "project_facts"
    assert result["authority"] == "contract"
    assert result.get("role_hint", "system") == "system"
    assert result.get("propagate", "session") == "session"
    assert result.get("preserve_on_compact", False) is False
    parsed = parse_reminder_options(result)
    assert parsed.ttl_turns == 1
    assert parsed.dedupe_key == "project_facts"
    assert tuple(parsed.tags) == ("project_facts",)


def test_fires_through_a_real_session(store: FactStore) -> None:
    store.store_fact(fact("Use PostgreSQL for storage.", evidence=[{"kind": "adr", "ref": "A7"}]))
    store.store_fact(fact("Deploys run on kubernetes."))
    session = Session(reminders={"config": {"project_facts": {"store": store}}})
    result = session.fire("session_start", {"task": "kubernetes deploys"})
    reports = [r for r in result.reports if r["provider"] == "project_facts"]
    assert len(reports) == 1
    (reminder,) = [r for r in session.transcript.reminders if "project_facts" in r.tags]
    assert reports[0]["reminder_id"] == reminder.id
    assert reminder.tags == ("project_facts",)
    assert reminder.ttl_turns == 1
    assert reminder.dedupe_key == "project_facts"
    assert reminder.authority is Authority.CONTRACT
    assert reminder.role_hint is RoleHint.SYSTEM
    assert reminder.propagate is Propagate.SESSION
    assert reminder.source is Source.STDLIB_PROVIDER
    body = reminder.body.splitlines()
    assert "project/facts" in body[0]
    assert len(body) == 3
    assert "Deploys run on kubernetes." in body[1]
    assert "Use PostgreSQL for storage." in body[2]
    assert "0.90" in body[2]
    assert "A7" in body[2]


def test_session_with_a_path_config(tmp_path: Path) -> None:
    path = tmp_path / "store" / "facts.db"
    with FactStore(path) as s:
        s.store_fact(fact("Facts come from a file."))
    session = Session(reminders={"config": {"project_facts": {"path": str(path)}}})
    session.fire("session_start", {"task": "file"})
    (reminder,) = [r for r in session.transcript.reminders if "project_facts" in r.tags]
    assert "Facts come from a file." in reminder.body


def test_session_without_a_store_does_not_fire_or_create_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    session = Session()
    result = session.fire("session_start", {"task": "anything"})
    assert all(r["provider"] != "project_facts" for r in result.reports)
    assert [r for r in session.transcript.reminders if "project_facts" in r.tags] == []
    assert not (tmp_path / ".agent-reminders").exists()


def test_session_disabling_project_facts(store: FactStore) -> None:
    store.store_fact(fact("Disabled providers stay quiet."))
    session = Session(
        reminders={"providers": ["-project_facts"], "config": {"project_facts": {"store": store}}}
    )
    session.fire("session_start", {"task": "quiet"})
    assert [r for r in session.transcript.reminders if "project_facts" in r.tags] == []


# ---------------------------------------------------------------- store / path config


def test_path_config_reads_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    with FactStore(path) as s:
        s.store_fact(fact("From the path config."))
    for value in (str(path), path):
        body = lines(pf.evaluate(ctx(config={"path": value})))
        assert "From the path config." in body[1]


def test_missing_path_means_no_facts_and_no_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "facts.db"
    assert pf.evaluate(ctx(config={"path": str(path)})) is None
    assert (
        pf.evaluate(
            ctx(
                "on_budget_threshold",
                {"context_tokens": 99, "context_window": 100},
                {"path": str(path)},
            )
        )
        is None
    )
    assert not path.exists()
    assert not path.parent.exists()


def test_default_path_is_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert pf.evaluate(ctx(config=None)) is None
    assert pf.evaluate(ctx(config={})) is None
    assert not (tmp_path / ".agent-reminders").exists()

    with FactStore(tmp_path / ".agent-reminders" / "facts.db") as s:
        s.store_fact(fact("Found under the working directory."))
    config: dict[str, Any] | None
    for config in (None, {}):
        body = lines(pf.evaluate(ctx(config=config)))
        assert "Found under the working directory." in body[1]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert pf.evaluate(ctx(config=None)) is None
    assert not (elsewhere / ".agent-reminders").exists()


def test_store_config_beats_path(tmp_path: Path, store: FactStore) -> None:
    path = tmp_path / "facts.db"
    with FactStore(path) as s:
        s.store_fact(fact("From the file."))
    store.store_fact(fact("From the store object."))
    body = lines(pf.evaluate(ctx(config={"store": store, "path": str(path)})))
    assert "From the store object." in body[1]
    assert all("From the file." not in line for line in body)


# ---------------------------------------------------------------- namespace, limits, filters


def test_namespace_config(store: FactStore) -> None:
    store.store_fact(fact("Team fact."), namespace="team/x")
    store.store_fact(fact("Default fact."))
    body = lines(pf.evaluate(ctx(config={"store": store, "namespace": "team/x"})))
    assert "team/x" in body[0]
    assert len(body) == 2
    assert "Team fact." in body[1]
    body = lines(pf.evaluate(ctx(config={"store": store})))
    assert "project/facts" in body[0]
    assert len(body) == 2
    assert "Default fact." in body[1]
    assert pf.evaluate(ctx(config={"store": store, "namespace": "team/empty"})) is None


def test_max_facts_default_five(store: FactStore) -> None:
    store.store_facts([fact(f"Numbered fact {i}.") for i in range(10)])
    assert len(lines(pf.evaluate(ctx(config={"store": store})))) == 1 + 5
    assert len(lines(pf.evaluate(ctx(config={"store": store, "max_facts": 3})))) == 1 + 3
    assert len(lines(pf.evaluate(ctx(config={"store": store, "max_facts": 1})))) == 1 + 1


@pytest.mark.parametrize(("max_facts", "expected"), [(100, 25), (25, 25), (26, 25), (24, 24)])
def test_max_facts_clamped_to_25(store: FactStore, max_facts: int, expected: int) -> None:
    store.store_facts([fact(f"Numbered fact {i}.") for i in range(30)])
    body = lines(pf.evaluate(ctx(config={"store": store, "max_facts": max_facts})))
    assert len(body) == 1 + expected


@pytest.mark.parametrize("max_facts", [0, -1, -100])
def test_max_facts_zero_or_below_never_fires(store: FactStore, max_facts: int) -> None:
    store.store_facts([fact(f"Numbered fact {i}.") for i in range(3)])
    assert pf.evaluate(ctx(config={"store": store, "max_facts": max_facts})) is None
    payload = {"context_tokens": 99, "context_window": 100}
    config = {"store": store, "max_facts": max_facts}
    assert pf.evaluate(ctx("on_budget_threshold", payload, config)) is None


def test_min_confidence_default_half(store: FactStore) -> None:
    store.store_fact(fact("Too unsure.", confidence=0.49))
    store.store_fact(fact("Just sure enough.", confidence=0.5))
    store.store_fact(fact("Very sure.", confidence=0.95))
    body = "\n".join(lines(pf.evaluate(ctx(config={"store": store}))))
    assert "Too unsure." not in body
    assert "Just sure enough." in body
    assert "Very sure." in body

    body = "\n".join(lines(pf.evaluate(ctx(config={"store": store, "min_confidence": 0.9}))))
    assert "Just sure enough." not in body
    assert "Very sure." in body

    body = "\n".join(lines(pf.evaluate(ctx(config={"store": store, "min_confidence": 0}))))
    assert "Too unsure." in body
    assert "0.49" in body

    assert pf.evaluate(ctx(config={"store": store, "min_confidence": 0.99})) is None


def test_kind_filter_one_or_many(store: FactStore) -> None:
    store.store_fact({"kind": "design_note", "claim": "A design note.", "confidence": 0.9})
    store.store_fact({"kind": "Decision", "claim": "A decision.", "confidence": 0.9})
    store.store_fact({"kind": "constraint", "claim": "A constraint.", "confidence": 0.9})

    body = lines(pf.evaluate(ctx(config={"store": store, "kind_filter": "Design-Note"})))
    assert len(body) == 2
    assert "A design note." in body[1]

    body = lines(
        pf.evaluate(ctx(config={"store": store, "kind_filter": ["DECISION", "Constraint"]}))
    )
    assert len(body) == 3
    assert {"A decision." in "\n".join(body), "A constraint." in "\n".join(body)} == {True}
    assert all("A design note." not in line for line in body)

    assert pf.evaluate(ctx(config={"store": store, "kind_filter": "unknown"})) is None


@pytest.fixture
def relevance_store(store: FactStore) -> FactStore:
    # oldest first: recency alone can never explain which fact wins
    store.store_fact(fact("Architecture decisions are recorded as ADRs."))
    store.store_fact(fact("Deploys run on kubernetes clusters."))
    store.store_fact(fact("The database is postgres."))
    store.store_fact(fact("Lunch is at noon."))
    return store


def test_relevance_query_beats_task(relevance_store: FactStore) -> None:
    config = {"store": relevance_store, "relevance_query": "kubernetes"}
    body = lines(pf.evaluate(ctx(payload={"task": "postgres"}, config=config)))
    assert "kubernetes" in body[1]


def test_task_beats_generic_query(relevance_store: FactStore) -> None:
    body = lines(pf.evaluate(ctx(payload={"task": "postgres"}, config={"store": relevance_store})))
    assert "postgres" in body[1]
    blank = {"store": relevance_store, "relevance_query": "   "}
    body = lines(pf.evaluate(ctx(payload={"task": "postgres"}, config=blank)))
    assert "postgres" in body[1]


def test_generic_query_about_project_decisions(relevance_store: FactStore) -> None:
    for payload in ({}, {"task": ""}, {"task": 42}, {"other": "kubernetes"}):
        body = lines(pf.evaluate(ctx(payload=payload, config={"store": relevance_store})))
        assert "Architecture decisions are recorded as ADRs." in body[1]


def test_relevance_order_through_a_session(relevance_store: FactStore) -> None:
    session = Session(
        reminders={"config": {"project_facts": {"store": relevance_store, "max_facts": 2}}}
    )
    session.fire("session_start", {"task": "which database? postgres"})
    (reminder,) = [r for r in session.transcript.reminders if "project_facts" in r.tags]
    body = reminder.body.splitlines()
    assert len(body) == 3
    assert "The database is postgres." in body[1]


# ---------------------------------------------------------------- on_budget_threshold


def usage(inp: int, out: int, window: int | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"usage": {"input_tokens": inp, "output_tokens": out}}
    if window is not None:
        payload["context_window"] = window
    return payload


def test_budget_threshold_fires_at_the_refresh_ratio(store: FactStore) -> None:
    store.store_fact(fact("Refresh me."))
    config = {"store": store}
    assert pf.evaluate(ctx("on_budget_threshold", usage(600, 100, 1000), config)) is not None
    body = lines(pf.evaluate(ctx("on_budget_threshold", usage(900, 50, 1000), config)))
    assert "Refresh me." in body[1]
    assert pf.evaluate(ctx("on_budget_threshold", usage(600, 99, 1000), config)) is None
    assert pf.evaluate(ctx("on_budget_threshold", usage(10, 0, 1000), config)) is None


def test_budget_threshold_window_from_config(store: FactStore) -> None:
    store.store_fact(fact("Refresh me."))
    config = {"store": store, "context_window": 1000}
    assert pf.evaluate(ctx("on_budget_threshold", usage(700, 0), config)) is not None
    assert pf.evaluate(ctx("on_budget_threshold", usage(699, 0), config)) is None
    # the payload's window wins over the config's
    assert pf.evaluate(ctx("on_budget_threshold", usage(700, 0, 10_000), config)) is None


def test_budget_threshold_needs_tokens_and_window(store: FactStore) -> None:
    store.store_fact(fact("Refresh me."))
    config = {"store": store}
    assert pf.evaluate(ctx("on_budget_threshold", usage(900, 90), config)) is None
    assert pf.evaluate(ctx("on_budget_threshold", {"context_window": 1000}, config)) is None
    assert pf.evaluate(ctx("on_budget_threshold", {}, config)) is None


def test_refresh_ratio_config(store: FactStore) -> None:
    store.store_fact(fact("Refresh me."))
    config = {"store": store, "refresh_ratio": 0.9}
    assert pf.evaluate(ctx("on_budget_threshold", usage(800, 99, 1000), config)) is None
    assert pf.evaluate(ctx("on_budget_threshold", usage(800, 100, 1000), config)) is not None
    low = {"store": store, "refresh_ratio": 0.1}
    assert pf.evaluate(ctx("on_budget_threshold", usage(100, 0, 1000), low)) is not None
    assert pf.evaluate(ctx("on_budget_threshold", usage(99, 0, 1000), low)) is None


def test_budget_threshold_through_a_session(store: FactStore) -> None:
    store.store_fact(fact("Refresh under pressure."))
    session = Session(reminders={"config": {"project_facts": {"store": store}}})
    session.fire("on_budget_threshold", usage(500, 100, 1000))
    assert [r for r in session.transcript.reminders if "project_facts" in r.tags] == []
    session.fire("on_budget_threshold", usage(650, 100, 1000))
    (reminder,) = [r for r in session.transcript.reminders if "project_facts" in r.tags]
    assert "Refresh under pressure." in reminder.body


# ---------------------------------------------------------------- no facts, odd config


def test_no_facts_means_no_fire(store: FactStore) -> None:
    assert pf.evaluate(ctx(config={"store": store})) is None
    assert pf.evaluate(ctx(payload={"task": "x"}, config={"store": store})) is None
    assert pf.evaluate(ctx("on_budget_threshold", usage(990, 0, 1000), {"store": store})) is None


ODD_CONFIGS: list[dict[str, Any]] = [
    {"max_facts": "7"},
    {"max_facts": True},
    {"max_facts": 2.5},
    {"max_facts": None},
    {"min_confidence": "high"},
    {"min_confidence": True},
    {"min_confidence": None},
    {"namespace": 42},
    {"namespace": "   "},
    {"namespace": None},
    {"kind_filter": 42},
    {"kind_filter": [None, "", 3]},
    {"kind_filter": {"kind": "decision"}},
    {"relevance_query": 7},
    {"relevance_query": ["kubernetes"]},
    {"refresh_ratio": "x"},
    {"context_window": "big"},
    {"unknown_option": object()},
]


@pytest.fixture
def odd_store(store: FactStore) -> FactStore:
    store.store_fact(fact("Unsure fact.", confidence=0.4))
    store.store_facts([fact(f"Ordinary fact {i}.") for i in range(7)])
    return store


@pytest.mark.parametrize(
    "odd",
    ODD_CONFIGS,
    ids=[next(iter(c)) + "-" + repr(next(iter(c.values())))[:12] for c in ODD_CONFIGS],
)
def test_odd_config_values_fall_back_to_defaults(odd_store: FactStore, odd: dict[str, Any]) -> None:
    default = fired(pf.evaluate(ctx(payload={"task": "x"}, config={"store": odd_store})))
    assert len(default["body"].splitlines()) == 1 + 5
    assert "Unsure fact." not in default["body"]
    result = fired(pf.evaluate(ctx(payload={"task": "x"}, config={"store": odd_store, **odd})))
    assert result == default

    config = {"store": odd_store, **odd}
    at = pf.evaluate(ctx("on_budget_threshold", usage(700, 0, 1000), config))
    assert fired(at) == default
    assert pf.evaluate(ctx("on_budget_threshold", usage(699, 0, 1000), config)) is None


@pytest.mark.parametrize("payload", [None, "text", 42, ["task"]])
def test_odd_payloads_do_not_raise(odd_store: FactStore, payload: Any) -> None:
    body = lines(pf.evaluate(ctx(payload=payload, config={"store": odd_store})))
    assert len(body) == 1 + 5
    assert pf.evaluate(ctx("on_budget_threshold", payload, {"store": odd_store})) is None


@pytest.mark.parametrize("config", ["not a mapping", 42, ["store"]])
def test_odd_config_objects_mean_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert pf.evaluate(ctx(config=config)) is None
    with FactStore(tmp_path / ".agent-reminders" / "facts.db") as s:
        s.store_fact(fact("Default path fact."))
    body = lines(pf.evaluate(ctx(config=config)))
    assert "Default path fact." in body[1]


def test_store_that_is_not_a_fact_store_falls_back_to_the_default_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert pf.evaluate(ctx(config={"store": "not a store"})) is None
    assert not (tmp_path / ".agent-reminders").exists()


# ---------------------------------------------------------------- canonical placement


def test_canonical_order_and_subscriptions() -> None:
    order = [p.id for p in CANONICAL_PROVIDERS]
    assert "project_facts" in order
    i = order.index("project_facts")
    assert order[i - 1] == "resume_continuity"
    assert order[i + 1] == "workspace_anchor"
    assert order == [
        "token_pressure",
        "idle_nudge",
        "tool_output_truncated",
        "post_compact_recap",
        "resume_continuity",
        "project_facts",
        "workspace_anchor",
        "grounded_review",
    ]
    (spec,) = [p for p in CANONICAL_PROVIDERS if p.id == "project_facts"]
    assert spec is pf.PROVIDER
    assert spec.canonical is True
    assert set(spec.subscribes_to) == {"session_start", "on_budget_threshold"}


def test_other_events_are_not_subscribed(store: FactStore) -> None:
    store.store_fact(fact("Only at start."))
    session = Session(reminders={"config": {"project_facts": {"store": store}}})
    for event in ("post_step", "session_idle", "post_agent_turn"):
        session.fire(event, {"task": "start"})
    assert [r for r in session.transcript.reminders if "project_facts" in r.tags] == []
