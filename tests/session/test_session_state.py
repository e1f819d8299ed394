"""``SessionState``: everything a session is, saved and restored.

Contract: issue 8 deliverable 3 — one frozen record with a versioned, deterministic, strict
JSON form (``RMD-106`` naming the field); ``Session.state()`` / ``Session.from_state`` /
``Session.from_messages``; what a store persists (docs/storage.md, "The protocol"); delivered
and revoked ids are remembered for the life of the session (docs/protocol.md,
``session/revoke_reminder``). The property test checks that a session
saved and restored at any step sends byte-identical requests and ends in an equal state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_reminders import (
    EventLog,
    ModelRequest,
    ProviderContext,
    QueueError,
    ReminderError,
    Session,
    SessionState,
    StateError,
)
from agent_reminders.generators import AnnouncedDelta, GeneratorRegistry, create_announced_delta
from agent_reminders.providers import ProviderRegistry

FORMAT = "agent-reminders.session-state.v1"
OPTIONS = {"providers": ["-project_facts"]}  # no fact store on disk in these tests
WORKSPACE = {"primary": "/src/app", "roots": [{"path": "/data", "mount_mode": "ro"}]}
TOOLS = [{"name": "bash", "description": "Run a command.", "parameters": {"type": "object"}}]
LONG = [
    "Run the full test suite before you report that the change is done; " * 2,
    "The main branch is red since the last merge; fix the build before new work. " * 2,
    "Keep the public API unchanged: callers outside this repository depend on it. " * 2,
]
SHORT = ["Be brief.", "Use British spelling.", "Mind the <directive> tags & escaping."]


# -- a deterministic world: ids, tools and generators live outside the session --------------


class World:
    """What a host keeps outside the session: an id counter and the current tool pool."""

    def __init__(self, n: int = 0, pool: tuple[str, ...] = ("read",)) -> None:
        self.n = n
        self.pool = list(pool)

    def new_id(self) -> str:
        self.n += 1
        return f"id-{self.n:05d}"

    def copy(self) -> World:
        return World(self.n, tuple(self.pool))


class Every:
    """A generator that speaks only when its interval forces it."""

    id = "clock"
    interval = 3
    authority = "corrective"

    def compute(self, force: bool) -> str | None:
        return "Time to re-read the task." if force else None


def generators_for(world: World) -> GeneratorRegistry:
    registry = GeneratorRegistry()
    registry.register(
        create_announced_delta(
            id="tools",
            get_current=lambda: world.pool,
            get_baseline=lambda: ["read"],
            render_added=lambda names: "New tools: " + ", ".join(names),
            render_removed=lambda names: "Tools gone: " + ", ".join(names),
        )
    )
    registry.register(Every())
    return registry


def plan(ctx: ProviderContext) -> dict[str, Any] | None:
    index = ctx.payload.get("i")
    if not isinstance(index, int):
        return None
    return {"body": LONG[index % len(LONG)], "dedupe_key": "plan", "ttl_turns": 2}


def user_providers() -> ProviderRegistry:
    registry = ProviderRegistry()
    registry.register("plan", subscribes_to="post_step", evaluate=plan)
    return registry


def new_session(world: World) -> Session:
    s = Session(
        "s",
        system="You are a careful coding agent.",
        event_log=EventLog(),
        reminders=OPTIONS,
        generators=generators_for(world),
        workspace=WORKSPACE,
        id_factory=world.new_id,
    )
    s.providers = user_providers()
    return s


def restore(s: Session, world: World) -> Session:
    text = s.state().to_json()
    return Session.from_state(
        SessionState.from_json(text),
        event_log=EventLog(),
        reminders=OPTIONS,
        generators=generators_for(world),
        workspace=WORKSPACE,
        providers=user_providers(),
        id_factory=world.new_id,
    )


def dump(request: ModelRequest) -> str:
    return json.dumps(
        {
            "system": request.system,
            "messages": list(request.messages),
            "tools": request.tools,
            "turn": request.turn,
            "session_id": request.session_id,
        },
        sort_keys=True,
    )


# -- steps -------------------------------------------------------------------------------------

MODES = st.sampled_from([None, "interrupt", "steer", "queue", "finish_step", "interrupt_immediate"])
SEAMS = st.sampled_from(
    [
        "iteration_start",
        "pre_tool_dispatch",
        "post_tool_dispatch",
        "iteration_end",
        "daemon_idle_pre",
        "loop_exit",
    ]
)
KEYS = st.sampled_from([None, "a", "b", "plan"])
TTLS = st.one_of(st.none(), st.integers(min_value=1, max_value=3))
AUTHORITIES = st.sampled_from(["contract", "corrective", "advisory"])
BODIES = st.sampled_from(LONG + SHORT)

STEP = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(SHORT)),
    st.tuples(st.just("assistant"), st.integers(min_value=0, max_value=2)),
    st.tuples(st.just("assistant"), st.integers(min_value=1, max_value=3)),
    st.tuples(st.just("hold"), st.sampled_from(SHORT)),
    st.tuples(st.just("hold"), st.sampled_from(SHORT)),
    st.tuples(st.just("audit"), BODIES),
    st.tuples(st.just("request")),
    st.tuples(st.just("tool"), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("inject"), BODIES, TTLS, KEYS, AUTHORITIES, st.booleans()),
    st.tuples(st.just("remind"), BODIES, TTLS, KEYS, AUTHORITIES, MODES),
    st.tuples(st.just("queue_user"), st.sampled_from(SHORT), MODES),
    st.tuples(st.just("revoke"), st.integers(min_value=0, max_value=3)),
    st.tuples(st.just("seam"), SEAMS),
    st.tuples(st.just("post_turn")),
    st.tuples(st.just("compact"), st.integers(min_value=0, max_value=4), st.booleans()),
    st.tuples(
        st.just("fire"),
        st.sampled_from(["budget", "idle", "resumed", "plan", "agent_turn"]),
        st.integers(min_value=0, max_value=5),
    ),
    # the same provider result again and again: short repeats, and repeats of short repeats
    st.tuples(st.just("fire"), st.just("plan"), st.integers(min_value=0, max_value=1)),
    st.tuples(st.just("plan_round")),
    st.tuples(st.just("plan_round")),
    st.tuples(st.just("pool"), st.sampled_from(["read", "grep", "edit", "bash"])),
    st.tuples(st.just("start")),
)

FAILING = "FAILED tests/test_parse.py::test_empty - assert parse('') == []\n=== 1 failed in 0.1s"


def open_calls(s: Session) -> list[str]:
    return sorted(s.state().open_tool_calls)


def apply(s: Session, world: World, step: tuple[Any, ...], out: list[str]) -> None:
    """Run one step; append what it produced (requests as JSON, results as text) to ``out``."""
    kind = step[0]
    if kind == "user":
        if not open_calls(s):
            s.append({"role": "user", "content": step[1]})
    elif kind in ("assistant", "request"):
        if open_calls(s):
            return
        out.append(dump(s.prepare_request(tools=TOOLS)))
        if kind == "request":
            return
        calls = [
            {"id": f"c{s.turn}-{i}", "name": "bash", "arguments": {"command": "pytest -q"}}
            for i in range(step[1])
        ]
        message: dict[str, Any] = {"role": "assistant", "content": f"step {s.turn}"}
        if calls:
            message["tool_calls"] = calls
        s.append(message)  # type: ignore[arg-type]
    elif kind == "tool":
        pending = open_calls(s)
        if not pending:
            return
        _, ok, truncated, long_output = step
        content = ("x" * 300 if long_output else "ok") if ok else FAILING
        s.append({"role": "tool", "tool_call_id": pending[0], "name": "bash", "content": content})
        result = {
            "content": content,
            "ok": ok,
            "truncated": truncated,
            "original_size": 5000 if truncated else None,
        }
        payload = {
            "tool_name": "bash",
            "arguments": {"command": "pytest -q"},
            "command": "pytest -q",
            "result": result,
        }
        out.append(repr(s.fire("post_tool_use", payload)))
    elif kind == "inject":
        _, body, ttl, key, authority, preserve = step
        options = {"body": body, "ttl_turns": ttl, "dedupe_key": key, "authority": authority}
        out.append(repr(s.inject({**options, "preserve_on_compact": preserve})))
    elif kind == "remind":
        _, body, ttl, key, authority, mode = step
        payload = {"body": body, "ttl_turns": ttl, "dedupe_key": key, "authority": authority}
        out.append(s.queue.remind(payload, mode=mode))
    elif kind == "queue_user":
        out.append(s.queue.inject(step[1], mode=step[2]))
    elif kind == "plan_round":  # the provider speaks, then a request shows it
        out.append(repr(s.fire("post_step", {"i": 0})))
        apply(s, world, ("request",), out)
    elif kind == "audit":  # an audit-only note lands in the transcript's audit entries
        out.append(s.queue.remind({"body": step[1]}, mode="queue"))
        out.append(repr(s.run_seam("loop_exit")))
    elif kind == "hold":  # a host interrupt while tool calls are open: held for their results
        out.append(s.queue.inject(step[1], mode="interrupt"))
        out.append(repr(s.run_seam("pre_tool_dispatch", pending_tools=bool(open_calls(s)))))
    elif kind == "revoke":
        rows = [r for r in s.queue.pending() if r["kind"] == "reminder"]
        target = (
            rows[step[1]]["id"] if step[1] < len(rows) else min(s.queue.delivered_ids, default="")
        )
        try:
            out.append(s.queue.revoke(target))
        except QueueError as exc:
            out.append(exc.reason)
    elif kind == "seam":
        done = s.run_seam(step[1], pending_tools=bool(open_calls(s)))
        out.append(repr(done))
    elif kind == "post_turn":
        if s.turn > 0:
            out.append(repr(s.post_turn(s.turn - 1)))
    elif kind == "compact":
        if not open_calls(s):
            summary = "We fixed the parser." if step[2] else None
            out.append(repr(s.compact(keep_last=step[1], summary=summary)))
    elif kind == "fire":
        _, which, n = step
        if which == "budget":
            usage = {"input_tokens": 600 + 100 * n, "output_tokens": 10}
            out.append(
                repr(s.fire("on_budget_threshold", {"usage": usage, "context_window": 1000}))
            )
        elif which == "idle":
            out.append(repr(s.fire("session_idle", {"wake_interval_ms": 60_000 * (n + 1)})))
        elif which == "resumed":
            payload = {"suspended_at_turn": n, "reason": "waiting", "initiator": "operator"}
            out.append(repr(s.fire("worker_resumed", payload)))
        elif which == "plan":
            out.append(repr(s.fire("post_step", {"i": n})))
        else:
            out.append(repr(s.fire("post_agent_turn", {"iteration": n})))
    elif kind == "pool":
        name = step[1]
        if name in world.pool:
            world.pool.remove(name)
        else:
            world.pool.append(name)
    elif kind == "start" and not s.started:
        s.started = True
        out.append(repr(s.fire("session_start", {"task": "Fix the parser."})))


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=60), data=st.data())
def test_a_restored_session_continues_exactly(steps: list[tuple[Any, ...]], data: Any) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(steps)), label="save at step")
    world = World()
    s = new_session(world)
    for step in steps[:at]:
        apply(s, world, step, [])

    saved = s.state()
    for part, present in (
        ("held messages", bool(saved.held_messages)),
        ("open tool calls", bool(saved.open_tool_calls)),
        ("queued items", bool(saved.queue.items)),
        ("delivered ids", bool(saved.queue.delivered_ids)),
        ("full bodies", bool(saved.providers.full_bodies)),
        ("pending reminders", bool(saved.transcript.reminders)),
        ("audit entries", bool(saved.transcript.audit)),
        (
            "a short repeat pending",
            any("unchanged since" in r.body for r in saved.transcript.reminders),
        ),
    ):
        event(f"saved with {part}: {present}")
    twin_world = world.copy()
    twin = restore(s, twin_world)
    assert twin.state() == s.state()
    assert twin.state().to_json() == s.state().to_json()

    ours: list[str] = []
    theirs: list[str] = []
    for step in steps[at:]:
        apply(s, world, step, ours)
        apply(twin, twin_world, step, theirs)
    assert theirs == ours  # every request byte for byte, and every result
    assert twin.state() == s.state()
    assert twin.state().to_json() == s.state().to_json()


# -- the record and its JSON form ------------------------------------------------------------


def busy_session() -> Session:
    world = World()
    s = new_session(world)
    s.started = True
    s.fire("session_start", {"task": "t"})
    s.append({"role": "user", "content": "Fix the parser."})
    s.inject({"body": LONG[0], "dedupe_key": "a", "ttl_turns": 2, "authority": "advisory"})
    s.prepare_request()
    call = {"id": "c1", "name": "bash", "arguments": {"command": "pytest -q", "b": 1, "a": 2}}
    s.append({"role": "assistant", "content": "", "tool_calls": [call]})  # type: ignore[list-item]
    s.queue.inject("Also update the changelog.", mode="interrupt")
    s.run_seam("pre_tool_dispatch", pending_tools=True)  # held until the tool result
    s.queue.remind({"body": "CI is red.", "id": "host-1"}, mode="steer")
    s.queue.remind({"body": "Revoked.", "id": "host-2", "_meta": {"z": 1, "a": [1, 2]}})
    s.queue.remind({"body": "Audit note.", "id": "host-3"}, mode="queue")
    s.queue.revoke("host-2")
    s.fire("post_step", {"i": 1})
    world.pool.append("grep")
    return s


def test_round_trip_is_exact_and_deterministic() -> None:
    s = busy_session()
    state = s.state()
    text = state.to_json()
    again = SessionState.from_json(text)
    assert again == state
    assert again.to_json() == text
    assert s.state().to_json() == text  # taking the state changes nothing
    doc = json.loads(text)
    assert doc["format"] == FORMAT
    assert list(doc) == sorted(doc)
    assert list(doc["queue"]) == sorted(doc["queue"])
    assert doc["held_messages"] == [{"role": "user", "content": "Also update the changelog."}]
    assert doc["open_tool_calls"] == ["c1"]
    assert doc["queue"]["revoked_ids"] == ["host-2"]
    assert [i["id"] for i in doc["queue"]["items"]] == ["host-1", "host-3"]
    assert doc["generators"]["announced"] == {"tools": ["read"]}
    assert set(doc["providers"]["full_bodies"]) == {"plan", "workspace_anchor"}


def test_message_key_order_is_kept_because_bytes_reach_the_model() -> None:
    s = busy_session()
    restored = restore(s, World(100))
    (call,) = [m for m in restored.transcript.messages if m.get("tool_calls")]
    assert list(call["tool_calls"][0]["arguments"]) == ["command", "b", "a"]


def test_restored_session_has_every_part() -> None:
    s = busy_session()
    r = restore(s, World(100))
    assert (r.id, r.agent_id, r.system, r.turn, r.started) == (s.id, s.agent_id, s.system, 1, True)
    assert r.transcript == s.transcript
    assert r.queue.pending() == s.queue.pending()
    assert r.queue.revoked_ids == {"host-2"}
    assert r.state().held_messages == s.state().held_messages
    # the held message follows the tool result, as it would have without the restore
    r.append({"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "ok"})
    assert [m["role"] for m in r.transcript.messages[-2:]] == ["tool", "user"]


def test_delivered_and_revoked_ids_are_remembered_after_restore() -> None:
    s = Session("s")
    s.queue.remind({"body": "one", "id": "r1"})
    s.queue.remind({"body": "two", "id": "r2"})
    s.queue.revoke("r2")
    s.run_seam("iteration_start")
    r = Session.from_state(SessionState.from_json(s.state().to_json()))
    assert r.queue.revoke("r2") == "already_revoked"
    with pytest.raises(QueueError) as info:
        r.queue.revoke("r1")
    assert info.value.reason == "already_delivered"
    with pytest.raises(ReminderError, match="already used"):
        r.queue.remind({"body": "again", "id": "r1"})


def test_announced_delta_state_hook() -> None:
    pool = ["read"]
    gen = create_announced_delta(
        id="tools",
        get_current=lambda: pool,
        render_added=lambda n: "+" + ",".join(n),
        render_removed=lambda n: "-" + ",".join(n),
    )
    assert isinstance(gen, AnnouncedDelta)
    assert gen.announced == ()
    gen.restore(["read", "grep", "read"])
    assert gen.announced == ("read", "grep")  # type: ignore[comparison-overlap]
    assert gen.compute(False) == "-grep"
    assert gen.announced == ("read",)  # type: ignore[comparison-overlap]


def test_generator_state_is_dropped_without_a_registry() -> None:
    s = new_session(World())
    s.prepare_request()
    assert s.state().generators is not None
    r = Session.from_state(SessionState.from_json(s.state().to_json()))
    assert r.state().generators is None


def test_configuration_is_given_again_on_restore() -> None:
    s = Session("s", system="sys", agent_id="agent", envelope_style="system_reminder")
    r = Session.from_state(s.state(), reminders=False, workspace=WORKSPACE)
    assert (r.system, r.agent_id, r.envelope_style) == ("sys", "agent", "system_reminder")
    assert r.reminder_options.enabled is False
    assert r.workspace == WORKSPACE
    with pytest.raises(TypeError):
        Session.from_state(s.state().to_json())  # type: ignore[arg-type]


# -- strict reading -------------------------------------------------------------------------


def _doc() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(busy_session().state().to_json())
    return loaded


def _reminder_event(doc: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in doc["transcript"]["events"] if e["kind"] == "system_reminder")


Mutation = Callable[[dict[str, Any]], object]

BAD: list[tuple[str, Mutation, str]] = [
    ("format", lambda d: d.update(format="agent-reminders.session-state.v2"), "format"),
    ("no format", lambda d: d.pop("format"), "format"),
    ("missing key", lambda d: d.pop("turn"), "turn"),
    ("unknown key", lambda d: d.update(colour="red"), "colour"),
    ("turn", lambda d: d.update(turn=-1), "turn"),
    ("turn type", lambda d: d.update(turn=True), "turn"),
    ("started", lambda d: d.update(started="yes"), "started"),
    ("session id", lambda d: d.update(session_id=" "), "session_id"),
    ("system", lambda d: d.update(system=None), "system"),
    ("style", lambda d: d.update(envelope_style="xml"), "envelope_style"),
    ("instructions", lambda d: d.update(envelope_instructions="sometimes"), "envelope_instr"),
    ("held role", lambda d: d["held_messages"][0].update(role="robot"), "held_messages[0]"),
    ("held without calls", lambda d: d.update(open_tool_calls=[]), "held_messages"),
    ("open calls", lambda d: d.update(open_tool_calls="c1"), "open_tool_calls"),
    ("transcript", lambda d: d.update(transcript=[]), "transcript"),
    (
        "reminder ttl",
        lambda d: _reminder_event(d)["reminder"].update(ttl_turns=0),
        "transcript.events[",
    ),
    (
        "reminder propagate",
        lambda d: _reminder_event(d)["reminder"].update(propagate="everyone"),
        "propagate",
    ),
    (
        "reminder key",
        lambda d: _reminder_event(d)["reminder"].update(colour="red"),
        "colour",
    ),
    (
        "reminder form",
        lambda d: _reminder_event(d)["reminder"].update(tags=[" padded "]),
        "not in the form",
    ),
    ("blank body", lambda d: _reminder_event(d)["reminder"].update(body=" "), "body"),
    (
        "message role",
        lambda d: d["transcript"]["events"][0]["message"].update(role="robot"),
        "role",
    ),
    ("queue", lambda d: d.update(queue=None), "queue"),
    ("item mode", lambda d: d["queue"]["items"][0].update(mode="later"), "queue.items[0]"),
    ("item kind", lambda d: d["queue"]["items"][0].update(kind="note"), "queue.items[0]"),
    (
        "item payload",
        lambda d: d["queue"]["items"][0]["payload"].update(ttl_turns=0),
        "queue.items[0]: ttl_turns",
    ),
    (
        "item payload form",
        lambda d: d["queue"]["items"][0]["payload"].pop("role_hint"),
        "queue.items[0]",
    ),
    (
        "item id",
        lambda d: d["queue"]["items"][0].update(id="other"),
        "queue.items[0]",
    ),
    ("id twice", lambda d: d["queue"]["delivered_ids"].append("host-1"), "host-1"),
    ("revoked", lambda d: d["queue"].update(revoked_ids=[1]), "queue.revoked_ids[0]"),
    ("call count", lambda d: d["generators"].update(call_count=-1), "generators.call_count"),
    (
        "clock ahead",
        lambda d: d["generators"]["last_emitted_at"].update(clock=99),
        "last_emitted_at",
    ),
    (
        "announced",
        lambda d: d["generators"]["announced"].update(tools=["a", "a"]),
        "generators.announced",
    ),
    ("full bodies", lambda d: d["providers"]["full_bodies"].update(plan=3), "full_bodies"),
    ("providers key", lambda d: d["providers"].update(extra={}), "providers"),
]


@pytest.mark.parametrize(("name", "mutate", "names"), BAD, ids=[b[0] for b in BAD])
def test_from_json_is_strict_and_names_the_field(name: str, mutate: Mutation, names: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(StateError) as info:
        SessionState.from_json(json.dumps(doc))
    assert info.value.code == "RMD-106"
    assert names in info.value.message


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"state"'])
def test_from_json_rejects_what_is_no_document(text: str) -> None:
    with pytest.raises(StateError):
        SessionState.from_json(text)


def test_from_json_takes_text_only() -> None:
    with pytest.raises(TypeError):
        SessionState.from_json({"format": FORMAT})  # type: ignore[arg-type]


# -- starting from an existing history -------------------------------------------------------


def test_from_messages_takes_the_leading_system_messages_as_the_prompt() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "system", "content": [{"type": "text", "text": "Use British spelling."}]},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello."},
    ]
    s = Session.from_messages(history, session_id="s")
    assert s.id == "s"
    assert s.system == "You are terse.\n\nUse British spelling."
    assert [m["role"] for m in s.transcript.messages] == ["user", "assistant"]
    given = Session.from_messages(history, system="Mine.")
    assert given.system == "Mine."
    assert len(given.transcript) == 4


def test_from_messages_recognises_committed_envelopes_by_their_text() -> None:
    first = Session(system="sys")
    first.append({"role": "user", "content": "hi"})
    first.inject({"body": "Run the tests.", "ttl_turns": 3})
    sent = first.prepare_request()
    history = [{"role": "system", "content": "sys"}, *sent.messages]
    s = Session.from_messages(history)
    s.inject({"body": "Run the tests.", "ttl_turns": 3})
    request = s.prepare_request()
    assert list(request.messages) == list(sent.messages)  # not issued a second time
    s.inject({"body": "Something new.", "ttl_turns": 1})
    later = s.prepare_request()
    assert len(later.messages) == len(sent.messages) + 1


def test_from_messages_keeps_tool_calls_open() -> None:
    call = {"id": "c1", "name": "bash", "arguments": {}}
    s = Session.from_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
    )
    assert s.state().open_tool_calls == {"c1"}
    s.queue.inject("stop", mode="interrupt")
    s.run_seam("pre_tool_dispatch", pending_tools=True)
    assert s.transcript.messages[-1]["role"] == "assistant"
    s.append({"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "done"})
    assert [m["role"] for m in s.transcript.messages[-2:]] == ["tool", "user"]


def test_the_record_checks_its_fields() -> None:
    good = Session("s").state()
    with pytest.raises(ReminderError):
        SessionState(session_id="s", agent_id="s", turn=-1)
    with pytest.raises(ValueError, match="session_id"):
        SessionState(session_id=" ", agent_id="s")
    with pytest.raises(TypeError, match="queue"):
        SessionState(session_id="s", agent_id="s", queue=[])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="transcript"):
        SessionState(session_id="s", agent_id="s", transcript=good.to_json())  # type: ignore[arg-type]
