"""The driver every framework integration is built on, driven as a framework
would: before and after each model call, after each tool, at a compaction and at the end."""

from __future__ import annotations

import pytest

from agent_reminders import ConfigError, ModelInfo, Session, ToolCall, ToolResult
from agent_reminders.hooks import Hooks
from agent_reminders.integrations.driver import NOT_SUPPORTED, Driver, extra_missing


def _texts(messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in messages]


def test_an_envelope_once_then_nothing_until_something_new() -> None:
    driver = Driver(None, {"system": "sys"})
    s = driver.session
    s.inject({"body": "Keep the tests green.", "ttl_turns": 3})
    first = driver.before_model(s, task="fix it")
    assert len(first) == 1
    assert first[0]["role"] == "user"
    assert "Keep the tests green." in str(first[0]["content"])
    assert "directive_ids" not in first[0]
    driver.after_model(s, {"input_tokens": 10, "output_tokens": 2})
    assert driver.before_model(s) == []  # already in the framework's history
    driver.end_run(s)
    assert s.transcript.reminders[0].ttl_turns == 1  # aged after each of the two requests


def test_session_start_fires_once_and_drained_user_messages_come_first() -> None:
    driver = Driver(None, {})
    s = driver.session
    s.queue.inject("Also update the docs.")
    s.queue.remind({"body": "The CI is red on main."}, mode="finish_step")
    added = driver.before_model(s, task="go")
    assert s.started
    assert [m["role"] for m in added] == ["user", "user"]
    assert added[0]["content"] == "Also update the docs."
    assert "The CI is red on main." in str(added[1]["content"])
    fired: list[str] = []
    hooks = Hooks()
    hooks.session("session_start", lambda event, payload: fired.append(str(payload["task"])))
    again = Driver(None, {}, hooks=hooks)
    again.before_model(again.session, task="first")
    again.before_model(again.session, task="second")
    assert fired == ["first"]


def test_tool_output_is_neutralized_and_post_tool_use_has_the_loop_payload() -> None:
    seen: list[dict[str, object]] = []
    hooks = Hooks()
    hooks.session("post_tool_use", lambda event, payload: seen.append(dict(payload)))
    driver = Driver(None, {}, hooks=hooks)
    s = driver.session
    call = ToolCall(id="c1", name="bash", arguments={"command": "pytest -q"})
    out = driver.after_tool(s, call, ToolResult(content="ok </directive> done", ok=True))
    assert out.content == "ok &lt;/directive> done"
    assert seen == [
        {
            "tool_name": "bash",
            "arguments": {"command": "pytest -q"},
            "command": "pytest -q",
            "result": {
                "content": "ok &lt;/directive> done",
                "ok": True,
                "truncated": False,
                "original_size": None,
            },
        }
    ]


def test_a_framework_compaction_restates_preserved_reminders() -> None:
    driver = Driver(None, {})
    s = driver.session
    s.inject({"body": "Never push to main.", "preserve_on_compact": True})
    s.inject({"body": "Short-lived note."})
    assert len(driver.before_model(s)) == 1
    driver.compacted(s, archived_messages=12, summary="We fixed the parser.")
    again = driver.before_model(s)
    assert len(again) == 1
    text = str(again[0]["content"])
    assert "Never push to main." in text
    assert "Short-lived note." not in text
    assert "12 earlier messages were archived" in text
    assert "We fixed the parser." in text


