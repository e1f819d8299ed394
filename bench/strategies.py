"""Ways to deliver the same reminders, as the model requests each one sends per turn.

One seeded :func:`make_script` fixes everything a session says: the user turns, the assistant
turns (tool calls and answers), the tool results and the reminders injected (or cleared) before
each request. The assistant turns are scripted too and are appended whatever a live model
answers, so every strategy sends byte-identical conversation content and differs only in where
the reminders go:

``envelope``
    This library: a real :class:`~agent_reminders.Session`; reminders are injected on the
    script's schedule, ``prepare_request`` commits one envelope per turn as a trailing message
    that is kept, ``post_turn`` ages them. The envelope is a ``user`` message (the channel
    every API accepts).
``system_channel``
    The same session with ``channel="system"``: each envelope is committed as a
    mid-conversation system message and kept — what a model that accepts one gets
    (``to_openai_chat`` sends it as a ``developer`` message, ``to_anthropic`` as a
    ``system`` entry in place).
``system_prompt``
    The currently active reminders rendered into the system prompt, rewritten every turn.
``edit_history``
    Each active reminder placed in an envelope message at the point where it fired, and that
    earlier message edited (the directive removed, the message dropped when empty) when it
    expires.
``ephemeral_tail``
    The active reminders as one trailing user message on each request, never kept.

Which reminders are active is decided for the three baselines by the library's own pure
transforms (``inject_reminder``, ``clear_reminders``, ``post_turn``, ``project``), so TTLs,
dedupe keys and clears mean the same thing everywhere. The baselines carry
:data:`~agent_reminders.ENVELOPE_INSTRUCTIONS` once, in their system prompt (the library sends
it once, in its first envelope), and render directives with the TTL they fired with.

Each strategy is a stepper: ``request(turn)`` builds the request, ``after(turn)`` appends the
scripted reply and ages the reminders. ``bench/live_cache.py`` sends the requests to a real
server; an offline benchmark can iterate them without a model (:func:`requests_for`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_reminders import (
    ENVELOPE_INSTRUCTIONS,
    ChannelSetting,
    Message,
    ModelRequest,
    Reminder,
    Session,
    Transcript,
    clear_reminders,
    inject_reminder,
    post_turn,
    project,
    render_envelope,
)

SYSTEM = (
    "You are a coding agent working in the repository at /work/project. Use the tools to read "
    "files, search and run the tests; keep answers short and say what you changed."
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Search the repository for a regular expression.",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run the test suite (or one test file) and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"target": {"type": "string"}},
        },
    },
]

STRATEGIES = ("envelope", "system_channel", "system_prompt", "edit_history", "ephemeral_tail")
LABELS = {
    "envelope": "this library (envelope, appended and kept)",
    "system_channel": "this library, system channel (mid-conversation system message)",
    "system_prompt": "rewriting the system prompt",
    "edit_history": "editing earlier messages",
    "ephemeral_tail": "ephemeral trailing injection",
}

_WORDS = [
    *("config", "parser", "session", "cache", "token", "window", "prefix", "request"),
    *("reply", "history", "buffer", "index", "record", "loader", "writer", "reader"),
    *("client", "server", "handler", "retry", "budget", "limit", "queue", "worker"),
]
_FILES = [f"src/app/{w}.py" for w in _WORDS[:12]]
_TASKS = [
    "The config loader drops keys with empty values; find out why and fix it.",
    "Add a retry budget to the HTTP client and a test for it.",
    "The cache index grows without bound; make it evict the oldest entries.",
    "Rename Session.buffer to Session.history everywhere and keep the old name as an alias.",
    "The queue worker hangs when the handler raises; make it log and continue.",
    "Write a short summary of what changed in this session.",
]


@dataclass(frozen=True, slots=True)
class Turn:
    """The scripted content around one model request."""

    index: int
    inputs: tuple[Message, ...]  # appended before the request (a user turn or tool results)
    inject: tuple[Mapping[str, Any], ...] = ()  # strict reminder options, before the request
    clear: tuple[Mapping[str, Any], ...] = ()  # selectors, before the request
    reply: Message = field(default_factory=lambda: {"role": "assistant", "content": ""})


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for n in range(lines):
        a, b = rng.sample(_WORDS, 2)
        match rng.randrange(4):
            case 0:
                out.append(f"def {a}_{b}(self, {a}):")
            case 1:
                out.append(f"    {a} = self.{b}.get({a!r}, {rng.randrange(100)})")
            case 2:
                out.append(f"    if not {a}: return self.{b}  # line {n}")
            case _:
                out.append(f"    self.{a}.append({b})")
    return "\n".join(out)


def _tool_result(
    rng: random.Random,
    name: str,
    args: Mapping[str, Any],
    file_lines: tuple[int, int],
    fail_rate: float,
) -> tuple[str, bool]:
    """The result text and whether the tests failed."""
    if name == "read_file":
        return f"# {args['path']}\n{_code(rng, rng.randrange(*file_lines))}", False
    if name == "grep":
        hits = [
            f"{rng.choice(_FILES)}:{rng.randrange(1, 300)}: {rng.choice(_WORDS)}"
            for _ in range(rng.randrange(2, 7))
        ]
        return "\n".join(hits), False
    failed = rng.random() < fail_rate
    if failed:
        test = f"tests/test_{rng.choice(_WORDS)}.py::test_{rng.choice(_WORDS)}"
        return (
            f"collected {rng.randrange(40, 90)} items\nFAILED {test}\n"
            f"E   AssertionError: expected {rng.randrange(10)} got {rng.randrange(10, 20)}\n"
            "1 failed",
            True,
        )
    return f"collected {rng.randrange(40, 90)} items\nall passed", False


def make_script(
    turns: int = 40,
    seed: int = 7,
    *,
    file_lines: tuple[int, int] = (4, 12),
    long_output: int = 300,
    pressure_every: int = 10,
    host_every: int = 7,
    fail_rate: float = 0.5,
) -> list[Turn]:
    """A seeded coding session of ``turns`` requests: tasks of 2-5 tool calls, then an answer.

    Reminders on a schedule: a contract workspace anchor at turn 0 (no TTL); a token-pressure
    note every ``pressure_every`` turns under one dedupe key (each replaces the last, the
    window filling from 8 % to 88 % over the session); a one-turn note after each tool result
    longer than ``long_output`` characters; a two-turn corrective after each failing test run
    (a run fails with probability ``fail_rate``); a three-turn advisory host push every
    ``host_every`` turns, the first of which is cleared a turn early. A file read returns
    ``randrange(*file_lines)`` lines of code. The defaults keep the prompts small enough for
    the live benchmark's small model (an 8k context); ``bench/cache.py`` reads files of
    realistic length.
    """
    rng = random.Random(seed)
    script: list[Turn] = []
    pending: list[Message] = [{"role": "user", "content": _TASKS[0]}]
    task, calls_left = 0, rng.randrange(2, 6)
    pushed_at: int | None = None
    for i in range(turns):
        inject: list[Mapping[str, Any]] = []
        clear: list[Mapping[str, Any]] = []
        if i == 0:
            inject.append({"body": "Work only inside /work/project.", "dedupe_key": "workspace"})
        if i % pressure_every == 0:
            inject.append(
                {
                    "body": f"Context window: {8 + 80 * i // turns}% used.",
                    "dedupe_key": "token-pressure",
                    "authority": "advisory",
                    "tags": ["token_pressure"],
                }
            )
        for m in pending:
            if m["role"] == "tool" and len(str(m["content"])) > long_output:
                inject.append(
                    {
                        "body": "The last tool output was long; read only the lines you need.",
                        "ttl_turns": 1,
                        "authority": "advisory",
                        "dedupe_key": "tool-output-long",
                    }
                )
            if m["role"] == "tool" and "FAILED" in str(m["content"]):
                inject.append(
                    {
                        "body": "The tests fail: fix them before you claim the task is done.",
                        "ttl_turns": 2,
                        "authority": "corrective",
                        "dedupe_key": "grounded-review",
                    }
                )
        if i % host_every == 3:
            inject.append(
                {
                    "body": f"Host note {i}: the user edited {rng.choice(_FILES)} meanwhile.",
                    "ttl_turns": 3,
                    "authority": "advisory",
                    "tags": ["host"],
                }
            )
            pushed_at = i
        elif pushed_at == 3 and i == 4:
            clear.append({"tag": "host"})  # the host revokes its first push a turn early
        if calls_left > 0:
            name = rng.choice(["read_file", "grep", "run_tests"])
            args = {
                "read_file": {"path": rng.choice(_FILES)},
                "grep": {"pattern": rng.choice(_WORDS)},
                "run_tests": {"target": "tests"},
            }[name]
            call_id = f"call_{i}"
            reply: Message = {
                "role": "assistant",
                "content": f"Calling {name} on {next(iter(args.values()))}.",
                "tool_calls": [{"id": call_id, "name": name, "arguments": args}],
            }
            text, _ = _tool_result(rng, name, args, file_lines, fail_rate)
            nxt: list[Message] = [{"role": "tool", "tool_call_id": call_id, "content": text}]
            calls_left -= 1
        else:
            reply = {
                "role": "assistant",
                "content": f"Done: {rng.choice(_WORDS)} and {rng.choice(_WORDS)} updated.",
            }
            task += 1
            nxt = [{"role": "user", "content": _TASKS[task % len(_TASKS)]}]
            calls_left = rng.randrange(2, 6)
        script.append(Turn(i, tuple(pending), tuple(inject), tuple(clear), reply))
        pending = nxt
    return script


def _counter_ids(prefix: str) -> Any:
    n = 0

    def make() -> str:
        nonlocal n
        n += 1
        return f"{prefix}-{n:04d}"

    return make


class Strategy(Protocol):
    name: str

    def request(self, turn: int) -> ModelRequest: ...

    def after(self, turn: int) -> None: ...


class Envelope:
    """This library: a real Session, one envelope per turn committed and kept."""

    name = "envelope"
    channel: ChannelSetting = "user"

    def __init__(self, script: list[Turn], tools: list[dict[str, Any]] = TOOLS) -> None:
        self.script, self.tools = script, tools
        self.session = Session(
            f"bench-{self.name}",
            system=SYSTEM,
            id_factory=_counter_ids("r"),
            channel=self.channel,
        )

    def request(self, turn: int) -> ModelRequest:
        step = self.script[turn]
        for m in step.inputs:
            self.session.append(m)
        for options in step.inject:
            self.session.inject(options)
        for selector in step.clear:
            self.session.clear(selector)
        return self.session.prepare_request(turn=turn, tools=self.tools)

    def after(self, turn: int) -> None:
        self.session.append(self.script[turn].reply)
        self.session.post_turn(turn)


class SystemChannel(Envelope):
    """This library on the system channel: each envelope a mid-conversation system message."""

    name = "system_channel"
    channel: ChannelSetting = "system"


class _Baseline:
    """Shared by the baselines: the conversation without reminders, and which are active."""

    name = "baseline"

    def __init__(self, script: list[Turn], tools: list[dict[str, Any]] = TOOLS) -> None:
        self.script, self.tools = script, tools
        self.system = f"{SYSTEM}\n\n{ENVELOPE_INSTRUCTIONS}"
        self.conversation: list[Message] = []
        self.reminders = Transcript(id=f"bench-{self.name}")
        self.first_seen: dict[str, Reminder] = {}  # id -> the reminder as it fired (its TTL)
        self.fired_at: dict[str, int] = {}  # id -> len(conversation) when it fired
        self._ids = _counter_ids("r")

    def _advance(self, turn: int) -> list[Reminder]:
        """Append the turn's inputs, apply its reminder changes; the active reminders."""
        step = self.script[turn]
        self.conversation.extend(dict(m) for m in step.inputs)  # type: ignore[misc]
        for options in step.inject:
            self.reminders = inject_reminder(
                self.reminders, options, fired_at_turn=turn, id_factory=self._ids
            ).transcript
        for selector in step.clear:
            self.reminders = clear_reminders(self.reminders, selector).transcript
        active = project(self.reminders.reminders)
        for r in active:
            self.first_seen.setdefault(r.id, r)
            self.fired_at.setdefault(r.id, len(self.conversation))
        return [self.first_seen[r.id] for r in active]

    def _request(self, turn: int, system: str, messages: list[Message]) -> ModelRequest:
        return ModelRequest(
            system=system,
            messages=messages,
            tools=[dict(t) for t in self.tools],
            session_id=f"bench-{self.name}",
            turn=turn,
        )

    def after(self, turn: int) -> None:
        self.conversation.append(dict(self.script[turn].reply))  # type: ignore[arg-type]
        self.reminders = post_turn(self.reminders, turn).transcript


