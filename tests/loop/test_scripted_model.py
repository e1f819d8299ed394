"""Tests for the scripted test model that plays back responses and records requests.

The rules (docs/session-loop.md, "Test doubles"): ``agent_reminders.testing.ScriptedModel``
plays back in order, takes mappings and shorthands, keeps ``.requests``, fails clearly when the
script runs out, repeats with ``loop=True``, and reads a JSON array or JSON Lines with
``from_file``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reminders import ModelRequest, ModelResponse, Tool, Usage, agent_loop
from agent_reminders.testing import ScriptedModel, ScriptExhaustedError

SCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def request(turn: int = 0, text: str = "hi") -> ModelRequest:
    return ModelRequest(
        system="sys",
        messages=({"role": "user", "content": text},),
        session_id="s-1",
        turn=turn,
    )


# -- playback -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_plays_back_model_responses_in_order() -> None:
    first = ModelResponse(message={"role": "assistant", "content": "one"})
    second = ModelResponse(
        message={"role": "assistant", "content": "two"},
        usage=Usage(input_tokens=5, output_tokens=2),
    )
    model = ScriptedModel([first, second])
    assert await model(request(0)) == first
    assert await model(request(1)) == second


@pytest.mark.anyio
async def test_full_mapping_with_message_and_usage() -> None:
    model = ScriptedModel(
        [
            {
                "message": {"role": "assistant", "content": "hello"},
                "usage": {"input_tokens": 11, "output_tokens": 3, "cached_input_tokens": 7},
            }
        ]
    )
    got = await model(request())
    assert isinstance(got, ModelResponse)
    assert got.message["role"] == "assistant"
    assert got.message["content"] == "hello"
    assert got.usage == Usage(input_tokens=11, output_tokens=3, cached_input_tokens=7)


@pytest.mark.anyio
async def test_usage_without_cached_tokens_has_none_there() -> None:
    model = ScriptedModel([{"content": "x", "usage": {"input_tokens": 4, "output_tokens": 1}}])
    got = await model(request())
    assert got.usage is not None
    assert (got.usage.input_tokens, got.usage.output_tokens) == (4, 1)
    assert got.usage.cached_input_tokens is None


@pytest.mark.anyio
async def test_content_shorthand_is_an_assistant_message_without_usage() -> None:
    model = ScriptedModel([{"content": "just text"}])
    got = await model(request())
    assert got.message["role"] == "assistant"
    assert got.message["content"] == "just text"
    assert not got.message.get("tool_calls")
    assert got.usage is None


@pytest.mark.anyio
async def test_tool_calls_shorthand_is_an_assistant_message_with_the_calls() -> None:
    calls = [
        {"id": "c1", "name": "shell", "arguments": {"command": "ls"}},
        {"id": "c2", "name": "read", "arguments": {"path": "a.txt"}},
    ]
    model = ScriptedModel([{"tool_calls": calls}])
    got = await model(request())
    assert got.message["role"] == "assistant"
    assert got.message["tool_calls"] == calls
    assert got.usage is None


@pytest.mark.anyio
async def test_message_mapping_without_usage_gives_none() -> None:
    model = ScriptedModel([{"message": {"role": "assistant", "content": "m"}}])
    assert (await model(request())).usage is None


@pytest.mark.anyio
async def test_accepts_any_iterable_of_responses() -> None:
    model = ScriptedModel({"content": f"r{i}"} for i in range(3))
    got = [(await model(request(i))).message["content"] for i in range(3)]
    assert got == ["r0", "r1", "r2"]


@pytest.mark.anyio
async def test_mutating_the_source_mapping_later_does_not_change_the_script() -> None:
    source = {"message": {"role": "assistant", "content": "original"}}
    model = ScriptedModel([source])
    source["message"]["content"] = "changed"
    assert (await model(request())).message["content"] == "original"


@pytest.mark.anyio
async def test_records_every_request_in_order() -> None:
    model = ScriptedModel([{"content": "a"}, {"content": "b"}])
    sent = [request(0, "first"), request(1, "second")]
    for r in sent:
        await model(r)
    assert len(model.requests) == 2
    assert model.requests[0] is sent[0]
    assert model.requests[1] is sent[1]


# -- running out / looping ------------------------------------------------------------------


@pytest.mark.anyio
async def test_running_out_raises_a_clear_error() -> None:
    model = ScriptedModel([{"content": "a"}, {"content": "b"}])
    await model(request(0))
    await model(request(1))
    with pytest.raises(ScriptExhaustedError) as info:
        await model(request(2))
    message = str(info.value)
    assert "ran out" in message or "exhausted" in message.lower()
    assert "2" in message  # how many responses the script had
    # the request that found the script empty was still received and recorded
    assert len(model.requests) == 3


def test_script_exhausted_error_is_a_runtime_error() -> None:
    assert issubclass(ScriptExhaustedError, RuntimeError)


@pytest.mark.anyio
async def test_running_out_keeps_raising() -> None:
    model = ScriptedModel([{"content": "only"}])
    await model(request())
    for _ in range(2):
        with pytest.raises(ScriptExhaustedError):
            await model(request())


@pytest.mark.anyio
async def test_loop_true_starts_over() -> None:
    model = ScriptedModel([{"content": "a"}, {"content": "b"}], loop=True)
    got = [(await model(request(i))).message["content"] for i in range(5)]
    assert got == ["a", "b", "a", "b", "a"]
    assert len(model.requests) == 5


@pytest.mark.anyio
async def test_exhaustion_propagates_out_of_agent_loop() -> None:
    model = ScriptedModel([{"tool_calls": [{"id": "c1", "name": "nope", "arguments": {}}]}])
    with pytest.raises(ScriptExhaustedError):
        await agent_loop(model, "task")
    assert len(model.requests) == 2


# -- bad scripts in memory -------------------------------------------------------------------


def test_empty_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ScriptedModel([])


def test_entry_that_is_not_a_mapping_is_rejected_naming_its_index() -> None:
    with pytest.raises(TypeError, match="response 1"):
        ScriptedModel([{"content": "ok"}, "not a mapping"])  # type: ignore[list-item]


def test_entry_without_message_content_or_tool_calls_is_rejected() -> None:
    with pytest.raises(ValueError, match="response 0") as info:
        ScriptedModel([{"text": "hello"}])
    assert "message" in str(info.value)
    assert "content" in str(info.value)


def test_bad_message_role_is_rejected_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"response 0\.message\.role"):
        ScriptedModel([{"message": {"role": "robot", "content": "x"}}])


def test_bad_tool_call_is_rejected_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"tool_calls\[0\]\.id"):
        ScriptedModel([{"tool_calls": [{"name": "shell", "arguments": {}}]}])


def test_usage_missing_a_field_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="output_tokens"):
        ScriptedModel([{"content": "x", "usage": {"input_tokens": 3}}])


def test_usage_that_is_not_a_mapping_is_rejected() -> None:
    with pytest.raises(TypeError, match="usage"):
        ScriptedModel([{"content": "x", "usage": [1, 2]}])


# -- from_file --------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["two_turns.json", "two_turns.jsonl"])
async def test_from_file_reads_json_array_and_json_lines(name: str) -> None:
    model = ScriptedModel.from_file(SCRIPTS / name)
    first = await model(request(0))
    assert first.message["tool_calls"] == [
        {"id": "call_1", "name": "shell", "arguments": {"command": ["echo", "hi"]}}
    ]
    assert first.usage == Usage(input_tokens=120, output_tokens=8)
    second = await model(request(1))
    assert second.message["content"] == "All done."
    assert second.usage is None
    with pytest.raises(ScriptExhaustedError):
        await model(request(2))


@pytest.mark.anyio
async def test_from_file_accepts_a_str_path_and_full_message_form() -> None:
    model = ScriptedModel.from_file(str(SCRIPTS / "message_form.json"))
    first = await model(request(0))
    assert first.message == {"role": "assistant", "content": "Thinking out loud."}
    assert first.usage == Usage(input_tokens=1000, output_tokens=50, cached_input_tokens=900)
    second = await model(request(1))
    assert second.message["tool_calls"][0]["name"] == "read"
    assert second.usage is None


@pytest.mark.anyio
async def test_from_file_with_loop_starts_over() -> None:
    model = ScriptedModel.from_file(SCRIPTS / "two_turns.jsonl", loop=True)
    contents = [(await model(request(i))).message.get("content") for i in range(4)]
    assert contents[1] == contents[3] == "All done."
    assert contents[0] == contents[2]


@pytest.mark.anyio
async def test_from_file_script_drives_agent_loop() -> None:
    seen: list[str] = []

    def shell(command: list[str]) -> str:
        seen.append(" ".join(command))
        return "hi\n"

    model = ScriptedModel.from_file(SCRIPTS / "two_turns.json")
    result = await agent_loop(
        model,
        "say hi",
        tools=[Tool(name="shell", description="run", parameters={}, fn=shell)],
    )
    assert result.status == "completed"
    assert seen == ["echo hi"]
    assert result.final_message is not None
    assert result.final_message["content"] == "All done."
    assert list(result.requests) == model.requests


def test_from_file_missing_file_names_the_path() -> None:
    path = SCRIPTS / "does_not_exist.json"
    with pytest.raises(ValueError, match=r"does_not_exist\.json"):
        ScriptedModel.from_file(path)


def test_from_file_directory_is_unreadable() -> None:
    with pytest.raises(ValueError, match="scripts"):
        ScriptedModel.from_file(SCRIPTS)


@pytest.mark.parametrize("name", ["bad_json.json", "bad_line.jsonl"])
def test_from_file_bad_json_names_the_file(name: str) -> None:
    with pytest.raises(ValueError, match=name.replace(".", r"\.")) as info:
        ScriptedModel.from_file(SCRIPTS / name)
    assert "JSON" in str(info.value)


@pytest.mark.parametrize("name", ["empty.json", "empty_file.jsonl"])
def test_from_file_empty_script_is_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="at least one"):
        ScriptedModel.from_file(SCRIPTS / name)


def test_from_file_bad_entry_names_its_index() -> None:
    with pytest.raises(ValueError, match="response 1"):
        ScriptedModel.from_file(SCRIPTS / "bad_entry.json")


def test_from_file_non_mapping_entry_names_its_index() -> None:
    with pytest.raises(TypeError, match="response 1"):
        ScriptedModel.from_file(SCRIPTS / "not_mapping.json")


def test_from_file_bad_usage_names_the_missing_field() -> None:
    with pytest.raises(ValueError, match="output_tokens"):
        ScriptedModel.from_file(SCRIPTS / "bad_usage.json")


def test_from_file_invalid_utf8_is_a_clear_value_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"content": "caf\xe9"}]')
    with pytest.raises(ValueError, match=r"(?i)utf-8|latin1\.json"):
        ScriptedModel.from_file(path)
