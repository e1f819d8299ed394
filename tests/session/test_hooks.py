"""Tests for hooks: tool hooks (exact names and globs), effects, actions, result replacement,
receipts, session / step / persona / worker hooks and ``Hooks.dispatch``.

The rules: docs/session-loop.md, "Hooks", "The loop, step by step" (receipts, tool results in
the loop) and "Canonical providers" (``resume_continuity`` on ``worker_resumed``); docs/core.md,
"Errors" (RMD-001, RMD-005, RMD-008).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_reminders import (
    DispatchResult,
    EventLog,
    Hooks,
    ReminderError,
    Session,
    Source,
    Tool,
    ToolCall,
    ToolResult,
    agent_loop,
)
from agent_reminders.testing import ScriptedModel

RECEIPT_KEYS = {
    "reminder_id",
    "tags",
    "dedupe_key",
    "source",
    "role_hint",
    "authority",
    "ttl_turns",
    "deduped_count",
}
WORKER_EVENTS = (
    "worker_spawned",
    "worker_progressed",
    "worker_waiting_for_input",
    "worker_suspended",
    "worker_resumed",
    "worker_completed",
    "worker_failed",
    "worker_stopped",
    "worker_cancelled",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _call(name: str = "bash", **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call-{name}", name=name, arguments=arguments)


def _reminder(session: Session, rid: str) -> Any:
    (r,) = [r for r in session.transcript.reminders if r.id == rid]
    return r


# -- matching and order -------------------------------------------------------------------------


def test_tool_hooks_match_exact_names_and_globs() -> None:
    seen: list[str] = []
    hooks = Hooks()
    hooks.tool("bash", pre=lambda call: seen.append(f"exact:{call.name}"))
    hooks.tool("fs_*", pre=lambda call: seen.append(f"glob:{call.name}"))
    s = Session()
    for name in ("bash", "fs_read", "fs_write", "bash2", "my_fs_read", "fs"):
        hooks.run_pre(_call(name), s)
    assert seen == ["exact:bash", "glob:fs_read", "glob:fs_write"]


def test_pre_and_post_hooks_run_in_registration_order() -> None:
    seen: list[str] = []
    hooks = Hooks()
    hooks.tool(
        "fs_*", pre=lambda c: seen.append("pre-glob"), post=lambda c, r: seen.append("post-glob")
    )
    hooks.tool("fs_read", pre=lambda c: seen.append("pre-exact"))
    hooks.tool("*", post=lambda c, r: seen.append("post-star"))
    s = Session()
    call = _call("fs_read")
    hooks.run_pre(call, s)
    hooks.run_post(call, ToolResult(content="data"), s)
    assert seen == ["pre-glob", "pre-exact", "post-glob", "post-star"]


def test_hooks_receive_the_call_and_result() -> None:
    got: list[Any] = []
    hooks = Hooks()
    hooks.tool("bash", pre=lambda c: got.append(c), post=lambda c, r: got.append((c, r)))
    s = Session()
    call = _call("bash", command="ls")
    result = ToolResult(content="a\nb", ok=True)
    hooks.run_pre(call, s)
    hooks.run_post(call, result, s)
    assert got == [call, (call, result)]


# -- effects ------------------------------------------------------------------------------------


def test_none_effect_does_nothing() -> None:
    hooks = Hooks()
    hooks.tool("bash", pre=lambda c: None, post=lambda c, r: None)
    s = Session()
    actions, receipts = hooks.run_pre(_call(), s)
    assert (list(actions), list(receipts)) == ([], [])
    original = ToolResult(content="out")
    result, receipts = hooks.run_post(_call(), original, s)
    assert result == original
    assert list(receipts) == []
    assert s.transcript.reminders == ()


def test_bare_reminder_mapping_is_injected_with_source_hook() -> None:
    hooks = Hooks()
    hooks.tool(
        "bash",
        pre=lambda c: {"body": "Prefer rg over grep.", "tags": ["style"], "ttl_turns": 1},
    )
    s = Session()
    s.prepare_request()
    s.prepare_request()
    actions, receipts = hooks.run_pre(_call(), s)
    assert list(actions) == []
    (receipt,) = receipts
    r = _reminder(s, receipt["reminder_id"])
    assert r.body == "Prefer rg over grep."
    assert r.source is Source.HOOK
    assert r.fired_at_turn == s.turn == 2
    assert receipt == {
        "reminder_id": r.id,
        "tags": ["style"],
        "dedupe_key": None,
        "source": "hook",
        "role_hint": "system",
        "authority": "contract",
        "ttl_turns": 1,
        "deduped_count": 0,
    }


def test_reminder_with_then_action() -> None:
    hooks = Hooks()
    hooks.tool(
        "rm",
        pre=lambda c: {
            "reminder": {"body": "Deleting files needs approval.", "dedupe_key": "rm"},
            "then": {"action": "block", "reason": "destructive"},
        },
    )
    s = Session()
    actions, receipts = hooks.run_pre(_call("rm"), s)
    assert [dict(a) for a in actions] == [{"action": "block", "reason": "destructive"}]
    (receipt,) = receipts
    assert receipt["dedupe_key"] == "rm"
    assert receipt["source"] == "hook"
    assert _reminder(s, receipt["reminder_id"]).body == "Deleting files needs approval."


def test_list_of_effects() -> None:
    hooks = Hooks()
    hooks.tool(
        "bash",
        pre=lambda c: [
            {"body": "first", "dedupe_key": "k"},
            None,
            {"reminder": {"body": "second", "dedupe_key": "k"}},
            {"action": "allow"},
        ],
    )
    s = Session()
    actions, receipts = hooks.run_pre(_call(), s)
    assert [a["action"] for a in actions] == ["allow"]
    assert [r["deduped_count"] for r in receipts] == [0, 1]
    assert [r.body for r in s.transcript.reminders] == ["second"]


def test_action_only_effect() -> None:
    hooks = Hooks()
    hooks.tool("bash", pre=lambda c: {"action": "block", "reason": "no shell today"})
    s = Session()
    actions, receipts = hooks.run_pre(_call(), s)
    assert [dict(a) for a in actions] == [{"action": "block", "reason": "no shell today"}]
    assert list(receipts) == []
    assert s.transcript.reminders == ()


def test_receipts_never_carry_the_body() -> None:
    secret = "A very particular body text 1234."
    hooks = Hooks()
    hooks.tool(
        "bash",
        pre=lambda c: {"body": secret, "tags": ["a", "b"], "dedupe_key": "x", "ttl_turns": 2},
        post=lambda c, r: {
            "reminder": {
                "body": secret + " again",
                "role_hint": "developer",
                "authority": "advisory",
            }
        },
    )
    s = Session()
    _, pre_receipts = hooks.run_pre(_call(), s)
    _, post_receipts = hooks.run_post(_call(), ToolResult(content="ok"), s)
    for receipt in (*pre_receipts, *post_receipts):
        assert set(receipt) == RECEIPT_KEYS
        assert all(secret not in str(v) for v in receipt.values())
    (post,) = post_receipts
    assert (post["role_hint"], post["authority"], post["ttl_turns"]) == (
        "developer",
        "advisory",
        None,
    )
    assert pre_receipts[0]["tags"] == ["a", "b"]


@pytest.mark.parametrize(
    "effect",
    [
        {"foo": 1},
        {"body": "x", "colour": "red"},
        {"body": "x", "reason": "mixed with an action key"},
        {"reminder": {"body": "x", "bogus": 1}},
        {"reminder": {"body": "x"}, "extra": 1},
        {"reminder": {"body": "   "}},
        {"reminder": {"tags": ["x"]}},
        {"reminder": {"body": "x", "ttl_turns": 0}},
        {"reminder": {"body": "x", "authority": "boss"}},
        {"reminder": "just text"},
        {"action": "explode"},
        [{"body": "fine"}, {"nope": 1}],
    ],
)
def test_invalid_effects_raise_rmd_001(effect: object) -> None:
    hooks = Hooks()
    hooks.tool("bash", pre=lambda c: effect, post=lambda c, r: effect)
    s = Session()
    with pytest.raises(ReminderError) as info:
        hooks.run_pre(_call(), s)
    assert info.value.code == "RMD-001"
    with pytest.raises(ReminderError) as info:
        hooks.run_post(_call(), ToolResult(content="x"), s)
    assert info.value.code == "RMD-001"


def test_bad_propagate_in_effect_raises_rmd_005() -> None:
    hooks = Hooks()
    hooks.tool("bash", pre=lambda c: {"body": "x", "propagate": "everyone"})
    with pytest.raises(ReminderError) as info:
        hooks.run_pre(_call(), Session())
    assert info.value.code == "RMD-005"


# -- post hooks replacing the result ------------------------------------------------------------


def test_post_hook_replaces_result_alone() -> None:
    cut = ToolResult(content="abc", ok=True, truncated=True, original_size=10)
    hooks = Hooks()
    hooks.tool("cat", post=lambda c, r: cut)
    s = Session()
    result, receipts = hooks.run_post(_call("cat"), ToolResult(content="abcdefghij"), s)
    assert result == cut
    assert list(receipts) == []


def test_post_hook_replaces_result_with_reminder() -> None:
    cut = ToolResult(content="abc", truncated=True, original_size=10)
    hooks = Hooks()
    hooks.tool(
        "cat",
        post=lambda c, r: {
            "result": cut,
            "reminder": {"body": "Output was cut to 3 characters.", "ttl_turns": 1},
        },
    )
    s = Session()
    result, receipts = hooks.run_post(_call("cat"), ToolResult(content="abcdefghij"), s)
    assert result == cut
    (receipt,) = receipts
    r = _reminder(s, receipt["reminder_id"])
    assert r.body == "Output was cut to 3 characters."
    assert r.source is Source.HOOK


# -- the agent loop -----------------------------------------------------------------------------


def _tool_call_response(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


@pytest.mark.anyio
async def test_blocked_tool_in_loop_gives_error_result_and_never_runs() -> None:
    ran: list[dict[str, Any]] = []

    def rm_rf(path: str) -> str:
        ran.append({"path": path})
        return "deleted"

    tool = Tool(name="rm_rf", description="delete", parameters={"type": "object"}, fn=rm_rf)
    hooks = Hooks()
    hooks.tool("rm_*", pre=lambda call: {"action": "block", "reason": "destructive command"})
    seen: list[dict[str, Any]] = []
    session = Session()
    session.providers.register(
        "watch", subscribes_to="post_tool_use", evaluate=lambda ctx: seen.append(dict(ctx.payload))
    )
    model = ScriptedModel(
        [_tool_call_response("c1", "rm_rf", path="/"), {"content": "ok, I will not."}]
    )
    result = await agent_loop(model, "clean up", tools=[tool], hooks=hooks, session=session)
    assert ran == []
    assert result.status == "completed"
    (receipt,) = result.receipts
    assert (receipt.tool_call_id, receipt.tool_name, receipt.ok) == ("c1", "rm_rf", False)
    tool_messages = [m for m in session.transcript.messages if m["role"] == "tool"]
    assert len(tool_messages) == 1
    assert tool_messages[0]["tool_call_id"] == "c1"
    assert tool_messages[0]["content"] != "deleted"
    assert seen[0]["result"]["ok"] is False
    assert tool_messages[0] in model.requests[1].messages


@pytest.mark.anyio
async def test_loop_runs_pre_tool_post_in_order_and_records_hook_receipts() -> None:
    order: list[str] = []

    def fs_read(path: str) -> str:
        order.append("tool")
        return "x" * 50

    tool = Tool(name="fs_read", description="read", parameters={"type": "object"}, fn=fs_read)
    hooks = Hooks()

    def pre(call: ToolCall) -> Any:
        order.append("pre")
        return {"body": "Reading is fine; do not edit yet.", "tags": ["pre"], "ttl_turns": 1}

    def post(call: ToolCall, result: ToolResult) -> Any:
        order.append("post")
        return {
            "result": ToolResult(content=result.content[:5], truncated=True, original_size=50),
            "reminder": {"body": "Only five characters were kept.", "dedupe_key": "cut"},
        }

    hooks.tool("fs_*", pre=pre, post=post)
    seen: list[dict[str, Any]] = []
    session = Session()
    session.providers.register(
        "watch", subscribes_to="post_tool_use", evaluate=lambda ctx: seen.append(dict(ctx.payload))
    )
    model = ScriptedModel([_tool_call_response("c1", "fs_read", path="a.txt"), {"content": "done"}])
    result = await agent_loop(model, "read a.txt", tools=[tool], hooks=hooks, session=session)
    assert order == ["pre", "tool", "post"]
    (receipt,) = result.receipts
    assert receipt.ok is True
    assert len(receipt.reminders) == 2
    for entry in receipt.reminders:
        assert set(entry) == RECEIPT_KEYS
        assert entry["source"] == "hook"
    assert [e["tags"] for e in receipt.reminders] == [["pre"], []]
    assert receipt.reminders[1]["dedupe_key"] == "cut"
    # post_tool_use providers see the replaced result
    assert seen[0]["result"] == {
        "content": "xxxxx",
        "ok": True,
        "truncated": True,
        "original_size": 50,
    }
    tool_message = next(m for m in session.transcript.messages if m["role"] == "tool")
    assert tool_message["content"] == "xxxxx"
    # hook reminders made during request 0's tool dispatch reach request 1
    second = model.requests[1]
    envelope = second.messages[-1]["content"]
    assert "Reading is fine; do not edit yet." in envelope
    assert "Only five characters were kept." in envelope
    first = model.requests[0]
    assert not any("Reading is fine" in str(m["content"]) for m in first.messages)


@pytest.mark.anyio
async def test_loop_calls_step_hooks_with_iteration() -> None:
    got: list[int] = []
    hooks = Hooks()
    hooks.step(lambda iteration, payload: got.append(iteration))
    tool = Tool(name="noop", description="", parameters={"type": "object"}, fn=lambda: "ok")
    model = ScriptedModel([_tool_call_response("c1", "noop"), {"content": "done"}])
    await agent_loop(model, "go", tools=[tool], hooks=hooks)
    assert got == [0, 1]


# -- session, step, persona and worker hooks ----------------------------------------------------


def test_session_hook_runs_on_dispatch_and_injects_with_source_hook() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def on_start(event: str, payload: Any) -> Any:
        calls.append((event, dict(payload)))
        return {"body": "Start by reading the README.", "ttl_turns": 1}

    hooks = Hooks()
    hooks.session("session_start", on_start)
    s = Session()
    done = hooks.dispatch("session_start", {"task": "fix it"}, session=s)
    assert isinstance(done, DispatchResult)
    assert calls == [("session_start", {"task": "fix it"})]
    (receipt,) = done.reminders
    assert set(receipt) == RECEIPT_KEYS
    r = _reminder(s, receipt["reminder_id"])
    assert r.source is Source.HOOK
    assert r.body == "Start by reading the README."
    assert done.fire is not None  # session_start is a provider event
    assert hooks.dispatch("session_idle", {"wake_interval_ms": 0}, session=s).reminders == []
    assert len(calls) == 1


def test_session_hook_actions_are_returned() -> None:
    hooks = Hooks()
    hooks.session("post_step", lambda e, p: {"action": "continue"})
    done = hooks.dispatch("post_step", {"iteration": 0}, session=Session())
    assert [a["action"] for a in done.actions] == ["continue"]
    assert done.reminders == []


def test_step_hooks_get_the_iteration_at_post_step() -> None:
    got: list[tuple[int, dict[str, Any]]] = []
    hooks = Hooks()
    hooks.step(lambda iteration, payload: got.append((iteration, dict(payload))))
    s = Session()
    hooks.dispatch("post_step", {"iteration": 4, "tool_calls": []}, session=s)
    hooks.dispatch("post_agent_turn", {"iteration": 5}, session=s)
    assert got == [(4, {"iteration": 4, "tool_calls": []})]


def test_step_hook_reminder_is_injected() -> None:
    hooks = Hooks()
    hooks.step(lambda i, p: {"body": f"Step {i} done; check the plan.", "ttl_turns": 1})
    s = Session()
    done = hooks.dispatch("post_step", {"iteration": 2}, session=s)
    (receipt,) = done.reminders
    r = _reminder(s, receipt["reminder_id"])
    assert r.body == "Step 2 done; check the plan."
    assert r.source is Source.HOOK


def test_persona_hooks_run_by_name() -> None:
    got: list[tuple[str, str]] = []
    hooks = Hooks()
    hooks.persona("reviewer", lambda name, p: got.append(("reviewer", name)) or None)  # type: ignore[func-returns-value]
    hooks.persona("writer", lambda name, p: got.append(("writer", name)) or None)  # type: ignore[func-returns-value]
    hooks.persona(
        "reviewer", lambda name, p: {"body": "Review like a maintainer.", "tags": ["persona"]}
    )
    s = Session()
    done = hooks.dispatch("persona", {"name": "reviewer"}, session=s)
    assert got == [("reviewer", "reviewer")]
    (receipt,) = done.reminders
    assert receipt["tags"] == ["persona"]
    assert _reminder(s, receipt["reminder_id"]).source is Source.HOOK
    hooks.dispatch("persona", {"name": "nobody"}, session=s)
    assert got == [("reviewer", "reviewer")]


@pytest.mark.parametrize("event", WORKER_EVENTS)
def test_worker_hook_returning_a_reminder_raises_rmd_008(event: str) -> None:
    hooks = Hooks()
    hooks.worker(event, lambda e, p: {"body": "Worker finished; collect results."})
    s = Session()
    with pytest.raises(ReminderError) as info:
        hooks.dispatch(event, {}, session=s)
    err = info.value
    assert err.code == "RMD-008"
    assert event in err.message
    for kind in ("session", "tool", "step", "persona"):
        assert kind in err.message
    assert all(r.source is not Source.HOOK for r in s.transcript.reminders)


def test_worker_hook_returning_wrapped_reminder_raises_rmd_008() -> None:
    hooks = Hooks()
    hooks.worker("worker_failed", lambda e, p: [None, {"reminder": {"body": "x"}}])
    with pytest.raises(ReminderError) as info:
        hooks.dispatch("worker_failed", {"error": "boom"}, session=Session())
    assert info.value.code == "RMD-008"
    assert "worker_failed" in info.value.message


def test_worker_hooks_returning_none_are_fine() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    hooks = Hooks()
    hooks.worker("worker_completed", lambda e, p: calls.append((e, dict(p))))
    s = Session()
    done = hooks.dispatch("worker_completed", {"worker_id": "w1"}, session=s)
    assert calls == [("worker_completed", {"worker_id": "w1"})]
    assert done.reminders == []
    assert s.transcript.reminders == ()


def test_dispatch_worker_resumed_fires_resume_continuity() -> None:
    log = EventLog()
    calls: list[str] = []
    hooks = Hooks()
    hooks.worker("worker_resumed", lambda e, p: calls.append(e))
    s = Session(event_log=log)
    payload = {
        "suspended_at_turn": 4,
        "reason": "waiting for the build",
        "initiator": "operator",
        "input": "the build is green",
        "continue_transcript": True,
    }
    done = hooks.dispatch("worker_resumed", payload, session=s)
    assert calls == ["worker_resumed"]
    assert done.fire is not None
    assert done.fire.fired_count == 1
    (report,) = done.fire.reports
    assert report["provider"] == "resume_continuity"
    r = _reminder(s, report["reminder_id"])
    assert r.source is Source.STDLIB_PROVIDER
    assert r.ttl_turns == 1
    assert "4" in r.body
    assert "waiting for the build" in r.body
    assert "operator" in r.body
    assert "the build is green" in r.body
    evaluated = [
        rec.payload["provider_id"]
        for rec in log.records
        if rec.kind == "transcript.reminder.provider_evaluated"
    ]
    assert evaluated == ["resume_continuity"]


def test_dispatch_of_non_provider_worker_event_fires_nothing() -> None:
    s = Session()
    done = Hooks().dispatch("worker_spawned", {"worker_id": "w"}, session=s)
    assert done.fire is None or done.fire.fired_count == 0
    assert s.transcript.reminders == ()


def test_unknown_events_raise_value_error() -> None:
    hooks = Hooks()
    s = Session()
    with pytest.raises(ValueError, match="bogus_event"):
        hooks.dispatch("bogus_event", {}, session=s)
    with pytest.raises(ValueError, match="bogus_event"):
        hooks.session("bogus_event", lambda e, p: None)
    with pytest.raises(ValueError, match="worker_exploded"):
        hooks.worker("worker_exploded", lambda e, p: None)