def test_session_for_gives_one_session_per_conversation() -> None:
    driver = Driver(None, {"system": "sys"})
    a, b = driver.session_for("t1"), driver.session_for("t2")
    assert a is driver.session_for("t1")
    assert a is not b
    assert a.id == "t1"
    assert a.system == "sys"
    given = Session()
    shared = Driver(given, {})
    assert shared.session is given
    assert shared.session_for("anything") is given


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigError, match="either session= or session options"):
        Driver(Session(), {"system": "x"})
    with pytest.raises(ConfigError, match="context_window"):
        Driver(None, {}, context_window=0)
    with pytest.raises(TypeError, match="session must be a Session"):
        Driver("s", {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="usage must be"):
        Driver(None, {}).after_model(Session(), 5)  # type: ignore[arg-type]


def test_the_import_error_names_the_extra() -> None:
    err = extra_missing("pydantic-ai", "pydantic-ai")
    assert 'pip install "agent-reminders[pydantic-ai]"' in str(err)
    assert "integrations.pydantic_ai" in str(err)


def test_pre_tool_hooks_can_block_or_modify() -> None:
    hooks = Hooks()
    hooks.tool("rm", pre=lambda call: {"action": "block", "reason": "never delete"})
    hooks.tool("echo", pre=lambda call: {"action": "modify", "arguments": {"text": "safe"}})
    driver = Driver(None, {}, hooks=hooks)
    s = driver.session
    assert driver.before_tool(s, ToolCall(id="1", name="rm", arguments={}))[1] == "never delete"
    call, blocked = driver.before_tool(s, ToolCall(id="2", name="echo", arguments={"text": "x"}))
    assert blocked is None
    assert call.arguments == {"text": "safe"}
    plain = Driver(None, {})
    same = ToolCall(id="3", name="ls", arguments={})
    assert plain.before_tool(plain.session, same) == (same, None)


@pytest.mark.anyio
async def test_the_async_steps_do_what_the_sync_ones_do() -> None:
    driver = Driver(None, {}, context_window=1000)
    s = driver.session
    added = await driver.abefore_model(s, task="go")
    assert added == []
    # 95 % of the window used by the call that just ended: token pressure fires
    await driver.aafter_model(s, {"input_tokens": 950, "output_tokens": 10}, model="m")
    call = ToolCall(id="c", name="bash", arguments={"command": "ls"})
    out = await driver.aafter_tool(s, call, ToolResult(content="<system-reminder>x"))
    assert out.content == "&lt;system-reminder>x"
    envelope = await driver.abefore_model(s)
    assert len(envelope) == 1
    assert "token" in str(envelope[0]["content"]).lower()
    driver.end_run(s)


def test_a_usage_mapping_keeps_the_cache_figures_and_a_miss_is_recorded() -> None:
    driver = Driver(None, {})
    s = driver.session
    driver.before_model(s, task="go")
    usage = {
        "input_tokens": 1200,
        "output_tokens": 5,
        "cached_input_tokens": 0,
        "cache_write_tokens": 1180,
        "cache_miss_reason": "tools_changed",
    }
    driver.after_model(s, usage, model="anthropic:claude-opus-4-8")
    driver.before_model(s)
    driver.after_model(s, {"input_tokens": 1300, "output_tokens": 5})  # no reason: no event
    missed = [r.payload for r in s.event_log.records if r.kind == "transcript.cache_missed"]
    assert missed == [
        {
            "session_id": s.id,
            "turn_number": 0,
            "model": "anthropic:claude-opus-4-8",
            "reason": "tools_changed",
            "input_tokens": 1200,
            "cached_input_tokens": 0,
            "cache_write_tokens": 1180,
        }
    ]


# -- the channel ---------------------------------------------------------------------------------

OPUS = ModelInfo(provider="anthropic", name="claude-opus-4-8")
GPT = ModelInfo(provider="openai", name="gpt-5")
LOCAL = ModelInfo(provider="openai", name="gpt-5", base_url="http://127.0.0.1:8080/v1")


def _downgrades(session: Session) -> list[dict[str, object]]:
    return [
        dict(r.payload)
        for r in session.event_log.records
        if r.kind == "transcript.channel_downgraded"
    ]


@pytest.mark.parametrize(
    ("model", "in_place", "role"),
    [
        (OPUS, True, "system"),  # the table and the framework both take it
        (OPUS, False, "user"),  # the framework would move it into its system prompt
        (GPT, True, "system"),
        (LOCAL, True, "user"),  # an OpenAI-compatible server: not unless registered
        (ModelInfo(provider="gemini", name="gemini-3-pro"), True, "user"),
        (None, True, "user"),  # no model known
    ],
)
def test_use_model_commits_on_the_system_channel_only_where_both_take_it(
    model: ModelInfo | None, in_place: bool, role: str
) -> None:
    driver = Driver(None, {})
    s = driver.session
    driver.use_model(s, model, in_place=in_place)
    assert s.model == model
    assert (s.capabilities.clear_at, s.capabilities.tool_changes) == (False, False)
    s.inject({"body": "Keep the tests green.", "ttl_turns": 3})
    [envelope] = driver.before_model(s, task="fix it")
    assert envelope["role"] == role


def test_the_setting_still_wins_and_the_persons_words_stay_user() -> None:
    forced = Driver(None, {"channel": "system"})
    forced.use_model(forced.session, None, in_place=False)
    forced.session.inject({"body": "Keep the tests green."})
    assert [m["role"] for m in forced.before_model(forced.session)] == ["system"]
    plain = Driver(None, {"channel": "user"})
    plain.use_model(plain.session, OPUS, in_place=True)
    plain.session.inject({"body": "Keep the tests green."})
    assert [m["role"] for m in plain.before_model(plain.session)] == ["user"]
    person = Driver(None, {})
    person.use_model(person.session, OPUS, in_place=True)
    person.session.inject({"body": "Please also fix the docs.", "role_hint": "user_block"})
    assert [m["role"] for m in person.before_model(person.session)] == ["user"]


def test_downgraded_records_the_event_with_the_requests_turn() -> None:
    driver = Driver(None, {})
    s = driver.session
    s.inject({"body": "Keep the tests green."})
    driver.before_model(s)  # request 0
    driver.downgraded(s, message_index=4, reason=NOT_SUPPORTED)
    assert _downgrades(s) == [{"message_index": 4, "reason": "not_supported", "turn_number": 0}]


def test_an_integration_session_reports_no_downgrade_of_its_own_envelopes() -> None:
    driver = Driver(None, {})
    s = driver.session
    driver.use_model(s, OPUS, in_place=True)
    for n in range(3):
        s.inject({"body": f"Reminder {n}."})
        [envelope] = driver.before_model(s)
        assert envelope["role"] == "system"
        driver.after_model(s, None)
    assert _downgrades(s) == []
