"""End to end: a 12-turn tool-using session on ScriptedModel where every kind of reminder
happens — token pressure, a truncated tool result, a failing pytest run, one host reminder per
delivery mode, compaction with its recap, and a sub-agent handoff.

The test asserts the exact order of lifecycle events, that each directive is committed in the
request(s) it should be and in no other, and that the append-only invariant holds everywhere
except across the compaction.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_reminders import (
    EventLog,
    EventRecord,
    Hooks,
    Session,
    Tool,
    ToolResult,
    agent_loop,
    check_append_only,
)
from agent_reminders.testing import ScriptedModel

WINDOW = 10_000
FAILING_PYTEST = """\
============================= test session starts ==============================
collected 3 items

tests/test_parser.py .F.                                                 [100%]

=================================== FAILURES ===================================
_______________________________ test_parse_empty _______________________________
    def test_parse_empty():
>       assert parse("") == []
E       AssertionError: assert None == []
=========================== short test summary info ============================
FAILED tests/test_parser.py::test_parse_empty - AssertionError: assert None == []
========================= 1 failed, 2 passed in 0.05s ==========================
"""
PASSING_PYTEST = (
    "...\n============================== 3 passed in 0.04s ===============================\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments}


def step(tokens: int, *calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "content": content,
        "usage": {"input_tokens": tokens, "output_tokens": 50},
    }
    if calls:
        out["tool_calls"] = list(calls)
    return out


# One model response per turn (turn = request number).
SCRIPT = [
    step(1_000, call("c0", "read_file", path="src/parser.py")),  # 0: output is cut
    step(1_800, call("c1", "bash", command=["pytest", "-q"])),  # 1: pytest fails
    step(2_600, call("c2", "edit_file", path="src/parser.py")),  # 2
    step(3_400, call("c3", "bash", command="pytest -q")),  # 3: skipped by an interrupt
    step(7_150, call("c4", "bash", command="pytest -q")),  # 4: passes; 72% -> CAUTION
    step(8_650, call("c5", "read_file", path="README.md")),  # 5: 87% -> WARNING; compaction
    step(3_000, call("c6", "delegate", task="Write a changelog entry.")),  # 6: sub-agent
    step(3_200, call("c7", "read_file", path="CHANGELOG.md")),  # 7
    step(3_400, call("c8", "edit_file", path="CHANGELOG.md")),  # 8
    step(3_600, call("c9", "bash", command="pytest -q")),  # 9
    step(3_800, call("c10", "read_file", path="src/parser.py")),  # 10
    step(4_000, content="Fixed parse('') and added a changelog entry."),  # 11: final answer
]
CHILD_SCRIPT = [
    step(500, call("k0", "read_file", path="CHANGELOG.md")),
    step(700, content="Changelog entry written."),
]


class Scenario:
    """The session, its tools and the host, wired together."""

    def __init__(self) -> None:
        self.log = EventLog()
        self.session = Session(
            "parent",
            system="You are a careful coding agent.",
            event_log=self.log,
            reminders={"config": {"grounded_review": {"max_findings": 3}}},
        )
        self.child: Session | None = None
        self.child_model = ScriptedModel(CHILD_SCRIPT)
        self.pytest_runs = 0
        self.hooks = Hooks()
        self.hooks.step(self.host_after_step)
        self.hooks.session("on_budget_threshold", self.host_on_budget)
        self.tools = [
            Tool(name="read_file", description="Read a file.", parameters={}, fn=self.read_file),
            Tool(name="edit_file", description="Edit a file.", parameters={}, fn=self.edit_file),
            Tool(name="bash", description="Run a command.", parameters={}, fn=self.bash),
            Tool(name="delegate", description="Run a sub-agent.", parameters={}, fn=self.delegate),
        ]

    # tools ---------------------------------------------------------------------------------
    def read_file(self, path: str) -> str:
        size = 6_000 if path == "src/parser.py" and self.session.turn == 1 else 300
        return f"# {path}\n" + "x = 1\n" * (size // 6)

    def edit_file(self, path: str) -> str:
        return f"edited {path}"

    def bash(self, command: str | list[str]) -> ToolResult:
        self.pytest_runs += 1
        return ToolResult(content=FAILING_PYTEST if self.pytest_runs == 1 else PASSING_PYTEST)

    async def delegate(self, task: str) -> str:
        self.child = Session.child(self.session, session_id="child", agent_id="child-agent")
        result = await agent_loop(self.child_model, task, session=self.child, tools=self.tools[:1])
        assert result.final_message is not None
        return str(result.final_message["content"])

    # the host ------------------------------------------------------------------------------
    def host_on_budget(self, event: str, payload: Any) -> None:
        if self.session.turn == 4:  # right after the model asked for tools at turn 3
            self.session.queue.remind(
                {
                    "body": "Host: stop — the user changed the task.",
                    "dedupe_key": "host-interrupt",
                    "ttl_turns": 1,
                },
                mode="interrupt",
            )

    def host_after_step(self, iteration: int, payload: Any) -> None:
        queue = self.session.queue
        if iteration == 1:
            queue.remind(
                {"body": "Host: CI on main is red.", "dedupe_key": "host-ci", "ttl_turns": 2},
                mode="steer",
            )
        if iteration == 2:
            queue.remind({"body": "Host: audit note.", "dedupe_key": "host-audit"}, mode="queue")
        if iteration == 5:
            self.session.compact(keep_last=4, summary="Recap: parse('') fixed; tests pass.")


def label_of(record: EventRecord, labels: dict[str, str]) -> str:
    p = record.payload
    if record.kind.endswith("injected"):
        label = p["dedupe_key"] or (p["tags"] or [p["source"]])[0]
        # grounded_review keys end in a content hash; the event name is what matters here
        labels[p["reminder_id"]] = ":".join(label.split(":")[:2])
    if record.kind.endswith("provider_evaluated"):
        assert type(p["fired"]) is bool  # issue 8: a boolean, for providers and generators
        return f"{p['provider_id']}:{p['fired_count']}"
    if record.kind.endswith("iteration_summary"):
        return str(p["count"])
    if record.kind.endswith("deduped"):
        return labels.get(p["replaced_id"], "?")
    label = labels.get(p.get("reminder_id", ""), "?")
    if record.kind.endswith("expired"):
        return f"{label}:{p['reason']}"
    return label


@pytest.mark.anyio
async def test_twelve_turn_session_with_every_kind_of_reminder() -> None:
    sc = Scenario()
    model = ScriptedModel(SCRIPT)
    result = await agent_loop(
        model,
        "Fix the failing parser test, then add a changelog entry.",
        session=sc.session,
        tools=sc.tools,
        hooks=sc.hooks,
        context_window=WINDOW,
        max_tool_output=2_000,
    )
    assert result.status == "completed"
    assert result.iterations == 12
    assert [r.turn for r in result.requests] == list(range(12))

    # -- lifecycle events of the parent session, in order ----------------------------------
    labels: dict[str, str] = {}
    trace = [
        (r.kind.rsplit(".", 1)[1], label_of(r, labels))
        for r in sc.log.records
        if r.topic == "transcript.reminder.lifecycle"
        and r.payload["session_id"] == "parent"
        and not (r.kind.endswith("provider_evaluated") and r.payload["fired"] == 0)
    ]
    assert trace == EXPECTED_TRACE

    # -- each directive is committed in exactly the request(s) it should be ----------------
    committed: dict[str, list[int]] = {}
    for record in sc.log.records:
        if record.kind.endswith(".fired") and record.payload["session_id"] == "parent":
            committed.setdefault(labels[record.payload["reminder_id"]], []).append(
                record.payload["turn_number"]
            )
    assert committed == EXPECTED_COMMITS
    fired_per_turn = dict.fromkeys(range(12), 0)
    for turns in committed.values():
        for turn in turns:
            fired_per_turn[turn] += 1
    for request in result.requests:
        texts = [str(m["content"]) for m in request.messages]
        assert "Host: audit note." not in "\n".join(texts)  # audit_only never reaches the model
        assert all("directive_ids" not in m for m in request.messages)
        # the request's own new envelope is its last message and holds exactly its directives
        last = texts[-1]
        assert last.count("<directive ") == fired_per_turn[request.turn]
        assert last.startswith("<context-directives") == bool(fired_per_turn[request.turn])
    for turn, needle in ENVELOPE_FACTS:
        envelopes = [
            i for i, r in enumerate(result.requests) if needle in str(r.messages[-1]["content"])
        ]
        assert envelopes == [turn], needle

    # -- append-only everywhere except across the compaction (between requests 5 and 6) ----
    breaks = check_append_only([list(r.messages) for r in result.requests])
    assert [(b.request_index, b.reason) for b in breaks] == [(6, "message_changed")]

    # -- the interrupt skipped the whole tool batch of turn 3 ------------------------------
    skipped = [
        r.payload
        for r in sc.log.records
        if r.kind == "loop.checkpoint"
        and r.payload["session_id"] == "parent"
        and r.payload["dispatch_skipped"]
    ]
    assert [(p["iteration"], p["seam"]) for p in skipped] == [(3, "pre_tool_dispatch")]
    assert sc.pytest_runs == 3  # turns 1, 4 and 9 ran pytest; turn 3's call was skipped
    # the audit-only note is kept in the transcript's audit record
    assert [e["text"] for e in sc.session.transcript.audit] == ["Host: audit note."]

    # -- the sub-agent inherited the recap and saw it in its first request -----------------
    assert sc.child is not None
    first = sc.child_model.requests[0]
    assert any("Recap: parse('') fixed; tests pass." in str(m["content"]) for m in first.messages)
    inherited = [r.payload for r in sc.log.records if r.kind.endswith(".inherited")]
    assert [(p["sub_agent_id"], p["originating_agent_id"]) for p in inherited] == [
        ("child-agent", "parent")
    ]


# (kind, label) of every lifecycle record of the parent session, provider evaluations that
# fired nothing left out. Turn by turn:
EXPECTED_TRACE: list[tuple[str, str]] = [
    # turn 0: read_file output cut to 2,000 characters -> ttl 1, stamped for request 1
    ("provider_evaluated", "tool_output_truncated:1"),
    ("injected", "tool_output_truncated:read_file"),
    # turn 1: request 1 carries it; pytest fails; the host steers (finish_step) after the step
    ("fired", "tool_output_truncated:read_file"),
    ("iteration_summary", "1"),
    ("provider_evaluated", "grounded_review:1"),
    ("injected", "grounded_review:post_tool_use"),
    ("injected", "host-ci"),  # drained at iteration_end of turn 1
    ("expired", "tool_output_truncated:read_file:ttl"),  # post_turn(1)
    # turn 2: both land in request 2 (ttl 2: live for requests 2 and 3)
    ("fired", "grounded_review:post_tool_use"),
    ("fired", "host-ci"),
    ("iteration_summary", "2"),
    # turn 3: an interrupt arrives before dispatch; the tool batch is skipped
    ("injected", "host-interrupt"),
    ("expired", "grounded_review:post_tool_use:ttl"),  # post_turn(3)
    ("expired", "host-ci:ttl"),
    # turn 4: the interrupt reaches request 4; 72% of the window -> CAUTION
    ("fired", "host-interrupt"),
    ("iteration_summary", "1"),
    ("provider_evaluated", "token_pressure:1"),
    ("injected", "token_pressure"),
    ("expired", "host-interrupt:ttl"),  # post_turn(4)
    # turn 5: CAUTION in request 5; 87% -> WARNING replaces it; the host compacts
    ("fired", "token_pressure"),
    ("iteration_summary", "1"),
    ("provider_evaluated", "token_pressure:1"),
    ("deduped", "token_pressure"),
    ("injected", "token_pressure"),
    ("expired", "token_pressure:compaction"),  # not preserved: gone with the compaction
    ("provider_evaluated", "post_compact_recap:1"),
    ("injected", "post_compact_recap"),
    # turn 6: the durable recap reaches request 6 (and the sub-agent inherits it)
    ("fired", "post_compact_recap"),
    ("iteration_summary", "1"),
]
EXPECTED_COMMITS: dict[str, list[int]] = {
    "tool_output_truncated:read_file": [1],
    "grounded_review:post_tool_use": [2],
    "host-ci": [2],
    "host-interrupt": [4],
    "token_pressure": [5],
    "post_compact_recap": [6],
}
# (request, text): the only request whose own new envelope carries that text.
ENVELOPE_FACTS: list[tuple[int, str]] = [
    (1, "read_file"),
    (2, "FAILED tests/test_parser.py::test_parse_empty"),
    (2, "Host: CI on main is red."),
    (4, "Host: stop — the user changed the task."),
    (5, "CAUTION"),
    (6, "Recap: parse('') fixed; tests pass."),
]
