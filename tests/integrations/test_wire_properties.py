"""Hypothesis properties of the wire formats (docs/wire-formats.md) over random tool-using sessions.

Every request comes from a real ``Session``: reminders injected with TTLs, user messages,
assistant turns with tool calls and their results, ``prepare_request`` and ``post_turn`` each
turn. Each request is sent once all tool calls of the last assistant turn have their results,
as a model request must be.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_reminders import ModelRequest, Session
from agent_reminders.integrations import (
    from_anthropic,
    from_openai_chat,
    to_anthropic,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
)

EXAMPLES = settings(max_examples=200, deadline=None)
TOOLS = [
    {"name": "ls", "description": "List files.", "parameters": {"type": "object"}},
    {"name": "run", "description": "Run a command.", "parameters": {"type": "object"}},
]

TEXT = st.text(alphabet=st.sampled_from('ab <>&"\\\né✓'), max_size=8)
BLOCKS = st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), min_size=2, max_size=3)
CONTENT = st.one_of(TEXT, BLOCKS)
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | TEXT
JSON_VALUES = SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(TEXT, SCALARS, max_size=2)
ARGUMENTS = st.dictionaries(st.sampled_from(["path", "cmd", "é k", ""]), JSON_VALUES, max_size=3)
INJECT = st.fixed_dictionaries(
    {
        "body": TEXT.filter(str.strip),
        "ttl_turns": st.one_of(st.none(), st.integers(1, 3)),
        "authority": st.sampled_from(["contract", "corrective", "advisory"]),
    }
)
CALL = st.tuples(st.sampled_from(["ls", "run"]), ARGUMENTS, TEXT)
TURN = st.fixed_dictionaries(
    {
        "injects": st.lists(INJECT, max_size=2),
        "user": st.one_of(st.none(), CONTENT),
        "text": st.one_of(st.just(""), CONTENT),
        "calls": st.lists(CALL, max_size=3),
        # Now and then a burst of ten more calls, so the 20-block look-back breakpoint comes up.
        "burst": st.integers(0, 7).map(lambda n: n == 0),
    }
)
RUNS = st.lists(TURN, min_size=1, max_size=6)


def run_session(turns: list[dict[str, Any]], system: str) -> list[ModelRequest]:
    """Play ``turns`` through a Session with deterministic ids; return every request."""
    counter = itertools.count()
    s = Session(system=system, session_id="s", id_factory=lambda: f"id{next(counter)}")
    requests = []
    for turn in turns:
        for options in turn["injects"]:
            s.inject(options)
        if turn["user"] is not None:
            s.append({"role": "user", "content": turn["user"]})
        request = s.prepare_request(tools=TOOLS)
        requests.append(request)
        made = turn["calls"] + [("ls", {"path": "."}, "x")] * (10 if turn["burst"] else 0)
        calls = [
            {"id": f"call{request.turn}_{i}", "name": name, "arguments": args}
            for i, (name, args, _) in enumerate(made)
        ]
        reply: dict[str, Any] = {"role": "assistant", "content": turn["text"]}
        if calls:
            reply["tool_calls"] = calls
        s.append(reply)  # type: ignore[arg-type]
        for call, (_, _, output) in zip(calls, made, strict=True):
            s.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["name"],
                    "content": output,
                }
            )
        s.post_turn(request.turn)
    return requests


def strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def assert_append_only(bodies: list[dict[str, Any]], key: str, fixed: tuple[str, ...]) -> None:
    """Each body's ``key`` list is a byte prefix of the next one's; ``fixed`` parts never
    change."""
    for before, after in itertools.pairwise(bodies):
        old, new = before[key], after[key]
        assert len(new) >= len(old)
        assert [dumps(m) for m in new[: len(old)]] == [dumps(m) for m in old]
        # The serialized list, without its closing bracket, is a prefix of the next one.
        assert dumps(new).startswith(dumps(old)[:-1])
        for part in fixed:
            assert dumps(before.get(part)) == dumps(after.get(part))


FORMATS: dict[str, tuple[Callable[[ModelRequest], dict[str, Any]], str, tuple[str, ...]]] = {
    "openai_chat": (to_openai_chat, "messages", ("tools",)),
    "openai_responses": (to_openai_responses, "input", ("instructions", "tools")),
    "anthropic_nocache": (lambda r: to_anthropic(r, cache=False), "messages", ("system", "tools")),
    "gemini": (to_gemini, "contents", ("systemInstruction", "tools")),
}


SYSTEMS = st.sampled_from(["", "You are terse."])


@EXAMPLES
@given(RUNS, SYSTEMS)
def test_every_format_is_append_only_and_deterministic(turns: Any, system: str) -> None:
    """OpenAI chat, Responses, Anthropic without markers, Gemini: successive converted lists
    are byte prefixes of each other, and a replay of the same session gives the same bytes."""
    requests = run_session(turns, system)
    replay = run_session(turns, system)
    for convert, key, fixed in FORMATS.values():
        bodies = [convert(r) for r in requests]
        assert_append_only(bodies, key, fixed)
        assert [dumps(b) for b in bodies] == [dumps(convert(r)) for r in replay]
        assert all("directive_ids" not in dumps(b) for b in bodies)


def expected_markers(body: dict[str, Any]) -> list[tuple[int, int]]:
    """The breakpoint rules (docs/wire-formats.md, "Anthropic cache breakpoints"), computed
    independently over (message, block) pairs."""
    found = [(-1, len(body["system"]) - 1)] if body["system"] else []
    flat = [(i, j) for i, m in enumerate(body["messages"]) for j in range(len(m["content"]))]
    if not flat:
        return found
    last = flat[-1]
    roles = [m["role"] for m in body["messages"]]
    assistants = [i for i, role in enumerate(roles) if role == "assistant"]
    if assistants and assistants[-1] > 0 and body["messages"][assistants[-1] - 1]["content"]:
        before = assistants[-1] - 1
        end = (before, len(body["messages"][before]["content"]) - 1)
        if flat.index(last) - flat.index(end) > 20:
            found.append(end)
            event("look-back breakpoint")
    return [*found, last]


def marked(body: dict[str, Any]) -> list[tuple[int, int]]:
    found = [(-1, j) for j, b in enumerate(body["system"]) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        found += [(i, j) for j, b in enumerate(message["content"]) if "cache_control" in b]
    return found


@EXAMPLES
@given(RUNS, SYSTEMS)
def test_anthropic_with_cache_is_append_only_without_markers_and_places_them(
    turns: Any, system: str
) -> None:
    requests = run_session(turns, system)
    bodies = [to_anthropic(r) for r in requests]
    for request, body in zip(requests, bodies, strict=True):
        assert strip_markers(body) == to_anthropic(request, cache=False)
        assert marked(body) == expected_markers(body)
        assert len(marked(body)) <= 3
        assert all(
            b["cache_control"] == {"type": "ephemeral"} and list(b)[-1] == "cache_control"
            for m in [{"content": body["system"]}, *body["messages"]]
            for b in m["content"]
            if "cache_control" in b
        )
    assert_append_only([strip_markers(b) for b in bodies], "messages", ("system", "tools"))
    again = [to_anthropic(r) for r in run_session(turns, system)]
    assert [dumps(b) for b in bodies] == [dumps(b) for b in again]


@EXAMPLES
@given(RUNS, SYSTEMS, st.booleans())
def test_round_trips_give_back_system_and_messages(turns: Any, system: str, cache: bool) -> None:
    """from_openai_chat(to_openai_chat(r)) and from_anthropic(to_anthropic(r)) give back the
    request's system and messages, and Session.from_messages takes them."""
    for request in run_session(turns, system):
        expected = (request.system, list(request.messages))
        for back in (
            from_openai_chat(to_openai_chat(request)),
            from_anthropic(to_anthropic(request, cache=cache)),
        ):
            assert back == expected
            again = Session.from_messages(back[1], system=back[0])
            assert list(again.transcript.request_messages()) == back[1]