def _envelope(reminders: list[Reminder]) -> str:
    return render_envelope(reminders, instructions=False)


class SystemPrompt(_Baseline):
    """The active reminders rendered into the system prompt, rewritten every turn."""

    name = "system_prompt"

    def request(self, turn: int) -> ModelRequest:
        active = self._advance(turn)
        system = f"{self.system}\n\n{_envelope(active)}" if active else self.system
        return self._request(turn, system, list(self.conversation))


class EditHistory(_Baseline):
    """Each active reminder in an envelope where it fired; expired ones edited out again."""

    name = "edit_history"

    def request(self, turn: int) -> ModelRequest:
        active = self._advance(turn)
        at: dict[int, list[Reminder]] = {}
        for r in active:
            at.setdefault(self.fired_at[r.id], []).append(r)
        messages: list[Message] = []
        for position in range(len(self.conversation) + 1):
            if position in at:
                messages.append({"role": "user", "content": _envelope(at[position])})
            if position < len(self.conversation):
                messages.append(self.conversation[position])
        return self._request(turn, self.system, messages)


class EphemeralTail(_Baseline):
    """The active reminders as one trailing user message per request, never kept."""

    name = "ephemeral_tail"

    def request(self, turn: int) -> ModelRequest:
        active = self._advance(turn)
        messages = list(self.conversation)
        if active:
            messages.append({"role": "user", "content": _envelope(active)})
        return self._request(turn, self.system, messages)


def build(name: str, script: list[Turn]) -> Strategy:
    """The strategy called ``name`` (one of :data:`STRATEGIES`) over ``script``."""
    classes: dict[str, type[Envelope] | type[_Baseline]] = {
        "envelope": Envelope,
        "system_channel": SystemChannel,
        "system_prompt": SystemPrompt,
        "edit_history": EditHistory,
        "ephemeral_tail": EphemeralTail,
    }
    if name not in classes:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    strategy: Strategy = classes[name](script)  # type: ignore[assignment]
    return strategy


def requests_for(name: str, script: list[Turn]) -> Iterator[ModelRequest]:
    """Every request of strategy ``name`` over ``script``, offline (no model in the loop)."""
    strategy = build(name, script)
    for turn in range(len(script)):
        yield strategy.request(turn)
        strategy.after(turn)
