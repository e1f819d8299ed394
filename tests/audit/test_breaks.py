"""Prefix breaks (docs/audit.md) — every reason, message ``-1`` for tools and system, moving
Anthropic markers, and the request log's per-session comparison."""

from __future__ import annotations

from typing import Any

from audit_helpers import assistant, text_block, user

from agent_reminders import check_append_only
from agent_reminders.audit import audit_requests

SYSTEM = "You are a coding agent."
A, B, C = user("read the file"), assistant("it says hi"), user("now fix it")


def breaks(requests: list[Any], **kwargs: Any) -> list[tuple[int, int, str]]:
    report = audit_requests(requests, encoding="bytes/4", **kwargs)
    return [(b.request, b.message, b.reason) for b in report.prefix_breaks]


def chat(*messages: dict[str, Any], system: str = SYSTEM, tools: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "system", "content": system}, *messages]}
    if tools is not None:
        body["tools"] = tools
    return body


def test_append_only_has_no_break() -> None:
    assert breaks([chat(A), chat(A, B), chat(A, B, C), chat(A, B, C)]) == []


def test_message_changed_names_the_first_differing_message() -> None:
    assert breaks([chat(A, B, C), chat(A, assistant("edited"), C)]) == [(1, 1, "message_changed")]
    # an inserted message changes the one at its place
    assert breaks([chat(A, B), chat(A, C, B)]) == [(1, 1, "message_changed")]


def test_messages_removed_is_a_strict_prefix() -> None:
    assert breaks([chat(A, B, C), chat(A)]) == [(1, 1, "messages_removed")]
    assert breaks([chat(A, B), chat()]) == [(1, 0, "messages_removed")]


def test_system_changed_is_message_minus_one() -> None:
    assert breaks([chat(A), chat(A, B, system="Rewritten.")]) == [(1, -1, "system_changed")]
    responses = [{"instructions": "a", "input": "hi"}, {"instructions": "b", "input": "hi"}]
    assert breaks(responses) == [(1, -1, "system_changed")]


def test_tools_changed_comes_first() -> None:
    one = [{"type": "function", "function": {"name": "ls"}}]
    two = [*one, {"type": "function", "function": {"name": "cat"}}]
    assert breaks([chat(A, tools=one), chat(A, B, tools=two)]) == [(1, -1, "tools_changed")]
    # tools added or dropped count too; with the system changed as well, tools come first
    assert breaks([chat(A), chat(A, tools=one)]) == [(1, -1, "tools_changed")]
    assert breaks([chat(A, tools=one), chat(A, system="x")]) == [(1, -1, "tools_changed")]


def test_every_break_is_listed_in_request_order() -> None:
    requests = [chat(A), chat(A, B), chat(C), chat(C, B), chat(C, B, system="s2"), chat(C)]
    assert breaks(requests) == [
        (2, 0, "message_changed"),
        (4, -1, "system_changed"),
        (5, -1, "system_changed"),
    ]


def test_the_reasons_are_check_append_only_s() -> None:
    """The audit's reasons and positions agree with the library's own checker."""
    seqs = [[A, B, C], [A, B], [A, C], [A, C, B]]
    mine = breaks([chat(*s) for s in seqs])
    theirs = [(b.request_index, b.message_index, b.reason) for b in check_append_only(seqs)]
    assert mine == theirs


def test_moving_anthropic_markers_is_no_break() -> None:
    def turn(n: int) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": [text_block(f"q{i}", mark=i == n - 1)]} for i in range(n)
        ]

    requests = [{"system": [text_block(SYSTEM, mark=True)], "messages": turn(n)} for n in (1, 2, 3)]
    assert breaks(requests) == []
    # the text under a marker changing is a break
    changed = {"system": [text_block(SYSTEM)], "messages": [{"role": "user", "content": "q9"}]}
    assert breaks([requests[0], changed]) == [(1, 0, "message_changed")]


def test_request_log_compares_within_each_session() -> None:
    def line(session: str, *messages: dict[str, Any]) -> dict[str, Any]:
        return {"session_id": session, "turn": 0, "system": SYSTEM, "messages": list(messages)}

    interleaved = [
        line("s1", A),
        line("s2", C),
        line("s1", A, B),
        line("s2", C, B),
        line("s1", A, B, C),
        line("s2", C, assistant("edited")),
    ]
    report = audit_requests(interleaved, encoding="bytes/4")
    assert [(b.request, b.message, b.reason, b.session_id) for b in report.prefix_breaks] == [
        (5, 1, "message_changed", "s2")
    ]
    # the same bodies without session ids would break at every switch
    assert len(breaks([{"messages": x["messages"]} for x in interleaved])) == 5


def test_a_new_session_in_a_log_starts_fresh() -> None:
    first = {"session_id": "a", "system": SYSTEM, "messages": [A, B]}
    other = {"session_id": "b", "system": "other", "messages": [C]}
    assert breaks([first, other]) == []


def test_a_downgraded_system_entry_is_named_as_such() -> None:
    """A system entry the next request sends as a user message (Anthropic's placement rules
    no longer allow it there) is the sanctioned ``channel_downgraded`` break, not a change."""
    from agent_reminders import ModelInfo, Session
    from agent_reminders.integrations import to_anthropic

    session = Session(system=SYSTEM, model=ModelInfo(provider="anthropic", name="claude-opus-4-8"))
    session.append({"role": "user", "content": "hi"})
    session.inject({"body": "CI is red"})
    first = to_anthropic(session.prepare_request())  # the call fails: no answer
    session.append({"role": "user", "content": "still there?"})
    second = to_anthropic(session.prepare_request())
    assert first["messages"][1]["role"] == "system"
    assert second["messages"][1]["role"] == "user"
    assert breaks([first, second]) == [(1, 1, "channel_downgraded")]
    edited = to_anthropic(session.prepare_request())
    edited["messages"][1]["content"][0]["text"] = "changed"
    assert breaks([second, edited]) == [(1, 1, "message_changed")]
