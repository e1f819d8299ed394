"""The cache chain from the provider's own numbers: misses, causes, costs (docs/audit.md,
"What the provider billed")."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reminders import AuditError, ConfigError
from agent_reminders.audit import (
    CAUSES,
    Call,
    PriceTable,
    analyze,
    audit_file,
    audit_requests,
    render_html,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
T0 = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
SONNET = "claude-sonnet-4-5-20250929"


def call(index: int, read: int, written: int, **fields: Any) -> Call:
    fields.setdefault("model", SONNET)
    fields.setdefault("timestamp", T0 + timedelta(seconds=10 * index))
    return Call(index=index, provider="anthropic", uncached=3, read=read, written=written, **fields)


def causes(calls: list[Call]) -> list[tuple[int, str, int]]:
    return [(m.request, m.cause, m.tokens) for m in analyze(calls).misses]


# --- the chain rule --------------------------------------------------------------------------


def test_an_append_only_chain_has_no_miss() -> None:
    calls = [call(0, 0, 5000), call(1, 5000, 200), call(2, 5200, 90)]
    report = analyze(calls)
    assert report.misses == ()
    assert [r.expected_read for r in report.rows] == [None, 5000, 5200]


def test_a_read_below_the_previous_read_plus_write_is_a_miss() -> None:
    assert causes([call(0, 0, 5000), call(1, 4000, 1300)]) == [(1, "unexplained", 1000)]


def test_the_expected_read_never_exceeds_the_prompt() -> None:
    # a shorter prompt (messages removed) can read at most itself
    report = analyze([call(0, 0, 5000), call(1, 2000, 0)])
    assert report.rows[1].expected_read == 2003
    assert report.misses[0].tokens == 3


def test_openai_expects_the_previous_prompt_in_128_token_steps() -> None:
    def oa(index: int, whole: int, cached: int) -> Call:
        return Call(index=index, provider="openai", uncached=whole - cached, read=cached)

    # below 1,024 tokens nothing is cached, so nothing is missed
    assert analyze([oa(0, 900, 0), oa(1, 1000, 0)]).misses == ()
    # 2,100 tokens before: 2,048 (16 steps of 128) should be read
    report = analyze([oa(0, 2100, 0), oa(1, 2300, 2048)])
    assert report.misses == ()
    assert report.rows[1].expected_read == 2048
    assert [(m.cause, m.tokens) for m in analyze([oa(0, 2100, 0), oa(1, 2300, 1024)]).misses] == [
        ("unexplained", 1024)
    ]


def test_conversations_are_chained_apart() -> None:
    calls = [
        call(0, 0, 5000, session="a"),
        call(1, 0, 6000, session="b"),  # another session's first request: no miss
        call(2, 5000, 100, session="a"),
        call(3, 6000, 100, session="b"),
    ]
    assert analyze(calls).misses == ()


# --- causes ----------------------------------------------------------------------------------


def test_a_sub_agent_starts_cold() -> None:
    calls = [call(0, 0, 5000), call(1, 0, 3000, agent="a1"), call(2, 3000, 50, agent="a1")]
    assert causes(calls) == [(1, "subagent_cold_start", 3000)]


def test_compaction_then_model_then_idle_gap_come_first() -> None:
    assert causes([call(0, 0, 5000), call(1, 0, 900, compacted=True)])[0][1] == "compaction"
    switched = [call(0, 0, 5000), call(1, 0, 5100, model="claude-haiku-4-5")]
    report = analyze(switched)
    assert report.misses[0].cause == "model_changed"
    assert report.misses[0].detail == f"{SONNET} → claude-haiku-4-5"
    late = [call(0, 0, 5000), call(1, 0, 5100, timestamp=T0 + timedelta(minutes=6))]
    miss = analyze(late).misses[0]
    assert (miss.cause, miss.detail) == ("idle_gap", "idle 6.0 min, the cache lives 5.0 min")


def test_a_one_hour_cache_outlives_a_ten_minute_gap() -> None:
    later = T0 + timedelta(minutes=10)
    kept = [call(0, 0, 5000, written_1h=5000), call(1, 0, 5100, timestamp=later)]
    assert analyze(kept).misses[0].cause == "unexplained"  # not the gap: the hour holds
    gone = [call(0, 0, 5000, written_1h=5000), call(1, 0, 5100, timestamp=T0 + timedelta(hours=2))]
    assert analyze(gone).misses[0].cause == "idle_gap"


def test_the_providers_own_reason_is_used_and_kept() -> None:
    calls = [call(0, 0, 5000), call(1, 0, 5100, provider_reason="tools_changed")]
    miss = analyze(calls).misses[0]
    assert (miss.cause, miss.provider_reason) == ("tools_changed", "tools_changed")
    assert miss.detail == "the provider says tools_changed"
    unknown = [call(0, 0, 5000), call(1, 0, 5100, provider_reason="unavailable")]
    miss = analyze(unknown).misses[0]
    assert miss.cause == "unexplained"
    assert "unavailable" in miss.detail


def test_every_cause_has_words() -> None:
    assert all(isinstance(text, str) and text for text in CAUSES.values())
    assert list(CAUSES)[-1] == "unexplained"


# --- costs -----------------------------------------------------------------------------------


def test_costs_follow_the_price_table() -> None:
    price = PriceTable.default().lookup(SONNET)
    assert price is not None
    assert (price.input, price.output) == (3.0, 15.0)
    first = call(0, 0, 1_000_000, output=1000)
    assert first.cost(price) == pytest.approx(3.0 * 1.25 + 15.0 / 1000 + 3 * 3.0 / 1e6)
    calls = [first, call(1, 0, 1_000_000)]  # the whole prefix written again
    report = analyze(calls)
    miss = report.misses[0]
    assert miss.tokens == 1_000_000  # the previous read + write
    # written again at 1.25 instead of read at 0.1
    assert miss.cost == pytest.approx(1_000_000 * (1.25 - 0.1) * 3.0 / 1e6)
    assert report.miss_cost == pytest.approx(1_000_000 * (1.25 - 0.1) * 3.0 / 1e6)
    assert 0 < report.miss_share < 1


def test_an_unknown_model_is_not_priced_and_said_so() -> None:
    report = analyze([call(0, 0, 5000, model="my-local-model")])
    assert report.rows[0].cost is None
    assert report.unpriced == ("my-local-model",)
    assert report.to_json()["cost"]["unpriced_models"] == ["my-local-model"]


def test_prices_can_be_overridden_from_a_file(tmp_path: Path) -> None:
    toml = tmp_path / "prices.toml"
    toml.write_text(
        '[my-local-model]\ninput = 1.0\noutput = 2.0\n\n["claude-sonnet"]\nread = 0.2\n'
    )
    table = PriceTable.default().load(toml)
    assert table.lookup("my-local-model-7b") is not None
    sonnet = table.lookup(SONNET)
    assert sonnet is not None
    assert (sonnet.input, sonnet.read) == (3.0, 0.2)
    as_json = tmp_path / "prices.json"
    as_json.write_text(json.dumps({"gpt-5": {"input": 2.0}}))
    gpt = PriceTable.default().load(as_json).lookup("gpt-5.1-codex")
    assert gpt is not None
    assert (gpt.input, gpt.output) == (2.0, 10.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[x]\ninput = 1.0\n", "a new model needs output"),
        ("[gpt-5]\ninput = -1\n", "must be 0 or more"),
        ("[gpt-5]\ncached = 0.1\n", "unknown field 'cached'"),
        ("gpt-5 = 3\n", "must be a table of prices"),
        ("[gpt-5\n", "not valid TOML"),
    ],
)
def test_a_bad_price_file_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        PriceTable.default().load(path)


def test_fail_limits() -> None:
    report = analyze([call(0, 0, 5000), call(1, 0, 5100), call(2, 0, 5200, compacted=True)])
    assert report.fails()
    assert not report.fails(max_misses=2)
    assert report.fails(max_misses=1)
    assert not report.fails(ignore=frozenset({"unexplained", "compaction"}))
    assert report.fails(max_share=0.01)
    assert not report.fails(max_share=1.0)


# --- property: the chain rule ----------------------------------------------------------------


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000)), min_size=1, max_size=30))
def test_reading_what_was_cached_is_never_a_miss(steps: list[tuple[int, int]]) -> None:
    calls, cached = [], 0
    for i, (written, uncached) in enumerate(steps):
        calls.append(
            Call(index=i, provider="anthropic", uncached=uncached, read=cached, written=written)
        )
        cached += written
    report = analyze(calls)
    assert report.misses == ()
    assert report.cost - report.miss_cost == pytest.approx(report.cost)


@given(st.lists(st.tuples(st.integers(0, 9000), st.integers(0, 9000)), min_size=2, max_size=30))
def test_misses_never_cost_more_than_the_bill(steps: list[tuple[int, int]]) -> None:
    calls = [
        Call(index=i, provider="anthropic", uncached=10, read=r, written=w, model=SONNET)
        for i, (r, w) in enumerate(steps)
    ]
    report = analyze(calls)
    assert 0 <= report.miss_cost <= report.cost
    for row in report.rows[1:]:
        assert row.expected_read is not None
        assert (row.miss is not None) == (row.call.read < row.expected_read)


# --- inputs ----------------------------------------------------------------------------------

# What the real Claude Code 2.1.332 wrote against the fake cache server (see
# tests/integrations/_claude_code_sessions.py): the misses each scripted session must show.
CLAUDE_CODE = {
    "baseline": [],
    "hook-context": [],  # hook contexts are appended as new entries, never re-rendered
    "ttl-1h": [],
    "idle-gap": [(2, "idle_gap")],
    "compact": [(2, "compaction")],
    "model-switch": [(2, "model_changed"), (3, "model_changed")],
    "subagent": [(2, "subagent_cold_start")],
}


@pytest.mark.parametrize("scenario", sorted(CLAUDE_CODE))
def test_claude_code_sessions(scenario: str) -> None:
    report = audit_file(FIXTURES / "claude-code" / scenario)
    assert report.format == "directory"
    assert report.billed is not None
    assert [(m.request, m.cause) for m in report.billed.misses] == CLAUDE_CODE[scenario]
    one_file = audit_file(next((FIXTURES / "claude-code" / scenario).glob("*/*.jsonl")))
    assert one_file.format == "claude_code"
    assert one_file.to_json()["billed"]["requests"] == len(one_file.billed.rows)  # type: ignore[union-attr]


def test_a_claude_code_response_written_per_block_is_one_request(tmp_path: Path) -> None:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 5000, "cache_read_input_tokens": 0}
    entry: dict[str, Any] = {
        "type": "assistant",
        "sessionId": "s",
        "timestamp": "2026-12-04T10:00:00.000Z",
        "message": {"id": "msg_1", "model": SONNET, "usage": {**usage, "output_tokens": 1}},
    }
    last = {**entry, "message": {**entry["message"], "usage": {**usage, "output_tokens": 40}}}
    synthetic = {**entry, "message": {"id": "x", "model": "<synthetic>", "usage": usage}}
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in (entry, last, synthetic)) + "\n")
    report = audit_file(path)
    assert report.billed is not None
    (row,) = report.billed.rows
    assert (row.call.output, row.call.line, row.call.written) == (40, 1, 5000)


def test_a_codex_rollout(tmp_path: Path) -> None:
    def tokens(whole: int, cached: int, at: str) -> dict[str, Any]:
        info = {"last_token_usage": {"input_tokens": whole, "cached_input_tokens": cached}}
        return {
            "timestamp": at,
            "type": "event_msg",
            "payload": {"type": "token_count", "info": info},
        }

    lines = [
        {"timestamp": "2026-12-04T10:00:00Z", "type": "session_meta", "payload": {"id": "r1"}},
        {
            "timestamp": "2026-12-04T10:00:00Z",
            "type": "turn_context",
            "payload": {"model": "gpt-5"},
        },
        tokens(3000, 0, "2026-12-04T10:00:01Z"),
        {
            "timestamp": "2026-12-04T10:00:01Z",
            "type": "event_msg",
            "payload": {"type": "token_count", "info": None},
        },
        tokens(3300, 2944, "2026-12-04T10:00:02Z"),
        tokens(3500, 0, "2026-12-04T10:20:00Z"),
    ]
    path = tmp_path / "rollout-2026-12-04T10-00-00-r1.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    report = audit_file(path)
    assert report.format == "codex"
    assert report.billed is not None
    assert [r.call.read for r in report.billed.rows] == [0, 2944, 0]
    assert [(m.request, m.cause) for m in report.billed.misses] == [(2, "idle_gap")]
    assert report.billed.rows[0].call.session == "r1"
    assert report.billed.rows[0].cost == pytest.approx(3000 * 1.25 / 1e6)


def _anthropic_pair(messages: list[dict[str, Any]], read: int, written: int) -> dict[str, Any]:
    return {
        "request": {"model": SONNET, "system": "Be brief.", "messages": messages},
        "response": {
            "model": SONNET,
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": 7,
            },
        },
    }


def test_pairs_join_the_request_side_and_name_the_changed_message() -> None:
    hi = {"role": "user", "content": "run the tests"}
    reminder = {"role": "user", "content": "<system-reminder>3 tests fail</system-reminder>"}
    changed = {"role": "user", "content": "<system-reminder>2 tests fail</system-reminder>"}
    yo = {"role": "assistant", "content": "on it"}
    report = audit_requests(
        [
            _anthropic_pair([hi, reminder], 0, 5000),
            _anthropic_pair([hi, reminder, yo], 5000, 40),
            _anthropic_pair([hi, changed, yo, hi], 2000, 3100),
        ],
        encoding="bytes/4",
    )
    assert report.format == "anthropic"
    assert report.billed is not None
    assert [b.reason for b in report.prefix_breaks] == ["message_changed"]
    (miss,) = report.billed.misses
    assert (miss.request, miss.cause, miss.message) == (2, "reminder_changed", 1)
    assert "3 tests fail" in miss.detail
    assert "2 tests fail" in miss.detail
    rows = report.to_json()["billed"]["rows"]
    assert [r["predicted_read"] is not None for r in rows] == [True, True, True]


def test_pairs_of_openai_chat_and_responses() -> None:
    hi = {"role": "user", "content": "x" * 8000}
    chat = {
        "request": {"model": "gpt-4.1", "messages": [hi]},
        "response": {
            "model": "gpt-4.1",
            "usage": {
                "prompt_tokens": 2000,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        },
    }
    responses = {
        "request": {"model": "gpt-5", "input": [hi]},
        "response": {
            "model": "gpt-5",
            "usage": {
                "input_tokens": 2000,
                "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 1920},
            },
        },
    }
    for pair, read in ((chat, 0), (responses, 1920)):
        report = audit_requests([pair], encoding="bytes/4")
        assert report.billed is not None
        assert report.billed.rows[0].call.read == read
        assert report.billed.provider == "openai"


def test_a_request_log_with_usage(tmp_path: Path) -> None:
    def line(messages: list[dict[str, Any]], read: int, written: int, at: str) -> str:
        usage = {
            "input_tokens": read + written + 4,
            "output_tokens": 2,
            "cached_input_tokens": read,
            "cache_write_tokens": written,
            "cache_miss_reason": None,
        }
        record = {
            "session_id": "s1",
            "turn": len(messages),
            "system": "Be brief.",
            "messages": messages,
            "model": "anthropic:claude-sonnet-4-5",
            "usage": usage,
            "timestamp": at,
        }
        return json.dumps(record)

    hi = {"role": "user", "content": "hi"}
    path = tmp_path / "log.jsonl"
    path.write_text(
        line([hi], 0, 3000, "2026-12-04T10:00:00Z")
        + "\n"
        + line([hi, hi], 0, 3010, "2026-12-04T10:07:00Z")
        + "\n"
    )
    report = audit_file(path, encoding="bytes/4")
    assert report.format == "log"
    assert report.billed is not None
    assert [(m.cause, m.tokens) for m in report.billed.misses] == [("idle_gap", 3000)]
    assert report.billed.rows[0].call.uncached == 4
    assert report.billed.unpriced == ()


def test_request_bodies_alone_have_no_billed_part() -> None:
    report = audit_requests([{"messages": [{"role": "user", "content": "hi"}]}], encoding="bytes/4")
    assert report.billed is None
    assert "billed" not in report.to_json()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [{"request": {"messages": []}, "response": {}}, {"messages": []}],
            "line 2: not a {request, response} pair",
        ),
        (
            [{"type": "assistant", "sessionId": "s", "message": {"usage": {"input_tokens": -1}}}],
            "line 1: input_tokens must be a count of tokens",
        ),
        (
            [
                {
                    "type": "assistant",
                    "sessionId": "s",
                    "timestamp": "yesterday",
                    "message": {"usage": {"input_tokens": 1}},
                }
            ],
            "timestamp 'yesterday' is not ISO 8601",
        ),
        ([{"type": "user", "sessionId": "s"}], "holds no billed model request"),
    ],
)
def test_bad_input_is_one_error_naming_the_line(
    tmp_path: Path, lines: list[dict[str, Any]], message: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(AuditError, match=message.replace("{", r"\{").replace("}", r"\}")):
        audit_file(path, encoding="bytes/4")


def test_a_folder_without_session_files(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match=r"no \*\.jsonl file"):
        audit_file(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps({"messages": []}) + "\n")
    with pytest.raises(AuditError, match="holds the provider's numbers"):
        audit_file(tmp_path)


def test_the_html_report_marks_each_miss_with_its_cause_and_cost() -> None:
    page = render_html(audit_file(FIXTURES / "claude-code" / "model-switch"))
    assert page.count('class="miss"') == 2
    assert 'data-cause="model_changed"' in page
    assert "what it would have cost with no miss" in page
    assert "the model changed: a cache belongs to one model" in page
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_the_html_report_says_what_each_miss_means() -> None:
    page = render_html(audit_file(FIXTURES / "claude-code" / "model-switch"))
    # the card says what a miss is; each cause is spelled out in the table and under the chart
    assert "a miss: a request that could not read from the cache what the one before it" in page
    meaning = "model_changed — the model changed: a cache belongs to one model"
    assert f"<td>{meaning}</td>" in page
    assert f"Here: request 2: {meaning}; request 3: {meaning}." in page
    # a compaction's miss is the intended one: not red, and labelled so
    page = render_html(audit_file(FIXTURES / "claude-code" / "compact"))
    assert (
        '<div class="card "><div class="v">1 (43.2%)</div>'
        '<div class="k">cache misses (share of the bill)</div>'
        '<div class="why">the one intended miss: compaction at request 2, which replaces the '
        "history on purpose</div>"
    ) in page
    assert ">compaction (intended) $" in page
    assert "(on purpose: the intended miss)" in page


# What the real Codex CLI 0.171.0 wrote against the fake Responses server (see
# tests/integrations/_codex_sessions.py and tests/fixtures/transcripts/codex/README.md).
CODEX = {
    "baseline": [],
    "agents_md": [],  # a changed AGENTS.md is appended, not re-rendered
    "hook_context": [],  # likewise a SessionStart hook's context
    "idle_wait": [(2, "idle_gap")],  # a real 10-minute pause
    "model_switch": [(2, "model_changed")],
    # the summary request (no tools) and the rebuilt conversation after it
    "compaction": [(2, "compaction"), (3, "compaction")],
    "compaction_mid_turn": [(1, "compaction"), (2, "compaction")],
    # nothing in the rollout shows these changes: honestly unexplained
    "tools_change": [(2, "unexplained")],
    "base_instructions": [(2, "unexplained")],
}


@pytest.mark.parametrize("scenario", sorted(CODEX))
def test_codex_sessions(scenario: str) -> None:
    report = audit_file(FIXTURES / "codex" / scenario)
    assert report.billed is not None
    assert [(m.request, m.cause) for m in report.billed.misses] == CODEX[scenario]
    assert report.billed.provider == "openai"


def test_a_codex_rollout_without_usage_is_an_error() -> None:
    with pytest.raises(AuditError, match="no billed model request"):
        audit_file(next((FIXTURES / "codex" / "no_usage").rglob("rollout-*.jsonl")))


def test_codex_token_counts_repeated_at_a_turn_start_count_once(tmp_path: Path) -> None:
    def count(last: int, total: int) -> dict[str, Any]:
        info = {
            "last_token_usage": {"input_tokens": last, "cached_input_tokens": 0},
            "total_token_usage": {"input_tokens": total},
        }
        payload = {"type": "token_count", "info": info}
        return {"timestamp": "2026-12-04T10:00:00Z", "type": "event_msg", "payload": payload}

    path = tmp_path / "rollout.jsonl"
    lines = [count(2000, 2000), count(2000, 2000), count(2100, 4100)]
    path.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    report = audit_file(path)
    assert report.billed is not None
    assert [r.call.prompt for r in report.billed.rows] == [2000, 2100]


def test_a_shrinking_conversation_is_a_compaction() -> None:
    turns = [{"role": "user", "content": f"step {i} " * 200} for i in range(6)]
    recap = {"role": "user", "content": "Summary of the work so far."}
    report = audit_requests(
        [
            _anthropic_pair(turns[:5], 0, 5000),
            _anthropic_pair(turns, 5000, 300),
            _anthropic_pair([recap], 0, 900),
        ],
        encoding="bytes/4",
    )
    assert report.billed is not None
    (miss,) = report.billed.misses
    assert (miss.cause, miss.detail) == (
        "compaction",
        "the conversation shrank from 6 to 1 messages",
    )


def test_a_claude_code_upgrade_and_a_compaction_trigger_are_read(tmp_path: Path) -> None:
    def entry(n: int, read: int, written: int, version: str) -> dict[str, Any]:
        usage = {"input_tokens": 3, "cache_read_input_tokens": read}
        usage["cache_creation_input_tokens"] = written
        return {
            "type": "assistant",
            "sessionId": "s",
            "version": version,
            "timestamp": f"2026-12-04T10:00:0{n}.000Z",
            "message": {"id": f"msg_{n}", "model": SONNET, "usage": usage},
        }

    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "sessionId": "s",
        "compactMetadata": {"trigger": "auto", "preTokens": 160000},
    }
    lines = [
        entry(1, 0, 5000, "2.1.331"),
        entry(2, 0, 5100, "2.1.332"),
        boundary,
        entry(3, 0, 900, "2.1.332"),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    report = audit_file(path)
    assert report.billed is not None
    assert [(m.cause, m.detail) for m in report.billed.misses] == [
        ("system_changed", "Claude Code 2.1.331 → 2.1.332: a new system prompt"),
        ("compaction", "compacted (auto), 160,000 tokens before"),
    ]


def test_a_folder_reports_each_session(tmp_path: Path) -> None:
    for name in ("baseline", "idle-gap"):
        source = next((FIXTURES / "claude-code" / name).glob("*/*.jsonl"))
        (tmp_path / f"{name}.jsonl").write_bytes(source.read_bytes())
    report = audit_file(tmp_path)
    assert report.billed is not None
    sessions = report.billed.to_json()["sessions"]
    assert sorted(s["misses"] for s in sessions.values()) == [0, 1]
    assert sum(s["requests"] for s in sessions.values()) == len(report.billed.rows)
    assert all(s["cost"] > 0 for s in sessions.values())
    assert [m.cause for m in report.billed.misses] == ["idle_gap"]


def test_a_folder_leaves_out_files_with_nothing_billed(tmp_path: Path) -> None:
    source = next((FIXTURES / "claude-code" / "idle-gap").glob("*/*.jsonl"))
    (tmp_path / "session.jsonl").write_bytes(source.read_bytes())
    (tmp_path / "empty.jsonl").write_text("")
    unanswered = {"type": "user", "sessionId": "u", "message": {"role": "user", "content": "hi"}}
    (tmp_path / "unanswered.jsonl").write_text(json.dumps(unanswered) + "\n")
    (tmp_path / "bodies.jsonl").write_text(json.dumps({"messages": []}) + "\n")
    report = audit_file(tmp_path)
    assert report.files == (str(tmp_path / "session.jsonl"),)
    assert report.billed is not None
    assert [m.cause for m in report.billed.misses] == ["idle_gap"]
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(AuditError, match=r"broken\.jsonl line 1: not valid JSON"):
        audit_file(tmp_path)


@pytest.mark.parametrize(
    "first",
    [
        {"type": "atis-latch", "sessionId": "s"},
        {"type": "summary", "summary": "Fix the build", "leafUuid": "u1"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "sessionId": "s"},
    ],
)
def test_a_claude_code_transcript_is_told_by_any_first_entry(
    tmp_path: Path, first: dict[str, Any]
) -> None:
    source = next((FIXTURES / "claude-code" / "baseline").glob("*/*.jsonl"))
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(first) + "\n" + source.read_text())
    assert audit_file(path).format == "claude_code"


def test_a_claude_code_transcript_names_the_earlier_message_that_changed(tmp_path: Path) -> None:
    """Claude Code 2.1.3xx records each request's message hashes (``api-request``) and the
    messages themselves (``api-request-blob``, its own entries): a miss where an earlier
    message changed is named, with a short diff, from the transcript alone."""
    from agent_reminders.audit.sources import message_hash

    source = next((FIXTURES / "claude-code" / "baseline").glob("*/*.jsonl"))
    entries = [json.loads(line) for line in source.read_text().splitlines()]
    requests = [e for e in entries if e["type"] == "api-request"]
    last = requests[-1]  # the resumed run's request: every hash in its tail, no base
    blobs = {e["hash"]: e["message"] for e in entries if e["type"] == "api-request-blob"}
    changed_at = next(i for i, h in enumerate(last["tail"]) if h in blobs and i > 0)
    old = blobs[last["tail"][changed_at]]
    text = json.dumps(old)
    assert "linux" in text
    new = json.loads(text.replace("linux", "darwin", 1))
    new_hash = message_hash(new)
    last["tail"][changed_at] = new_hash
    entries.insert(
        entries.index(last),
        {
            "type": "api-request-blob",
            "sessionId": last["sessionId"],
            "hash": new_hash,
            "message": new,
        },
    )
    answer = next(e for e in entries if e["type"] == "assistant" and e["requestRef"] == last["id"])
    usage = answer["message"]["usage"]
    usage["cache_creation_input_tokens"] += usage["cache_read_input_tokens"] - 100
    usage["cache_read_input_tokens"] = 100
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    report = audit_file(path)
    assert report.billed is not None
    (miss,) = report.billed.misses
    assert miss.cause == "message_changed"
    assert miss.detail.startswith(f"message {changed_at} changed: ")
    assert "linux" in miss.detail
    assert "darwin" in miss.detail
