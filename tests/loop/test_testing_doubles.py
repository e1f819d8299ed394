"""Issue 8, ``agent_reminders.testing``: strict script files, ``delay_seconds``,
``FunctionModel``, ``capture_events`` and the message builders.

The rules: docs/session-loop.md, "Test doubles" (ScriptedModel, its file format,
delay_seconds); ARCHITECTURE.md (testing ships ScriptedModel, FunctionModel, capture_events).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import agent_reminders.testing as testing
from agent_reminders import (
    EventLog,
    ModelRequest,
    ModelResponse,
    ScriptError,
    Session,
    Tool,
    Usage,
    agent_loop,
)
from agent_reminders.testing import (
    FunctionModel,
    ScriptedModel,
    assistant,
    capture_events,
    make_session,
    text_of,
    tool_call,
    tool_result,
    user,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def request(turn: int = 0) -> ModelRequest:
    return ModelRequest(system="", messages=[{"role": "user", "content": "hi"}], turn=turn)


def write(tmp_path: Path, entries: list[Any], *, jsonl: bool = False) -> Path:
    path = tmp_path / ("script.jsonl" if jsonl else "script.json")
    if jsonl:
        path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    else:
        path.write_text(json.dumps(entries), encoding="utf-8")
    return path


# ---------------------------------------------------------------- from_file errors


def test_a_binary_file_is_a_script_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ScriptError) as info:
        ScriptedModel.from_file(path)
    assert str(path) in info.value.message
    assert "UTF-8" in info.value.message
    assert info.value.code == "RMD-105"


@pytest.mark.parametrize("jsonl", [False, True])
def test_a_non_integer_token_count_names_file_entry_and_key(tmp_path: Path, jsonl: bool) -> None:
    path = write(
        tmp_path,
        [
            {"content": "ok"},
            {"content": "x", "usage": {"input_tokens": "lots", "output_tokens": 1}},
        ],
        jsonl=jsonl,
    )
    with pytest.raises(ScriptError) as info:
        ScriptedModel.from_file(path)
    message = info.value.message
    assert str(path) in message
    assert "response 1" in message
    assert "usage.input_tokens" in message
    assert "'lots'" in message
    assert "invalid literal" not in message
    if jsonl:
        assert "line 2" in message


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 1.5, "output_tokens": 1},
        {"input_tokens": True, "output_tokens": 1},
        {"input_tokens": -1, "output_tokens": 1},
        {"input_tokens": 1, "output_tokens": 1, "cached_input_tokens": "7"},
    ],
)
def test_token_counts_must_be_ints_at_least_zero(usage: dict[str, Any]) -> None:
    with pytest.raises(ScriptError, match=r"response 0\.usage\."):
        ScriptedModel([{"content": "x", "usage": usage}])


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    for name, text in (
        ("bom.json", json.dumps([{"content": "café"}])),
        ("bom.jsonl", json.dumps({"content": "café"}) + "\n"),
    ):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
        model = ScriptedModel.from_file(path)
        assert model.responses[0].message["content"] == "café"


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": "x", "usage": {"input_tokens": 1, "output_tokens": 1, "total": 2}}, "total"),
        ({"message": {"role": "assistant", "content": "x"}, "content": "y"}, "content"),
        ({"tool_calls": [], "role": "assistant"}, "role"),
    ],
)
def test_unknown_keys_are_script_errors(tmp_path: Path, entry: dict[str, Any], key: str) -> None:
    with pytest.raises(ScriptError, match=key) as info:
        ScriptedModel([{"content": "fine"}, entry])
    assert "response 1" in info.value.message
    path = write(tmp_path, [{"content": "fine"}, entry])
    with pytest.raises(ScriptError, match=key) as info:
        ScriptedModel.from_file(path)
    assert str(path) in info.value.message


def test_every_from_file_error_is_a_script_error(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("[{", encoding="utf-8")
    not_mapping = write(tmp_path, [{"content": "a"}, 3])
    for path in (tmp_path / "missing.json", tmp_path, bad_json, not_mapping):
        with pytest.raises(ScriptError) as info:
            ScriptedModel.from_file(path)
        assert str(path) in info.value.message
    with pytest.raises(TypeError):  # a wrong kind of entry is also a TypeError
        ScriptedModel.from_file(not_mapping)


# ---------------------------------------------------------------- delay_seconds


@pytest.mark.parametrize("bad", [-1, "1", True, float("nan"), float("inf"), None, [1]])
def test_delay_seconds_must_be_a_number_at_least_zero(bad: Any) -> None:
    if bad is None:  # null is "no delay"
        assert ScriptedModel([{"content": "x", "delay_seconds": None}]).delays == [0.0]
        return
    with pytest.raises(ScriptError, match=r"response 0\.delay_seconds"):
        ScriptedModel([{"content": "x", "delay_seconds": bad}])


def test_delay_seconds_is_read_from_files_on_any_entry_form(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            {"message": {"role": "assistant", "content": "a"}, "delay_seconds": 0.25},
            {"tool_calls": [tool_call("c1", "ls")], "delay_seconds": 1},
            {"content": "b"},
        ],
        jsonl=True,
    )
    assert ScriptedModel.from_file(path).delays == [0.25, 1.0, 0.0]


@pytest.mark.anyio
async def test_delay_waits_without_blocking_the_event_loop() -> None:
    model = ScriptedModel([{"content": "slow", "delay_seconds": 0.3}])
    ticks: list[float] = []

    async def ticker() -> None:
        for _ in range(5):
            ticks.append(time.monotonic())
            await anyio.sleep(0.03)

    start = time.monotonic()
    got: list[ModelResponse] = []

    async def ask() -> None:
        got.append(await model(request()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(ticker)
    elapsed = time.monotonic() - start
    assert got[0].message["content"] == "slow"
    assert elapsed >= 0.29
    assert len(ticks) == 5
    assert ticks[-1] - start < 0.29  # the ticker ran while the model waited


def test_import_agent_reminders_imports_no_anyio() -> None:
    code = "import sys, agent_reminders, agent_reminders.testing; print('anyio' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=None
    )
    assert done.stdout.strip() == "False"


def test_anyio_is_a_core_dependency() -> None:
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert '"anyio>=4.11"' in dependencies


# ---------------------------------------------------------------- FunctionModel


@pytest.mark.anyio
async def test_function_model_takes_sync_and_async_functions_and_records_requests() -> None:
    def sync_fn(req: ModelRequest) -> str:
        return f"turn {req.turn}"

    async def async_fn(req: ModelRequest) -> ModelResponse:
        return ModelResponse(
            message={"role": "assistant", "content": "async"},
            usage=Usage(input_tokens=3, output_tokens=1),
        )

    def mapping_fn(req: ModelRequest) -> dict[str, Any]:
        return {
            "tool_calls": [tool_call("c1", "ls")],
            "usage": {"input_tokens": 5, "output_tokens": 2},
        }

    for fn, check in (
        (sync_fn, lambda r: r.message == {"role": "assistant", "content": "turn 3"}),
        (async_fn, lambda r: r.usage == Usage(input_tokens=3, output_tokens=1)),
        (mapping_fn, lambda r: r.message["tool_calls"][0]["name"] == "ls"),
    ):
        model = FunctionModel(fn)
        sent = request(turn=3)
        got = await model(sent)
        assert isinstance(got, ModelResponse)
        assert check(got)
        assert model.requests == [sent]
        assert model.requests[0] is sent


@pytest.mark.anyio
async def test_function_model_drives_agent_loop() -> None:
    calls: list[str] = []

    def fn(req: ModelRequest) -> Any:
        if req.messages[-1]["role"] == "tool":
            return "Listed."
        return {"tool_calls": [tool_call("c1", "ls", path=".")]}

    def ls(path: str) -> str:
        calls.append(path)
        return "a.txt"

    model = FunctionModel(fn)
    result = await agent_loop(
        model, "list", tools=[Tool(name="ls", description="", parameters={}, fn=ls)]
    )
    assert result.final_message is not None
    assert result.final_message["content"] == "Listed."
    assert calls == ["."]
    assert list(result.requests) == model.requests


@pytest.mark.anyio
async def test_function_model_refuses_bad_return_values() -> None:
    with pytest.raises(TypeError, match="int"):
        await FunctionModel(lambda req: 42)(request())  # type: ignore[arg-type, return-value]
    with pytest.raises(ScriptError, match="colour"):
        await FunctionModel(lambda req: {"content": "x", "colour": 1})(request())
    with pytest.raises(TypeError):
        FunctionModel("not callable")  # type: ignore[arg-type]


# ---------------------------------------------------------------- capture_events


def test_capture_events_is_live_filtered_and_unsubscribes() -> None:
    log = EventLog()
    s = Session(event_log=log)
    with capture_events(log, kind_prefix="transcript.reminder.injected") as events:
        assert events == []
        s.inject({"body": "One.", "ttl_turns": 1})
        assert len(events) == 1  # live
        s.inject({"body": "Two.", "ttl_turns": 1})
    s.inject({"body": "After.", "ttl_turns": 1})
    assert events.kinds() == ["transcript.reminder.injected"] * 2
    assert all(e.payload["source"] == "in_pipeline" for e in events)
    assert events.event_log is log


def test_capture_events_without_a_log_makes_one_and_accepts_a_session() -> None:
    with capture_events() as events:
        s = Session(event_log=events.event_log)
        s.inject({"body": "Hi.", "ttl_turns": 1})
    assert "transcript.reminder.injected" in events.kinds()
    with capture_events(s, kind_prefix="transcript.reminder.cleared") as none:
        s.inject({"body": "Not cleared.", "ttl_turns": 1})
    assert none == []
    with pytest.raises(TypeError), capture_events("log"):  # type: ignore[arg-type]
        pass


def test_capture_events_unsubscribes_when_the_block_raises() -> None:
    log = EventLog()
    with pytest.raises(RuntimeError), capture_events(log) as events:
        raise RuntimeError("boom")
    log.emit("x.y", {})
    assert events == []


# ---------------------------------------------------------------- builders


def test_builders_make_valid_messages_a_session_accepts() -> None:
    call = tool_call("c1", "shell", command="ls")
    messages = [
        user("run ls"),
        assistant("", tool_calls=[call]),
        tool_result(call, "a.txt"),
        assistant("There is a.txt."),
    ]
    assert messages[1]["tool_calls"] == [
        {"id": "c1", "name": "shell", "arguments": {"command": "ls"}}
    ]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "shell",
        "content": "a.txt",
    }
    assert tool_result("c9", "x") == {"role": "tool", "tool_call_id": "c9", "content": "x"}
    s = make_session(*messages, system="Sys.", session_id="s-7")
    assert (s.id, s.system) == ("s-7", "Sys.")
    assert [m["role"] for m in s.transcript.messages] == ["user", "assistant", "tool", "assistant"]
    assert text_of(s.transcript.messages) == "run ls\n\na.txt\nThere is a.txt."
    assert [m["content"] for m in make_session("a", "b").transcript.messages] == ["a", "b"]


def test_testing_all_is_sorted_and_complete() -> None:
    names = testing.__all__
    assert list(names) == sorted(names)
    for name in (
        "FunctionModel",
        "ScriptedModel",
        "capture_events",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "make_session",
    ):
        assert name in names
        assert getattr(testing, name).__doc__
