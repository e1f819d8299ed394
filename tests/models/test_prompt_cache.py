"""The simulated Anthropic prompt cache: every rule on its own, then through the recording
server and the real ``anthropic`` SDK, then a property over append-only conversations."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import ConfigError, ModelError
from agent_reminders.integrations.anthropic import LOOKBACK_BLOCKS
from agent_reminders.testing import AnthropicPromptCache, FakeClock, RecordingModelServer
from agent_reminders.testing.prompt_cache import DIAGNOSIS_BETA

MARK = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def text(value: str, mark: dict[str, str] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if mark is not None:
        block["cache_control"] = dict(mark)
    return block


def user(value: str, mark: dict[str, str] | None = None) -> dict[str, Any]:
    return {"role": "user", "content": [text(value, mark)]}


def assistant(value: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(value)]}


def request(
    messages: list[dict[str, Any]],
    *,
    system: Any = None,
    tools: list[dict[str, Any]] | None = None,
    model: str = "claude-test",
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": 64, "messages": messages, **extra}
    if system is not None:
        body["system"] = system
    if tools is not None:
        body["tools"] = tools
    return body


def tokens(block: Any, role: str | None = None, start: bool = True) -> int:
    """The documented count: 4 bytes a token of the canonical JSON (message blocks framed)."""
    value = block if role is None else {"role": role, "start": start, "content": block}
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return -(-len(data.encode()) // 4)


def total(usage: dict[str, Any]) -> int:
    return int(
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


def fresh(min_tokens: int = 1, **kwargs: Any) -> tuple[AnthropicPromptCache, FakeClock]:
    clock = FakeClock()
    return AnthropicPromptCache(clock=clock, min_tokens=min_tokens, **kwargs), clock


def strip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


# -- reading and writing -------------------------------------------------------------------


def test_usage_counts_each_block_at_four_bytes_a_token() -> None:
    cache, _ = fresh()
    system = [text("You are terse.", MARK)]
    tool = {"name": "ls", "description": "list", "input_schema": {"type": "object"}}
    usage, diagnostics = cache.respond(
        request([user("hi é")], system=system, tools=[tool]), "msg_1"
    )
    written = tokens(tool) + tokens(text("You are terse."))
    assert usage == {
        "input_tokens": tokens(text("hi é"), "user"),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
    }
    assert diagnostics is None


def test_an_append_only_conversation_reads_what_the_previous_request_read_and_wrote() -> None:
    cache, clock = fresh()
    history = [user("question one", MARK)]
    before = cache.respond(request(history), "msg_1")[0]
    for turn in range(2, 6):
        history = [*strip(history), assistant(f"answer {turn}"), user(f"question {turn}", MARK)]
        clock.advance(60)
        usage = cache.respond(request(history), f"msg_{turn}")[0]
        assert usage["cache_read_input_tokens"] == (
            before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        )
        assert usage["cache_creation_input_tokens"] > 0
        assert usage["input_tokens"] == 0  # the breakpoint is on the last block
        before = usage


def test_a_changed_earlier_message_reads_only_up_to_the_last_entry_before_it() -> None:
    cache, _ = fresh()
    system = [text("system prompt " * 10, MARK)]
    history = [user("first"), assistant("ok"), user("second", MARK)]
    cache.respond(request(history, system=system), "msg_1")
    changed = [user("first!"), assistant("ok"), user("second", MARK)]
    usage = cache.respond(request(changed, system=system), "msg_2")[0]
    assert usage["cache_read_input_tokens"] == tokens(text("system prompt " * 10))
    assert usage["cache_creation_input_tokens"] == total(usage) - tokens(
        text("system prompt " * 10)
    )
    one_character = [user("firsT"), assistant("ok"), user("second", MARK)]
    assert cache.respond(request(one_character, system=system), "msg_3")[0][
        "cache_read_input_tokens"
    ] == tokens(text("system prompt " * 10))


@pytest.mark.parametrize(
    ("appended", "hit"), [(LOOKBACK_BLOCKS, True), (LOOKBACK_BLOCKS + 1, False)]
)
def test_the_look_back_reaches_20_blocks_before_a_breakpoint_not_21(
    appended: int, hit: bool
) -> None:
    cache, _ = fresh()
    head = [user("start of the conversation", MARK)]
    written = cache.respond(request(head), "msg_1")[0]["cache_creation_input_tokens"]
    # one block per message, so `appended` blocks lie between the entry and the new breakpoint
    tail = [assistant(f"a{i}") if i % 2 == 0 else user(f"u{i}") for i in range(appended - 1)]
    longer = [*strip(head), *tail, user("last", MARK)]
    assert len(longer) - len(head) == appended
    usage = cache.respond(request(longer), "msg_2")[0]
    assert usage["cache_read_input_tokens"] == (written if hit else 0)


def test_a_second_breakpoint_within_the_look_back_of_the_first_entry_still_reads_it() -> None:
    cache, _ = fresh()
    head = [user("start", MARK)]
    written = cache.respond(request(head), "msg_1")[0]["cache_creation_input_tokens"]
    tail = [assistant(f"a{i}") if i % 2 == 0 else user(f"u{i}") for i in range(40)]
    # the last breakpoint is 41 blocks on; a middle one is 10 blocks on and reaches the entry
    tail[9] = {**tail[9], "content": [text(tail[9]["content"][0]["text"], MARK)]}
    usage = cache.respond(request([*strip(head), *tail, user("end", MARK)]), "msg_2")[0]
    assert usage["cache_read_input_tokens"] == written


def test_a_prefix_below_min_tokens_is_not_written() -> None:
    block = user("x" * 40, MARK)
    small = tokens(text("x" * 40), "user")
    cache, _ = fresh(min_tokens=small + 1)
    usage = cache.respond(request([block]), "msg_1")[0]
    assert (usage["cache_creation_input_tokens"], usage["input_tokens"]) == (0, small)
    assert cache.respond(request([block]), "msg_2")[0]["cache_read_input_tokens"] == 0
    exact, _ = fresh(min_tokens=small)
    assert exact.respond(request([block]), "msg_1")[0]["cache_creation_input_tokens"] == small
    assert exact.respond(request([block]), "msg_2")[0]["cache_read_input_tokens"] == small


def test_the_default_min_tokens_is_1024() -> None:
    cache = AnthropicPromptCache(clock=FakeClock())
    short = request([user("y" * 4000, MARK)])
    assert cache.respond(short, "msg_1")[0]["cache_creation_input_tokens"] == 0
    long = request([user("y" * 4100, MARK)])
    assert cache.respond(long, "msg_2")[0]["cache_creation_input_tokens"] >= 1024


def test_a_5m_entry_expires_after_300_seconds_and_a_read_renews_it() -> None:
    cache, clock = fresh()
    body = request([user("cache me", MARK)])
    size = cache.respond(body, "msg_1")[0]["cache_creation_input_tokens"]
    clock.advance(299)
    assert cache.respond(body, "msg_2")[0]["cache_read_input_tokens"] == size
    clock.advance(299)  # 598 s after the write, 299 after the read that renewed it
    assert cache.respond(body, "msg_3")[0]["cache_read_input_tokens"] == size
    clock.advance(300)
    usage = cache.respond(body, "msg_4")[0]
    assert (usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (0, size)


def test_a_1h_entry_survives_ten_minutes_and_is_counted_as_1h() -> None:
    cache, clock = fresh()
    body = request([user("keep me", HOUR)])
    usage = cache.respond(body, "msg_1")[0]
    size = usage["cache_creation_input_tokens"]
    assert usage["cache_creation"] == {
        "ephemeral_5m_input_tokens": 0,
        "ephemeral_1h_input_tokens": size,
    }
    clock.advance(600)
    assert cache.respond(body, "msg_2")[0]["cache_read_input_tokens"] == size
    clock.advance(3600)
    assert cache.respond(body, "msg_3")[0]["cache_read_input_tokens"] == 0


def test_cache_creation_is_split_by_the_ttl_of_the_breakpoint_ending_each_segment() -> None:
    cache, _ = fresh()
    system = [text("long lived instructions", HOUR)]
    usage = cache.respond(request([user("turn", MARK)], system=system), "msg_1")[0]
    assert usage["cache_creation"] == {
        "ephemeral_5m_input_tokens": tokens(text("turn"), "user"),
        "ephemeral_1h_input_tokens": tokens(text("long lived instructions")),
    }


def test_entries_are_per_model() -> None:
    cache, _ = fresh()
    body = request([user("same prompt", MARK)])
    size = cache.respond(body, "msg_1")[0]["cache_creation_input_tokens"]
    other = cache.respond({**body, "model": "claude-other"}, "msg_2")[0]
    assert (other["cache_read_input_tokens"], other["cache_creation_input_tokens"]) == (0, size)
    assert cache.respond(body, "msg_3")[0]["cache_read_input_tokens"] == size


def test_no_breakpoint_reads_and_writes_nothing() -> None:
    cache, _ = fresh()
    body = request([user("plain")])
    cache.respond(body, "msg_1")
    usage = cache.respond(body, "msg_2")[0]
    assert usage["input_tokens"] == total(usage)
    assert usage["cache_read_input_tokens"] == 0


def test_a_top_level_cache_control_is_a_breakpoint_on_the_last_block() -> None:
    cache, _ = fresh()
    history = [user("one"), assistant("two"), user("three")]
    first = cache.respond(request(history, cache_control=MARK), "msg_1")[0]
    assert first["cache_creation_input_tokens"] == total(first)
    longer = [*history, assistant("four"), user("five")]
    second = cache.respond(request(longer, cache_control=HOUR), "msg_2")[0]
    assert second["cache_read_input_tokens"] == total(first)
    assert second["cache_creation"]["ephemeral_1h_input_tokens"] == total(second) - total(first)


def test_strings_and_single_text_blocks_are_one_prompt_but_message_boundaries_count() -> None:
    cache, _ = fresh()
    as_string = request([{"role": "user", "content": "same"}], cache_control=MARK)
    size = cache.respond(as_string, "msg_1")[0]["cache_creation_input_tokens"]
    as_block = request([{"role": "user", "content": [text("same")]}], cache_control=MARK)
    assert cache.respond(as_block, "msg_2")[0]["cache_read_input_tokens"] == size
    two = request([user("a"), user("b")], cache_control=MARK)
    one = request([{"role": "user", "content": [text("a"), text("b")]}], cache_control=MARK)
    cache.respond(two, "msg_3")
    usage = cache.respond(one, "msg_4")[0]
    assert usage["cache_read_input_tokens"] == 0
    roles = request([assistant("a"), assistant("b")], cache_control=MARK)
    assert cache.respond(roles, "msg_5")[0]["cache_read_input_tokens"] == 0


# -- refusals ------------------------------------------------------------------------------


def test_five_breakpoints_are_refused_with_the_apis_message() -> None:
    cache, _ = fresh()
    body = request([user(str(i), MARK) for i in range(5)])
    message = "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert cache.refusal(body) == message
    with pytest.raises(ModelError) as caught:
        cache.respond(body, "msg_1")
    assert (caught.value.status, caught.value.server_message) == (400, message)
    four = request([user(str(i), MARK) for i in range(4)], cache_control=MARK)
    assert cache.refusal(four) is None  # the automatic one on a marked block is that one
    unmarked_last = {**four, "messages": [*four["messages"], user("x")]}
    assert cache.refusal(unmarked_last) == message
    assert AnthropicPromptCache(max_breakpoints=6).refusal(body) is None


def test_a_1h_breakpoint_after_a_5m_one_is_refused_and_bad_markers_too() -> None:
    cache, _ = fresh()
    refusal = cache.refusal(request([user("a", MARK), user("b", HOUR)]))
    assert refusal is not None
    assert refusal.startswith("messages.1.content.0.cache_control: a cache_control with ttl '1h'")
    assert cache.refusal(request([user("a", HOUR), user("b", MARK)])) is None
    auto = request([user("a", MARK)], cache_control=HOUR)
    assert cache.refusal({**auto, "messages": [user("a", MARK), user("b")]}) is not None
    bad_ttl = request([user("a", {"type": "ephemeral", "ttl": "10m"})])
    assert "Input should be '5m' or '1h'" in (cache.refusal(bad_ttl) or "")
    bad_type = request([user("a", {"type": "persistent"})])
    assert "Input should be 'ephemeral'" in (cache.refusal(bad_type) or "")


def test_diagnostics_without_the_beta_is_refused_naming_it() -> None:
    cache, _ = fresh()
    body = request([user("hi")], diagnostics={"previous_message_id": None})
    assert (
        cache.refusal(body) == f"diagnostics: requires the anthropic-beta header {DIAGNOSIS_BETA}"
    )
    assert cache.refusal(body, f"other-beta,{DIAGNOSIS_BETA}") is None
    assert cache.refusal(body, ["other-beta", DIAGNOSIS_BETA]) is None
    bad = {**body, "diagnostics": {"previous_message_id": 3}}
    assert "previous_message_id" in (cache.refusal(bad, DIAGNOSIS_BETA) or "")


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_breakpoints"):
        AnthropicPromptCache(max_breakpoints=0)
    with pytest.raises(ConfigError, match="min_tokens"):
        AnthropicPromptCache(min_tokens=-1)
    with pytest.raises(ConfigError, match="seconds"):
        FakeClock().advance(-1)


# -- diagnostics ---------------------------------------------------------------------------


def diagnose(
    cache: AnthropicPromptCache, body: dict[str, Any], message_id: str, previous: str | None
) -> Any:
    opted = {**body, "diagnostics": {"previous_message_id": previous}}
    return cache.respond(opted, message_id, DIAGNOSIS_BETA)[1]


BASE_TOOLS = [{"name": "ls", "description": "list", "input_schema": {"type": "object"}}]
BASE = request(
    [user("one"), assistant("two"), user("three", MARK)],
    system=[text("rules", MARK)],
    tools=BASE_TOOLS,
)


def reason_for(changed: dict[str, Any]) -> Any:
    cache, _ = fresh()
    assert diagnose(cache, BASE, "msg_1", None) is None
    return diagnose(cache, changed, "msg_2", "msg_1")


def test_an_append_only_request_has_null_diagnostics_even_after_expiry() -> None:
    cache, clock = fresh()
    assert diagnose(cache, BASE, "msg_1", None) is None
    clock.advance(7200)
    longer = {**BASE, "messages": [*BASE["messages"], assistant("four"), user("five")]}
    assert diagnose(cache, longer, "msg_2", "msg_1") is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"model": "claude-other"}, "model_changed"),
        ({"model": "claude-other", "system": "new"}, "model_changed"),
        ({"system": [text("rules!", MARK)]}, "system_changed"),
        ({"system": "new", "tools": []}, "system_changed"),
        ({"tools": [*BASE_TOOLS, {"name": "cat", "input_schema": {}}]}, "tools_changed"),
        ({"messages": [user("One"), assistant("two"), user("three", MARK)]}, "messages_changed"),
        ({"messages": [user("one")]}, "messages_changed"),
    ],
)
def test_the_first_divergence_is_the_cache_miss_reason(
    change: dict[str, Any], expected: str
) -> None:
    diagnostics = reason_for({**BASE, **change})
    assert diagnostics["cache_miss_reason"]["type"] == expected
    assert diagnostics["cache_miss_reason"]["cache_missed_input_tokens"] > 0


def test_messages_changed_counts_the_previously_cached_tokens_past_the_shared_prefix() -> None:
    cache, _ = fresh()
    diagnose(cache, BASE, "msg_1", None)
    whole = sum(tokens(t) for t in BASE_TOOLS) + tokens(text("rules"))
    changed = {**BASE, "messages": [user("one"), assistant("TWO"), user("three", MARK)]}
    cached = whole + sum(tokens(m["content"][0], m["role"]) for m in strip(BASE["messages"]))
    shared = whole + tokens(text("one"), "user")
    reason = diagnose(cache, changed, "msg_2", "msg_1")["cache_miss_reason"]
    assert reason == {"type": "messages_changed", "cache_missed_input_tokens": cached - shared}


def test_an_unknown_previous_message_is_not_found() -> None:
    cache, _ = fresh()
    assert diagnose(cache, BASE, "msg_2", "msg_404") == {
        "cache_miss_reason": {"type": "previous_message_not_found"}
    }
    # a request that did not opt in leaves no fingerprint behind
    cache.respond(BASE, "msg_3")
    assert diagnose(cache, BASE, "msg_4", "msg_3")["cache_miss_reason"]["type"] == (
        "previous_message_not_found"
    )
    assert diagnose(cache, BASE, "msg_5", "msg_4") is None


def test_concurrent_requests_keep_every_sum() -> None:
    cache, _ = fresh()
    bodies = [request([user("shared prefix " * 20, MARK), user(str(i), MARK)]) for i in range(8)]
    results: list[dict[str, Any]] = []

    def run(i: int) -> None:
        usage = cache.respond(bodies[i % 8], f"msg_{i}")[0]
        results.append(usage)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 32
    assert all(total(u) == total(results[0]) for u in results)


# -- through the server and the SDK --------------------------------------------------------


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    http = urllib.request.Request(url, data=data, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(http, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def test_the_server_refuses_what_the_cache_refuses_before_playing_a_reply() -> None:
    cache, _ = fresh()
    with RecordingModelServer(["fine"], prompt_cache=cache) as server:
        five = request([user(str(i), MARK) for i in range(5)])
        status, error = post(server.url + "/v1/messages", five)
        assert (status, error["error"]["type"]) == (400, "invalid_request_error")
        assert "Found 5" in error["error"]["message"]
        opted = request([user("hi")], diagnostics={"previous_message_id": None})
        status, error = post(server.url + "/v1/messages", opted)
        assert status == 400
        assert DIAGNOSIS_BETA in error["error"]["message"]
        status, reply = post(server.url + "/v1/messages", opted, {"anthropic-beta": DIAGNOSIS_BETA})
    assert (status, reply["id"], reply["diagnostics"]) == (200, "msg_1", None)
    assert server.prompt_cache is cache


def test_scripted_raw_usage_wins_but_the_cache_still_sees_the_request() -> None:
    cache, _ = fresh()
    script: list[Any] = [
        {"content": "a", "raw_usage": {"input_tokens": 7, "output_tokens": 1}},
        "b",
    ]
    with RecordingModelServer(script, prompt_cache=cache) as server:
        body = request([user("remember me", MARK)])
        assert post(server.url + "/v1/messages", body)[1]["usage"] == {
            "input_tokens": 7,
            "output_tokens": 1,
        }
        second = post(server.url + "/v1/messages", body)[1]
    assert second["usage"]["cache_read_input_tokens"] > 0
    assert "diagnostics" not in second  # the request did not opt in


def test_the_anthropic_sdk_reads_cache_usage_and_diagnostics() -> None:
    anthropic = pytest.importorskip("anthropic")
    cache, clock = fresh()
    system = [text("You review code. " * 10, MARK)]
    with (
        RecordingModelServer(["first", "second", "third", "4", "5"], prompt_cache=cache) as server,
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0) as client,
    ):
        ask: dict[str, Any] = {"model": "claude-test", "max_tokens": 64, "system": system}
        betas = [DIAGNOSIS_BETA]
        history = [user("look at parse()", MARK)]
        first = client.beta.messages.create(
            messages=history, diagnostics={"previous_message_id": None}, betas=betas, **ask
        )
        assert first.diagnostics is None
        assert first.usage.cache_read_input_tokens == 0
        written = first.usage.cache_creation_input_tokens
        assert written == total(first.usage.model_dump()) > 0

        clock.advance(120)
        history = [*strip(history), assistant("first"), user("and the tests?", MARK)]
        second = client.beta.messages.create(
            messages=history, diagnostics={"previous_message_id": first.id}, betas=betas, **ask
        )
        assert second.diagnostics is None
        assert second.usage.cache_read_input_tokens == written
        assert second.usage.cache_creation is not None
        assert second.usage.cache_creation.ephemeral_5m_input_tokens == (
            second.usage.cache_creation_input_tokens
        )

        edited = [user("look at lex()"), *history[1:]]
        third = client.beta.messages.create(
            messages=edited, diagnostics={"previous_message_id": second.id}, betas=betas, **ask
        )
        assert third.diagnostics is not None
        assert third.diagnostics.cache_miss_reason is not None
        reason = third.diagnostics.cache_miss_reason
        assert reason.type == "messages_changed"
        assert reason.cache_missed_input_tokens > 0
        assert third.usage.cache_read_input_tokens == tokens(text("You review code. " * 10))

        with client.messages.stream(messages=edited, **ask) as stream:
            fourth = stream.get_final_message()
        switched = {**ask, "model": "claude-other"}
        with client.beta.messages.stream(
            messages=edited, diagnostics={"previous_message_id": third.id}, betas=betas, **switched
        ) as beta_stream:
            fifth = beta_stream.get_final_message()
    assert fourth.usage.cache_read_input_tokens == total(third.usage.model_dump())
    assert fourth.usage.output_tokens > 0
    assert fifth.usage.cache_read_input_tokens == 0
    assert fifth.diagnostics is not None
    assert fifth.diagnostics.cache_miss_reason is not None
    assert fifth.diagnostics.cache_miss_reason.type == "model_changed"
    assert [r.json.get("diagnostics") for r in server.requests][:2] == [
        {"previous_message_id": None},
        {"previous_message_id": "msg_1"},
    ]


# -- the property --------------------------------------------------------------------------

_block_text = st.text(alphabet="abcdefgh é", min_size=1, max_size=60)
# a step appends 1 to 4 messages of 1 to 5 blocks: at most LOOKBACK_BLOCKS blocks, so the
# previous request's entry stays in reach of the new last breakpoint
_step = st.lists(st.lists(_block_text, min_size=1, max_size=5), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(_step, min_size=1, max_size=6),
    waits=st.lists(st.floats(min_value=0, max_value=299), min_size=6, max_size=6),
    min_tokens=st.integers(min_value=1, max_value=200),
)
def test_append_only_requests_read_what_the_previous_one_read_and_wrote(
    steps: list[list[list[str]]], waits: list[float], min_tokens: int
) -> None:
    cache, clock = fresh(min_tokens=min_tokens)
    messages: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for n, (step, wait) in enumerate(zip(steps, waits, strict=False)):
        for k, blocks in enumerate(step):
            role = "user" if (len(messages) + k) % 2 == 0 else "assistant"
            messages.append({"role": role, "content": [text(b) for b in blocks]})
        marked = strip(messages)
        last = marked[-1]["content"][-1]
        last["cache_control"] = dict(MARK)
        clock.advance(wait)
        usage = cache.respond(request(marked), f"msg_{n}")[0]
        whole = sum(
            tokens(b, m["role"], i == 0) for m in strip(marked) for i, b in enumerate(m["content"])
        )
        assert total(usage) == whole
        assert min(usage["input_tokens"], usage["cache_read_input_tokens"]) >= 0
        if previous is not None:
            assert usage["cache_read_input_tokens"] == (
                previous["cache_read_input_tokens"] + previous["cache_creation_input_tokens"]
            )
        previous = usage
