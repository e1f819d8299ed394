"""Audit input (docs/audit.md, "Formats"): the four formats detected per file, the prompt
sequence each one gives, ``--format``, and every kind of bad line (one error naming the line,
nothing reported)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import assistant, canon, text_block, tokens_b4, user, write_jsonl

from agent_reminders import AgentRemindersError, AuditError, Transcript
from agent_reminders.audit import audit_file, audit_requests

SYSTEM = "You are a careful coding agent."
TOOLS_CHAT = [{"type": "function", "function": {"name": "ls", "parameters": {}}}]
TOOLS_ANTHROPIC = [{"name": "ls", "description": "list", "input_schema": {"type": "object"}}]


def b4(requests: list[Any], **kwargs: Any) -> Any:
    return audit_requests(requests, encoding="bytes/4", **kwargs)


# --- detection --------------------------------------------------------------------------------


def test_openai_chat_leading_system_and_developer_messages_are_the_system_prompt() -> None:
    head = [{"role": "system", "content": SYSTEM}, {"role": "developer", "content": "Be brief."}]
    body = {"messages": [*head, user("hi")], "tools": TOOLS_CHAT}
    report = b4([body])
    assert report.format == "openai_chat"
    # tools, then each system message, then the messages, each canonical JSON
    expected = tokens_b4(TOOLS_CHAT) + sum(tokens_b4(m) for m in head) + tokens_b4(user("hi"))
    assert report.prompt_tokens == expected
    # messages are numbered from 0 after the system prompt
    changed = {"messages": [*head, user("hello")], "tools": TOOLS_CHAT}
    assert [b.to_json() for b in b4([body, changed]).prefix_breaks] == [
        {"request": 1, "message": 0, "reason": "message_changed"}
    ]


def test_openai_responses_instructions_and_input() -> None:
    items = [{"type": "message", "role": "user", "content": "hi"}]
    call = {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}
    first = {"instructions": SYSTEM, "input": items}
    second = {"instructions": SYSTEM, "input": [*items, call]}
    report = b4([first, second])
    assert report.format == "openai_responses"
    assert report.rows[0].prompt_tokens == tokens_b4(SYSTEM) + tokens_b4(items[0])
    assert report.prefix_breaks == ()
    # a bare string input is one message; instructions alone are a request too
    assert b4([{"input": "hi"}]).prompt_tokens == tokens_b4("hi")
    assert b4([{"instructions": SYSTEM}]).prompt_tokens == tokens_b4(SYSTEM)


def test_anthropic_top_level_system_and_blocks() -> None:
    system = [text_block(SYSTEM, mark=True)]
    messages = [{"role": "user", "content": [text_block("hi", mark=True)]}]
    report = b4([{"system": system, "messages": messages, "tools": TOOLS_ANTHROPIC}])
    assert report.format == "anthropic"
    # cache_control markers are removed before anything is measured
    expected = (
        tokens_b4(TOOLS_ANTHROPIC)
        + tokens_b4([text_block(SYSTEM)])
        + tokens_b4({"role": "user", "content": [text_block("hi")]})
    )
    assert report.prompt_tokens == expected


def test_request_log_lines() -> None:
    line = {"session_id": "s1", "turn": 1, "system": SYSTEM, "messages": [user("hi")]}
    report = b4([line])
    assert report.format == "log"
    assert report.prompt_tokens == tokens_b4(SYSTEM) + tokens_b4(user("hi"))
    assert report.rows[0].session_id == "s1"


def test_request_log_directive_ids_are_not_measured() -> None:
    envelope = {"role": "user", "content": "<context-directives>x</context-directives>"}
    with_ids = {**envelope, "directive_ids": ["r1"]}
    a = b4([{"session_id": "s", "system": "", "messages": [with_ids]}])
    assert a.prompt_tokens == tokens_b4(envelope)


def test_a_body_that_fits_both_messages_formats() -> None:
    plain = {"messages": [user("hi")]}
    assert b4([plain]).format == "openai_chat"
    claude = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [user("hi")]}
    assert b4([claude, plain]).format == "anthropic"
    # a later line settles it
    anthropic = {"system": SYSTEM, "messages": [user("hi")]}
    assert b4([plain, anthropic]).format == "anthropic"
    assert b4([plain, {"messages": [{"role": "system", "content": "s"}, user("x")]}]).format == (
        "openai_chat"
    )


def test_format_override() -> None:
    # read as Anthropic, a system-role message is message 0, not the system prompt
    body = {"messages": [{"role": "system", "content": SYSTEM}, user("hi")]}
    assert b4([body], format="anthropic").format == "anthropic"
    changed = {"messages": [{"role": "system", "content": "other"}, user("hi")]}
    as_anthropic = b4([body, changed], format="anthropic").prefix_breaks
    as_chat = b4([body, changed], format="openai").prefix_breaks
    assert [(b.message, b.reason) for b in as_anthropic] == [(0, "message_changed")]
    assert [(b.message, b.reason) for b in as_chat] == [(-1, "system_changed")]
    log_like = {"messages": [user("hi")]}
    assert b4([log_like], format="log").format == "log"
    assert b4([{"input": "hi"}], format="openai").format == "openai_responses"


# --- files ------------------------------------------------------------------------------------


def test_blank_lines_a_bom_and_line_separators_in_strings(tmp_path: Path) -> None:
    body = {"messages": [user("a\u2028b")]}  # U+2028 unescaped: not a line break in JSONL
    path = tmp_path / "r.jsonl"
    text = "\n" + json.dumps(body, ensure_ascii=False) + "\n\n   \n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    report = audit_file(path, encoding="bytes/4")
    assert report.requests == 1
    assert report.rows[0].line == 2
    assert report.prompt_tokens == tokens_b4(user("a\u2028b"))


@pytest.mark.parametrize(
    ("lines", "line", "fragment"),
    [
        (['{"messages": []}', '{"messages": [}'], 2, "not valid JSON"),
        (['{"messages": []}', "[1, 2]"], 2, "not a JSON object but an array"),
        (['{"messages": []}', '"text"'], 2, "not a JSON object but a string"),
        (['{"model": "gpt-4o"}'], 1, "not a model request"),
        (['{"messages": {"role": "user"}}'], 1, "messages must be a list, not an object"),
        (['{"messages": ["hi"]}'], 1, "messages[0] must be a JSON object"),
        (['{"messages": [], "tools": {}}'], 1, "tools must be a list"),
        (['{"input": [], "instructions": 3}'], 1, "instructions must be a string"),
        (['{"input": [3]}'], 1, "input[0] must be a JSON object"),
        (['{"system": 3, "messages": []}'], 1, "system must be a string or a list of blocks"),
        (['{"system": [3], "messages": []}'], 1, "system[0] must be a JSON object, not a number"),
        (['{"session_id": 3, "messages": []}'], 1, "session_id must be a string"),
        (['{"session_id": "s", "system": [], "messages": []}'], 1, "system must be a string"),
        (['{"messages": []}', '{"input": "hi"}'], 2, "a request of another format"),
        (
            ['{"system": "s", "messages": []}', '{"messages": [{"role": "tool"}]}'],
            2,
            "format (OpenAI Chat Completions) than the lines before it (Anthropic Messages)",
        ),
        (
            # a "system" entry may stand in Anthropic's messages now; "developer" may not
            ['{"system": "s", "messages": [{"role": "developer", "content": "x"}]}'],
            1,
            "mixes OpenAI Chat fields",
        ),
    ],
)
def test_bad_lines_name_the_line(
    tmp_path: Path, lines: list[str], line: int, fragment: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(AuditError) as caught:
        audit_file(path, encoding="bytes/4")
    err = caught.value
    assert err.code == "RMD-111"
    assert err.line == line
    assert f"{path} line {line}: " in err.message
    assert fragment in err.message
    assert isinstance(err, AgentRemindersError)
    assert isinstance(err, ValueError)


def test_a_line_of_another_format_under_format_override(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"input": "hi"}])
    with pytest.raises(AuditError, match=r"line 1: not a request of --format anthropic"):
        audit_file(path, format="anthropic", encoding="bytes/4")


def test_not_utf8_and_empty_input(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"messages": []}\n{"messages": [{"role": "user", "content": "\xe9"}]}\n')
    with pytest.raises(AuditError, match=r"line 2: not UTF-8 \(byte 0xe9\)") as caught:
        audit_file(path, encoding="bytes/4")
    assert caught.value.line == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(AuditError, match="holds no requests"):
        audit_file(empty, encoding="bytes/4")
    with pytest.raises(AuditError, match="the input holds no requests"):
        audit_requests([], encoding="bytes/4")


def test_audit_requests_names_the_position() -> None:
    with pytest.raises(AuditError, match=r"^RMD-111: requests\[1\]: not a JSON object") as caught:
        b4([{"messages": []}, ["not", "a", "body"]])
    assert caught.value.line is None


def test_unknown_format_is_refused() -> None:
    with pytest.raises(AuditError, match="--format must be one of auto, openai, anthropic, log"):
        b4([{"messages": []}], format="gemini")


def test_canonical_json_sorts_keys_and_drops_spaces() -> None:
    message = {"role": "user", "content": "é", "name": "x"}
    assert b4([{"messages": [message]}]).prompt_tokens == tokens_b4(message)
    assert canon(message) == '{"content":"é","name":"x","role":"user"}'


def test_tool_use_blocks_make_an_anthropic_file() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "ls", "input": {}}
    body = {"messages": [user("ls"), {"role": "assistant", "content": [call]}]}
    assert b4([body]).format == "anthropic"
    assert b4([{"messages": [user("x"), assistant("y")]}]).format == "openai_chat"


def test_bodies_built_in_python_may_hold_tuples_and_read_only_views() -> None:
    transcript = Transcript().append(user("hi")).append(assistant("yo"))  # type: ignore[arg-type]
    line = {"session_id": "s", "system": SYSTEM, "messages": transcript.messages}
    report = b4([line, {"session_id": "s", "system": SYSTEM, "messages": (user("hi"),)}])
    assert [(b.request, b.reason) for b in report.prefix_breaks] == [(1, "messages_removed")]
    with pytest.raises(AuditError, match=r"messages\[0\] must be a JSON object, not set"):
        b4([{"messages": [{"a", "b"}]}])
