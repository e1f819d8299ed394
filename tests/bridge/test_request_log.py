"""The request log's lines: the four keys every line has, the model, the answer's usage and
the time the request was sent when known, and the audit reading them as before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from agent_reminders import ModelRequest, Usage
from agent_reminders.audit import audit_requests
from agent_reminders.bridge import append_request, request_log_line, request_log_record
from agent_reminders.bridge.request_log import utc_timestamp

REQUEST = ModelRequest(
    system="Be brief.",
    messages=[{"role": "user", "content": "héllo"}],
    session_id="s1",
    turn=3,
)
USAGE = Usage(
    input_tokens=1200,
    output_tokens=40,
    cached_input_tokens=0,
    cache_write_tokens=1100,
    cache_miss_reason="system_changed",
)


def test_a_line_without_the_new_keys_is_as_before() -> None:
    assert request_log_record(REQUEST) == {
        "session_id": "s1",
        "turn": 3,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "héllo"}],
    }
    assert request_log_line(REQUEST) == (
        '{"session_id": "s1", "turn": 3, "system": "Be brief.", '
        '"messages": [{"role": "user", "content": "héllo"}]}'
    )


def test_the_full_line_shape() -> None:
    line = request_log_line(
        REQUEST,
        model="anthropic:claude-opus-4-8",
        usage=USAGE,
        timestamp="2026-12-04T16:20:00.123Z",
    )
    record = json.loads(line)
    assert list(record) == [
        "session_id", "turn", "timestamp", "model", "usage", "system", "messages",
    ]  # fmt: skip
    assert record["timestamp"] == "2026-12-04T16:20:00.123Z"
    assert record["model"] == "anthropic:claude-opus-4-8"
    assert record["usage"] == USAGE.to_dict()
    assert record["usage"]["cache_miss_reason"] == "system_changed"


def test_keys_left_out_independently() -> None:
    assert list(request_log_record(REQUEST, usage=USAGE)) == [
        "session_id", "turn", "usage", "system", "messages",
    ]  # fmt: skip
    assert list(request_log_record(REQUEST, model="m")) == [
        "session_id", "turn", "model", "system", "messages",
    ]  # fmt: skip


def test_timestamps_are_utc_with_milliseconds() -> None:
    paris = timezone(timedelta(hours=1))
    assert utc_timestamp(datetime(2026, 12, 4, 17, 20, 0, 123999, tzinfo=paris)) == (
        "2026-12-04T16:20:00.123Z"
    )
    assert utc_timestamp(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00.000Z"
    with pytest.raises(ValueError, match="aware datetime"):
        utc_timestamp(datetime(2026, 1, 1))


@pytest.mark.anyio
async def test_append_request_writes_one_line_each(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    await append_request(log, REQUEST)
    await append_request(log, REQUEST, model="m", usage=USAGE, timestamp="t")
    first, second = log.read_text(encoding="utf-8").splitlines()
    assert first == request_log_line(REQUEST)
    assert second == request_log_line(REQUEST, model="m", usage=USAGE, timestamp="t")


def test_the_audit_reads_the_new_lines_as_before() -> None:
    plain = request_log_record(REQUEST)
    full = request_log_record(
        REQUEST, model="anthropic:claude-opus-4-8", usage=USAGE, timestamp="2026-12-04T10:00:00Z"
    )
    one, two = (audit_requests([r], encoding="bytes/4") for r in (plain, full))
    assert one.format == two.format == "log"
    assert one.prompt_tokens == two.prompt_tokens
    assert two.rows[0].session_id == "s1"
    # the usage is what the provider billed: the audit reads it too
    assert one.billed is None
    assert two.billed is not None
    assert two.billed.rows[0].call.model == "anthropic:claude-opus-4-8"
