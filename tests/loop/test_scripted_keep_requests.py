"""``ScriptedModel.requests`` is bounded: it keeps the last ``keep_requests`` requests.

A looping script in a long-running process (``serve --model scripted:PATH``) used to keep every
request it got, each holding the conversation it carried, so the process grew without end.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from agent_reminders import ModelRequest
from agent_reminders.testing import ScriptedModel, ScriptExhaustedError

MANY = 5000


def _request(turn: int) -> ModelRequest:
    return ModelRequest(
        system="sys", messages=({"role": "user", "content": f"turn {turn}"},), turn=turn
    )


async def _send(model: ScriptedModel, count: int) -> int:
    """``count`` requests; the longest ``requests`` got along the way."""
    longest = 0
    for turn in range(count):
        await model(_request(turn))
        longest = max(longest, len(model.requests))
    return longest


def test_a_looping_script_keeps_only_its_latest_requests_by_default() -> None:
    model = ScriptedModel([{"content": "ok"}], loop=True)
    longest = anyio.run(_send, model, MANY)
    assert longest == len(model.requests) == 100
    assert [r.turn for r in model.requests] == list(range(MANY - 100, MANY))
    assert model.calls == MANY


@pytest.mark.parametrize(("keep", "kept"), [(0, 0), (1, 1), (7, 7), (None, MANY)])
def test_keep_requests_bounds_what_is_kept(keep: int | None, kept: int) -> None:
    model = ScriptedModel([{"content": "ok"}], loop=True, keep_requests=keep)
    assert anyio.run(_send, model, MANY) == kept
    assert [r.turn for r in model.requests] == list(range(MANY - kept, MANY))
    assert model.calls == MANY


def test_lowering_keep_requests_drops_the_oldest_at_once() -> None:
    model = ScriptedModel([{"content": "ok"}], loop=True, keep_requests=None)
    anyio.run(_send, model, 10)
    model.keep_requests = 3
    assert [r.turn for r in model.requests] == [7, 8, 9]
    model.keep_requests = 0
    assert model.requests == []


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_keep_requests_must_be_none_or_a_count(bad: object) -> None:
    with pytest.raises(ValueError, match="keep_requests"):
        ScriptedModel([{"content": "ok"}], keep_requests=bad)  # type: ignore[arg-type]


def test_from_file_takes_keep_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"content": "ok"}) + "\n")
    model = ScriptedModel.from_file(script, loop=True, keep_requests=2)
    anyio.run(_send, model, 50)
    assert [r.turn for r in model.requests] == [48, 49]
    assert ScriptedModel.from_file(script).keep_requests == 100  # the constructor's default


def test_running_out_counts_every_request_not_only_the_kept_ones() -> None:
    model = ScriptedModel([{"content": "one"}, {"content": "two"}], keep_requests=0)
    anyio.run(_send, model, 2)
    with pytest.raises(ScriptExhaustedError, match="request 3 "):
        anyio.run(_send, model, 1)
