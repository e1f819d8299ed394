"""The firing policy moved out of ``Session`` (``agent_reminders.providers.fire``), provider
errors, and async-safe provider I/O.

The rules: errors raised by ``evaluate`` are evented; ``ProviderSkippedError``, RMD-107, is
evented and skipped (docs/session-loop.md, "Providers"); ARCHITECTURE "blocking I/O never runs
on the event loop".
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agent_reminders import (
    ConfigError,
    EventLog,
    Hooks,
    ProviderContext,
    ProviderSkippedError,
    Session,
    SessionState,
    Tool,
    agent_loop,
)
from agent_reminders.providers import CANONICAL_PROVIDERS, FirePolicy, ProviderState
from agent_reminders.testing import ScriptedModel

EVALUATED = "transcript.reminder.provider_evaluated"
QUIET = {"providers": ["-grounded_review", "-tool_output_truncated"]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _evaluated(log: EventLog) -> list[dict[str, Any]]:
    return [r.payload for r in log.records if r.kind == EVALUATED]


# -- provider errors ---------------------------------------------------------------------------


def test_provider_skipped_error_is_evented_and_does_not_propagate() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders=QUIET)

    def missing(ctx: ProviderContext) -> None:
        raise ProviderSkippedError("fact store /nope.db is missing")

    s.providers.register("facts", subscribes_to="post_step", evaluate=missing)
    s.providers.register("after", subscribes_to="post_step", evaluate=lambda ctx: {"body": "x"})
    done = s.fire("post_step")
    assert done.fired_count == 1  # the providers after the skipped one still run
    facts, after = _evaluated(log)
    assert facts["provider_id"] == "facts"
    assert facts["fired"] is False
    assert facts["error"] == "RMD-107: fact store /nope.db is missing"
    assert after["fired"] is True
    assert "error" not in after


def test_other_provider_errors_are_evented_then_propagate() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders=QUIET)

    def broken(ctx: ProviderContext) -> None:
        raise RuntimeError("boom")

    s.providers.register("broken", subscribes_to="post_step", evaluate=broken)
    with pytest.raises(RuntimeError, match="boom"):
        s.fire("post_step")
    (payload,) = _evaluated(log)
    assert payload["fired"] is False
    assert payload["error"] == "RuntimeError: boom"


def test_provider_evaluated_fired_is_a_boolean_with_a_count() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders=QUIET)
    s.providers.register(
        "two", subscribes_to="post_step", evaluate=lambda ctx: [{"body": "a"}, {"body": "b"}]
    )
    s.fire("post_step")
    (payload,) = _evaluated(log)
    assert payload["fired"] is True
    assert payload["fired_count"] == 2


# -- the policy on its own ---------------------------------------------------------------------


def test_policy_remembers_full_bodies_as_its_state() -> None:
    s = Session(reminders=QUIET)
    s.providers.register(
        "plan",
        subscribes_to="post_step",
        evaluate=lambda ctx: {"body": "Keep the plan up to date. " * 4, "dedupe_key": "plan"},
    )
    s.fire("post_step")
    state = s.state().providers
    assert isinstance(state, ProviderState)
    assert dict(state.full_bodies) == {"plan": "Keep the plan up to date. " * 4}
    assert FirePolicy(state).state() == state


def test_short_repeat_survives_a_restore() -> None:
    body = "The build is red on main; fix it before anything else. " * 3

    def plan(ctx: ProviderContext) -> dict[str, Any]:
        return {"body": body, "dedupe_key": "ci"}

    s = Session(session_id="s", reminders=QUIET)
    s.providers.register("ci", subscribes_to="post_step", evaluate=plan)
    s.append({"role": "user", "content": "go"})
    s.fire("post_step")
    s.prepare_request()
    s.fire("post_step")  # a short repeat replaces the full text the model already has
    s.prepare_request()
    restored = Session.from_state(SessionState.from_json(s.state().to_json()), reminders=QUIET)
    restored.providers.register("ci", subscribes_to="post_step", evaluate=plan)
    # the pending reminder now holds the short text; only the remembered full body tells the
    # policy that the provider's text is still the same, so the repeat stays short
    s.fire("post_step")
    restored.fire("post_step")
    (a,) = s.transcript.reminders
    (b,) = restored.transcript.reminders
    assert a.body == b.body
    assert len(a.body) < len(body)  # still the short repeat


# -- store= is reserved ------------------------------------------------------------------------


def test_store_must_be_none() -> None:
    assert Session(store=None).turn == 0
    with pytest.raises(ConfigError, match="state"):
        Session(store=object())  # type: ignore[arg-type]


# -- blocking providers run off the event loop ---------------------------------------------


def test_project_facts_is_blocking() -> None:
    (facts,) = [p for p in CANONICAL_PROVIDERS if p.id == "project_facts"]
    assert facts.blocking is True
    assert all(not p.blocking for p in CANONICAL_PROVIDERS if p.id != "project_facts")


def test_register_validates_blocking() -> None:
    s = Session()
    with pytest.raises(TypeError, match="blocking"):
        s.providers.register(
            "x",
            subscribes_to="post_step",
            evaluate=lambda ctx: None,
            blocking="yes",  # type: ignore[arg-type]
        )


def test_fires_blocking_only_for_enabled_subscribed_blocking_providers() -> None:
    s = Session(reminders={"providers": ["-project_facts"]})
    s.providers.register("io", subscribes_to="post_step", evaluate=lambda c: None, blocking=True)
    assert s.fires_blocking("post_step")
    assert s.fires_blocking("PostStep")
    assert not s.fires_blocking("post_tool_use")
    assert not s.fires_blocking("session_start")  # project_facts is disabled here
    assert not s.fires_blocking("worker_spawned")  # a hook-only event
    assert Session().fires_blocking("session_start")  # project_facts is enabled by default
    assert not Session(reminders=False).fires_blocking("session_start")


def test_project_facts_blocks_only_when_it_would_read_the_store() -> None:
    """Below its refresh ratio project_facts reads nothing, so the loop need not leave the
    event loop for ``on_budget_threshold``; at or above it, or without a payload to judge
    by, the event counts as blocking."""
    s = Session(reminders={"providers": ["-token_pressure", "-workspace_anchor"]})
    low = {"usage": {"input_tokens": 1_000, "output_tokens": 0}, "context_window": 200_000}
    high = {"usage": {"input_tokens": 150_000, "output_tokens": 0}, "context_window": 200_000}
    assert not s.fires_blocking("on_budget_threshold", low)
    assert not s.fires_blocking("on_budget_threshold", {})  # no window: no refresh
    assert s.fires_blocking("on_budget_threshold", high)
    assert s.fires_blocking("on_budget_threshold")  # nothing to judge by
    assert s.fires_blocking("session_start", {})
    quiet = Session(reminders={"config": {"project_facts": {"max_facts": 0}}})
    assert not quiet.fires_blocking("session_start", {})


def _probe(threads: dict[str, list[int]], name: str) -> Any:
    def evaluate(ctx: ProviderContext) -> None:
        threads.setdefault(name, []).append(threading.get_ident())

    return evaluate


@pytest.mark.anyio
async def test_afire_runs_blocking_providers_in_a_worker_thread() -> None:
    threads: dict[str, list[int]] = {}
    s = Session(reminders={"providers": ["-project_facts", "-grounded_review"]})
    s.providers.register(
        "io", subscribes_to="post_step", evaluate=_probe(threads, "io"), blocking=True
    )
    s.providers.register("cpu", subscribes_to="post_agent_turn", evaluate=_probe(threads, "cpu"))
    here = threading.get_ident()
    await s.afire("post_step", {})
    await s.afire("post_agent_turn", {})
    assert threads["io"] != [here]
    assert threads["cpu"] == [here]


@pytest.mark.anyio
@pytest.mark.parametrize("with_hooks", [False, True])
async def test_agent_loop_evaluates_blocking_providers_off_the_event_loop(
    with_hooks: bool,
) -> None:
    threads: dict[str, list[int]] = {}
    s = Session(reminders={"providers": ["-project_facts", "-grounded_review"]})
    s.providers.register(
        "io",
        subscribes_to=["session_start", "post_tool_use", "post_step", "on_budget_threshold"],
        evaluate=_probe(threads, "io"),
        blocking=True,
    )
    s.providers.register("cpu", subscribes_to="post_tool_use", evaluate=_probe(threads, "cpu"))
    hooks = Hooks() if with_hooks else None
    hook_threads: list[int] = []
    if hooks is not None:
        hooks.session(
            "post_step", lambda event, payload: hook_threads.append(threading.get_ident())
        )
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "hi"}}]},
            {"content": "done"},
        ]
    )
    tools = [Tool(name="echo", description="", parameters={}, fn=lambda text: text)]
    here = threading.get_ident()
    result = await agent_loop(model, "go", session=s, tools=tools, hooks=hooks)
    assert result.status == "completed"
    # session_start, 2x on_budget_threshold, post_tool_use, 2x post_step
    assert len(threads["io"]) == 6
    assert here not in threads["io"]
    # post_tool_use has a blocking subscriber: its whole evaluation moves off the loop
    assert threads["cpu"] != [here]
    if hooks is not None:
        assert len(hook_threads) == 2
        assert here not in hook_threads  # the whole dispatch ran in the worker thread


def test_subscribed_providers_follow_registry_changes() -> None:
    """The per-event lists are remembered with the enabled set, and a registration or an
    unregistration is seen at once."""
    s = Session(reminders={"providers": ["-project_facts", "-grounded_review"]})
    options = s.reminder_options
    before = [p.id for p in s.providers.subscribed(options, "post_step")]
    assert before == []
    assert not s.fires_blocking("post_step")
    s.providers.register("io", subscribes_to="post_step", evaluate=lambda c: None, blocking=True)
    assert [p.id for p in s.providers.subscribed(options, "post_step")] == ["io"]
    assert [p.id for p in s.providers.subscribed_blocking(options, "post_step")] == ["io"]
    assert s.fires_blocking("post_step")
    assert s.fires_blocking("post_step", ["not", "a", "mapping"])  # type: ignore[arg-type]  # judged without a payload
    enabled = [p.id for p in s.providers.enabled(options)]
    assert enabled[-1] == "io"
    assert "grounded_review" not in enabled
    assert s.providers.unregister("io")
    assert s.providers.subscribed(options, "post_step") == ()
    assert not s.fires_blocking("post_step")


def test_the_policy_skips_providers_of_other_events() -> None:
    """FirePolicy may be handed every provider; only those subscribed to the event run."""
    s = Session(reminders=False)
    ran: list[str] = []
    policy = FirePolicy()
    result = policy.fire(
        "post_step",
        {},
        providers=CANONICAL_PROVIDERS,
        context=lambda spec: ProviderContext(
            event="post_step", session_id=s.id, payload={}, options=s.reminder_options, config=None
        ),
        transcript=lambda: s.transcript,
        inject=lambda parsed, body, key: ran.append(body),  # type: ignore[arg-type, return-value]
        resolve=lambda resolution: None,
        budget=4096,
        event_log=s.event_log,
        session_id=s.id,
    )
    assert result.fired_count == 0
    evaluated = [r.payload["provider_id"] for r in s.event_log.records]
    assert evaluated == ["grounded_review"]  # the only canonical post_step provider
    assert ran == []
