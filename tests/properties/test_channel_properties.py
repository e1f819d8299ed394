"""Random sessions on both channels, sent through every wire format: each request is valid
for its API, each extends the one before except at an evented downgrade or a compaction, the
same session gives the same bytes, and the wire formats read back what they wrote.

A session here is a random list of steps — user turns, tool calls, model calls that fail or
are cancelled (no answer), host user messages and reminders in every delivery mode drained at
every seam, interrupts, compaction, a sub-agent, model switches — applied to a ``Session``
directly, so every step can fall between any two others.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import (
    ModelInfo,
    ModelRequest,
    Session,
    check_append_only,
    placement,
)
from agent_reminders.integrations import (
    anthropic_betas,
    from_anthropic,
    from_openai_chat,
    to_anthropic,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
)
from agent_reminders.testing.recording_server import anthropic_refusal

# the models a session of each wire may switch between: one that takes the system channel,
# one that does not
MODELS: dict[str, tuple[ModelInfo, ...]] = {
    "anthropic": (
        ModelInfo(provider="anthropic", name="claude-opus-4-8"),
        ModelInfo(provider="anthropic", name="claude-sonnet-4-5"),
    ),
    "openai_chat": (
        ModelInfo(provider="openai", name="gpt-5"),
        ModelInfo(
            provider="openai", name="unregistered-local-llm", base_url="http://127.0.0.1:8080/v1"
        ),
    ),
    "openai_responses": (
        ModelInfo(provider="openai", name="gpt-5"),
        ModelInfo(
            provider="openai", name="unregistered-local-llm", base_url="http://127.0.0.1:8080/v1"
        ),
    ),
    "gemini": (ModelInfo(provider="gemini", name="gemini-2.5-pro"),),
}
WIRES: dict[str, Callable[[ModelRequest], dict[str, Any]]] = {
    "anthropic": lambda r: to_anthropic(r, cache=False, clear_at=True),
    "openai_chat": to_openai_chat,
    "openai_responses": to_openai_responses,
    "gemini": to_gemini,
}
MODES = ("interrupt", "steer", "queue")
SEAMS = ("iteration_start", "pre_tool_dispatch", "post_tool_dispatch", "iteration_end")

step = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(["fix it", "and the docs", "<directive>x"])),
    st.tuples(st.just("remind"), st.sampled_from([None, 1, 2, 3])),
    st.tuples(st.just("person"), st.just(None)),
    st.tuples(st.just("host_user"), st.sampled_from(MODES)),
    st.tuples(st.just("host_remind"), st.sampled_from(MODES)),
    st.tuples(st.just("seam"), st.sampled_from(SEAMS)),
    st.tuples(st.just("call"), st.sampled_from(["answer", "tools", "fail", "cancel"])),
    st.tuples(st.just("compact"), st.sampled_from([0, 2, 4])),
    st.tuples(st.just("switch"), st.integers(0, 1)),
    st.tuples(st.just("child"), st.just(None)),
)


@dataclass
class Run:
    """What one random session sent: requests in order, the compaction points, events."""

    requests: list[ModelRequest] = field(default_factory=list)
    compacted_before: set[int] = field(default_factory=set)
    downgrades: list[int] = field(default_factory=list)  # request index of each event
    children: list[list[ModelRequest]] = field(default_factory=list)


def _ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"id-{next(counter):04d}"


def play(wire: str, channel: str, steps: list[tuple[str, Any]]) -> Run:
    """Apply ``steps`` to a fresh session; every call is a request."""
    models = MODELS[wire]
    session = Session(
        session_id="s",
        system="You are a coding agent.",
        channel=channel,  # type: ignore[arg-type]
        model=models[0],
        nonce="nonce-0123456789",
        id_factory=_ids(),
    )
    run = Run()
    calls = itertools.count()

    def on_event(record: Any) -> None:
        if record.kind == "transcript.channel_downgraded":
            run.downgrades.append(len(run.requests))

    session.event_log.subscribe(on_event)
    for kind, arg in steps:
        if kind == "user":
            session.queue.inject(arg, mode="steer")  # the person's words wait for a seam
            session.run_seam("iteration_start")
        elif kind == "remind":
            session.inject({"body": f"reminder {next(calls)}", "ttl_turns": arg})
        elif kind == "person":
            session.inject({"body": "the person asked for tests", "role_hint": "user_block"})
        elif kind == "host_user":
            session.queue.inject("a note from the editor", mode=arg)
        elif kind == "host_remind":
            session.queue.remind({"body": f"host {next(calls)}", "ttl_turns": 2}, mode=arg)
        elif kind == "seam":
            session.run_seam(arg, pending_tools=arg == "pre_tool_dispatch")
        elif kind == "compact":
            session.compact(keep_last=arg)
            run.compacted_before.add(len(run.requests))
        elif kind == "switch":
            session.model = models[arg % len(models)]
        elif kind == "child":
            child = Session.child(session, session_id=f"s-child-{next(calls)}")
            child.append({"role": "user", "content": "review the change"})
            run.children.append([child.prepare_request()])
        else:  # a model call
            messages = session.transcript.messages
            if not messages:
                session.append({"role": "user", "content": "start"})
            elif messages[-1]["role"] == "assistant":  # a loop calls again after an answer
                session.append({"role": "user", "content": "go on"})  # only with a new turn
            run.requests.append(session.prepare_request())
            if arg == "answer":
                session.append({"role": "assistant", "content": "done"})
                session.post_turn(session.turn - 1)
            elif arg == "tools":
                call_id = f"call-{next(calls)}"
                session.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"id": call_id, "name": "ls", "arguments": {}}],
                    }
                )
                session.run_seam("pre_tool_dispatch", pending_tools=True)
                session.append(
                    {"role": "tool", "tool_call_id": call_id, "name": "ls", "content": "a.py"}
                )
                session.run_seam("post_tool_dispatch")
                session.post_turn(session.turn - 1)
            # "fail" and "cancel": no answer is appended (the call raised, or was stopped)
    return run


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    """What Anthropic's API would refuse in ``body``, read off the body alone (written apart
    from the library's own rules): a system entry first, not right after a user entry, not
    last and not followed by an assistant entry, or with content other than text and tool
    changes; ``clear_at`` on anything but a system entry; a user entry right after a user
    entry is fine (the API merges them), two assistant entries in a row are not."""
    problems = []
    messages = body["messages"]
    for i, m in enumerate(messages):
        role = m["role"]
        if role not in ("user", "assistant", "system"):
            problems.append(f"messages.{i}: role {role!r}")
        if "clear_at" in m and role != "system":
            problems.append(f"messages.{i}: clear_at on a {role} entry")
        if role == "assistant" and i and messages[i - 1]["role"] == "assistant":
            problems.append(f"messages.{i}: two assistant entries in a row")
        if role != "system":
            continue
        before = messages[i - 1]["role"] if i else None
        after = messages[i + 1]["role"] if i + 1 < len(messages) else None
        if before != "user":
            problems.append(f"messages.{i}: a system entry must follow a user entry")
        if after not in (None, "assistant"):
            problems.append(f"messages.{i}: a system entry must be last or before an answer")
        kinds = {b["type"] for b in m["content"]}
        if not kinds <= {"text", "tool_addition", "tool_removal"}:
            problems.append(f"messages.{i}: a system entry holds {sorted(kinds)}")
    return problems


sessions = st.lists(step, min_size=1, max_size=25)
wires = st.sampled_from(sorted(WIRES))
channels = st.sampled_from(["auto", "user", "system"])


@given(wire=wires, channel=channels, steps=sessions)
@settings(max_examples=250, deadline=None)
def test_every_request_is_valid_for_its_api(wire: str, channel: str, steps: list[Any]) -> None:
    run = play(wire, channel, steps)
    for request in run.requests + [r for c in run.children for r in c]:
        body = WIRES[wire](request)
        json.dumps(body)  # plain JSON, nothing else
        if wire == "anthropic":
            assert anthropic_problems(body) == [], body
            # and the recording server's own rules, as the API would answer a capable model
            headers = {"anthropic-beta": ",".join(anthropic_betas(body))}
            assert anthropic_refusal({**body, "model": "claude-opus-4-8"}, headers) is None
        elif wire == "openai_chat":
            roles = [m["role"] for m in body["messages"]]
            assert set(roles) <= {"system", "developer", "user", "assistant", "tool"}
            assert "system" not in roles[1:]  # a late instruction is a developer message
        elif wire == "gemini":
            assert all(c["role"] in ("user", "model") for c in body["contents"])


@given(wire=wires, channel=channels, steps=sessions)
@settings(max_examples=250, deadline=None)
def test_append_only_but_for_evented_downgrades_and_compactions(
    wire: str, channel: str, steps: list[Any]
) -> None:
    run = play(wire, channel, steps)
    bodies = [WIRES[wire](r) for r in run.requests]
    if wire == "openai_responses":
        bodies = [{"messages": b["input"], "system": b["instructions"]} for b in bodies]
    elif wire == "gemini":
        bodies = [{"messages": b["contents"], "system": b.get("systemInstruction")} for b in bodies]
    for found in check_append_only(bodies):
        if found.request_index in run.compacted_before:
            continue  # the request right after a compaction: the sanctioned break
        assert found.reason == "channel_downgraded", (found, steps)
        assert wire == "anthropic"
        assert found.request_index in run.downgrades, (found, run.downgrades)


@given(wire=wires, channel=channels, steps=sessions)
@settings(max_examples=200, deadline=None)
def test_the_same_session_gives_the_same_bytes(wire: str, channel: str, steps: list[Any]) -> None:
    first = [json.dumps(WIRES[wire](r)) for r in play(wire, channel, steps).requests]
    again = [json.dumps(WIRES[wire](r)) for r in play(wire, channel, steps).requests]
    assert first == again


@given(channel=channels, steps=sessions)
@settings(max_examples=200, deadline=None)
def test_round_trips_are_exact(channel: str, steps: list[Any]) -> None:
    anthropic = play("anthropic", channel, steps)
    for request in anthropic.requests:
        system, messages = from_anthropic(to_anthropic(request, cache=False, clear_at=True))
        assert system == request.system
        downgraded = placement(request.messages)
        expected = [
            {**dict(m), "role": "user"} if i in downgraded else dict(m)
            for i, m in enumerate(request.messages)
        ]
        assert json.loads(json.dumps(messages)) == json.loads(json.dumps(expected))
    openai = play("openai_chat", channel, steps)
    for request in openai.requests:
        system, messages = from_openai_chat(to_openai_chat(request))
        assert system == request.system
        assert json.loads(json.dumps(messages)) == json.loads(json.dumps(list(request.messages)))
