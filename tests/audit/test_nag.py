"""The nag rate (issue 26, deliverable 5; docs/audit.md, "Nag rate"): from a session's event log
(real Sessions driving providers, generators, ``inject`` and cadence) and from the request bodies
the wire converters build, each figure against a hand count; the ignored-fire heuristic on a
reply that mentions or runs what a directive says and one that does not; the invariants as
properties; and the audit's ``nag`` in the table, ``--json`` and the HTML report."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from audit_helpers import run_cli, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import Message, ModelRequest, Session
from agent_reminders.audit import (
    FAST_REPEAT_WINDOW,
    NagReport,
    audit_file,
    audit_requests,
    nag_from_events,
    nag_from_requests,
    render_html,
)
from agent_reminders.audit.turns import AssistantTurn
from agent_reminders.generators import GeneratorRegistry
from agent_reminders.integrations import to_anthropic, to_openai_chat, to_openai_responses
from agent_reminders.providers import ProviderContext

FIGURE_KEYS = [
    "fires",
    "fires_per_100_calls",
    "requests_with_directive",
    "requests_with_directive_share",
    "directive_tokens",
    "directive_share",
    "repeats",
    "fast_repeats",
    "ignored_heuristic",
    "ignored_checked",
    "dropped",
]
NAG_KEYS = ["source", "model_calls", "prompt_tokens", "fast_repeat_window", *FIGURE_KEYS]
NAG_KEYS.append("producers")
TESTS = "Run pytest before you report back."
CHANGELOG = "Update CHANGELOG.md with the change."


def b4(text: str) -> int:
    """Tokens of ``text`` under the bytes/4 tokenizer (and the event log's estimate)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def saying(body: Callable[[ProviderContext], str | None]) -> Callable[[ProviderContext], Any]:
    """A provider that says ``body(ctx)`` with a one-turn lifetime under its own key."""

    def evaluate(ctx: ProviderContext) -> Mapping[str, Any] | None:
        text = body(ctx)
        return None if text is None else {"body": text, "ttl_turns": 1, "dedupe_key": "nag"}

    return evaluate


# -- from the event log ----------------------------------------------------------------------


def test_each_figure_from_the_event_log_by_hand() -> None:
    session = Session()  # reminders on: registered providers too (the canonical ones keep quiet)
    session.providers.register(
        "nagger",
        subscribes_to="post_step",
        evaluate=saying(lambda ctx: f"Step {ctx.payload['step']}: keep going."),
    )
    provider_bytes: dict[int, int] = {}
    injected: dict[int, str] = {0: TESTS, 6: TESTS, 8: TESTS}
    for turn in range(10):
        if turn < 4:  # the provider fires in turns 0-3: a fast repeat each time after the first
            done = session.fire("post_step", {"step": turn})
            provider_bytes[turn] = sum(r["body_bytes"] for r in done.reports)
        if turn in injected:  # 0 -> 6 is a repeat (6 turns later), 6 -> 8 a fast one
            session.inject({"body": injected[turn], "dedupe_key": "tests", "ttl_turns": 1})
        session.prepare_request()
        session.post_turn(turn)

    nag = nag_from_events(session.event_log.records, model_calls=10, prompt_tokens=1000)

    tokens = sum(
        math.ceil((provider_bytes.get(t, 0) + len(injected.get(t, "").encode())) / 4)
        for t in {*provider_bytes, *injected}
    )
    o = nag.overall
    assert (o.producer, o.fires, o.fires_per_100_calls) == ("all", 7, 70.0)
    assert (o.requests_with_directive, o.requests_with_directive_share) == (6, 0.6)
    assert (o.directive_tokens, o.directive_share) == (tokens, tokens / 1000)
    assert (o.repeats, o.fast_repeats) == (3 + 2, 3 + 1)
    assert (o.ignored_heuristic, o.ignored_checked, dict(o.dropped)) == (None, None, {})
    by = {p.producer: p for p in nag.producers}
    assert [p.producer for p in nag.producers] == ["nagger", "in_pipeline"]  # most fires first
    assert (by["nagger"].fires, by["nagger"].repeats, by["nagger"].fast_repeats) == (4, 3, 3)
    assert by["nagger"].fires_per_100_calls == 40.0
    assert by["nagger"].requests_with_directive_share == 0.4
    assert by["nagger"].directive_tokens is None  # the log has no body size per producer
    assert (by["in_pipeline"].fires, by["in_pipeline"].repeats) == (3, 2)
    assert by["in_pipeline"].fast_repeats == 1
    assert nag.source == "events"
    assert nag.fast_repeat_window == FAST_REPEAT_WINDOW == 5


def test_refusals_are_counted_by_reason_for_the_producer_of_their_key() -> None:
    session = Session()
    session.providers.register(
        "late",
        subscribes_to="post_step",
        evaluate=lambda ctx: {"body": "Late words.", "ttl_turns": 1, "first_after": 2},
    )
    for turn in range(8):
        session.inject(
            {"body": "Check the logs.", "dedupe_key": "logs", "cooldown_turns": 3, "ttl_turns": 1}
        )
        session.fire("post_step", {})
        session.prepare_request()
        session.post_turn(turn)

    nag = nag_from_events(session.event_log.records, model_calls=8)

    by = {p.producer: p for p in nag.producers}
    # in_pipeline fires in turns 0, 3 and 6 (a cooldown of 3 turns), refused in the other five
    assert (by["in_pipeline"].fires, dict(by["in_pipeline"].dropped)) == (3, {"cooldown": 5})
    assert (by["in_pipeline"].repeats, by["in_pipeline"].fast_repeats) == (2, 2)
    # the provider is refused before turn 2 (first_after): its key had never been injected
    assert by["late"].fires == 6
    assert dict(by["late"].dropped) == {"first_after": 2}
    assert dict(nag.overall.dropped) == {"cooldown": 5, "first_after": 2}


def test_a_generator_is_named_by_its_id_and_a_shared_log_by_its_session() -> None:
    class Clock:
        id = "clock"

        def compute(self, force: bool) -> str:
            return "The time is noon."

    generators = GeneratorRegistry()
    generators.register(Clock())
    parent = Session(reminders=False, generators=generators)
    child = Session.child(parent, session_id="reviewer")
    for turn in range(3):
        parent.prepare_request()
        parent.post_turn(turn)
    child.inject({"body": "Review only.", "ttl_turns": 1})
    child.prepare_request()

    mine = nag_from_events(parent.event_log.records, model_calls=3, session_id=parent.id)
    both = nag_from_events(parent.event_log.records, model_calls=4)

    assert [(p.producer, p.fires) for p in mine.producers] == [("clock", 3)]
    assert (mine.overall.repeats, mine.overall.fast_repeats) == (2, 2)
    assert sorted((p.producer, p.fires) for p in both.producers) == [
        ("clock", 3),
        ("in_pipeline", 1),
    ]


def test_the_summary_and_the_json_say_the_same_figures() -> None:
    session = Session(reminders=False)
    for turn in range(4):
        session.inject({"body": TESTS, "dedupe_key": "tests", "ttl_turns": 1})
        session.prepare_request()
        session.post_turn(turn)
    nag = nag_from_events(session.event_log.records, model_calls=4, prompt_tokens=b4(TESTS) * 8)
    data = nag.to_json()
    assert list(data) == NAG_KEYS
    assert list(data["producers"]["in_pipeline"]) == FIGURE_KEYS
    assert data["fires"] == 4
    assert data["directive_share"] == 0.5
    assert nag.summary() == (
        "4 directives fired in 4 model calls (100.0 per 100 calls); 4 of 4 requests carried a "
        "new one (100%); directives are 50.0% of the final prompt; 3 repeats of a key, 3 "
        "within 5 turns"
    )
    with pytest.raises(ValueError, match="model_calls"):
        nag_from_events([], model_calls=-1)


# -- from request bodies ---------------------------------------------------------------------

WIRES: dict[str, Callable[[ModelRequest], dict[str, Any]]] = {
    "openai_chat": to_openai_chat,
    "anthropic": to_anthropic,
    "openai_responses": to_openai_responses,
}
RUNS_PYTEST = {
    "role": "assistant",
    "content": "On it.",
    "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "pytest -q"}}],
}
SAYS_DONE = {"role": "assistant", "content": "Done with the parser fix."}
MENTIONS = {"role": "assistant", "content": "All green; pytest passes."}


def coding_session(wire: Callable[[ModelRequest], dict[str, Any]]) -> list[dict[str, Any]]:
    """Four requests: TESTS in request 0, CHANGELOG in 1, TESTS again in 2 (a fast repeat),
    nothing new in 3; the replies run pytest, ignore the changelog, then mention pytest."""
    session = Session(reminders=False)
    session.append({"role": "user", "content": "Fix the parser."})
    replies = [[RUNS_PYTEST, {"role": "tool", "tool_call_id": "c1", "content": "ok"}]]
    replies += [[SAYS_DONE], [MENTIONS]]
    bodies = []
    for turn, nag in enumerate([TESTS, CHANGELOG, TESTS, None]):
        if nag is not None:
            session.inject({"body": nag, "ttl_turns": 1})
        bodies.append(wire(session.prepare_request()))
        for message in replies[turn] if turn < len(replies) else ():
            session.append(cast(Message, message))
        session.post_turn(turn)
        if turn < 2:
            session.append({"role": "user", "content": "Next, please."})
    return bodies


@pytest.mark.parametrize("format", list(WIRES))
def test_each_figure_from_request_bodies_by_hand(format: str) -> None:
    bodies = coding_session(WIRES[format])
    nag = nag_from_requests(bodies, encoding="bytes/4")
    final = audit_requests(bodies, encoding="bytes/4").final_prompt_tokens
    o = nag.overall
    assert (nag.source, nag.model_calls, nag.prompt_tokens) == ("requests", 4, final)
    assert (o.fires, o.fires_per_100_calls) == (3, 75.0)
    assert (o.requests_with_directive, o.requests_with_directive_share) == (3, 0.75)
    assert o.directive_tokens == b4(TESTS) * 2 + b4(CHANGELOG)
    assert o.directive_share == pytest.approx(o.directive_tokens / final)
    assert (o.repeats, o.fast_repeats) == (1, 1)  # TESTS again, two requests later
    # TESTS: the turn runs pytest; CHANGELOG: not a word of it; TESTS again: "pytest" said
    assert (o.ignored_heuristic, o.ignored_checked) == (1, 3)
    assert [p.producer for p in nag.producers] == ["envelope"]


@pytest.mark.parametrize("format", list(WIRES))
def test_the_audit_carries_the_same_nag(format: str) -> None:
    bodies = coding_session(WIRES[format])
    report = audit_requests(bodies, encoding="bytes/4")
    assert report.nag == nag_from_requests(bodies, encoding="bytes/4")
    assert list(report.to_json())[-1] == "nag"
    assert report.to_json()["nag"] == report.nag.to_json()


def test_a_reply_that_mentions_or_runs_it_is_not_ignored_and_one_that_does_not_is() -> None:
    def one(reply: Mapping[str, Any], body: str) -> NagReport:
        session = Session(reminders=False)
        session.append({"role": "user", "content": "Go."})
        session.inject({"body": body, "ttl_turns": 1})
        first = to_openai_chat(session.prepare_request())
        session.append(cast(Message, dict(reply)))
        session.post_turn(0)
        session.append({"role": "user", "content": "And?"})
        return nag_from_requests([first, to_openai_chat(session.prepare_request())])

    runs_make = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "m", "name": "bash", "arguments": {"cmd": "make lint"}}],
    }
    cases = [
        (MENTIONS, TESTS, 0, 1),  # mentions a salient word
        (RUNS_PYTEST, TESTS, 0, 1),  # runs the command it names
        (SAYS_DONE, TESTS, 1, 1),  # neither: ignored (a heuristic)
        (runs_make, "Run `make lint`.", 0, 1),  # no salient word, but runs what it names
        (SAYS_DONE, "Run `make lint`.", 0, 0),  # no salient word to look for: not judged
    ]
    for reply, body, ignored, checked in cases:
        o = one(cast(Mapping[str, Any], reply), body).overall
        assert (o.ignored_heuristic, o.ignored_checked) == (ignored, checked), (reply, body)


def test_the_heuristic_reads_every_wire_shape_of_a_turn() -> None:
    anthropic = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t", "name": "bash", "input": {"command": "pytest"}}
        ],
    }
    responses = [
        {"type": "message", "role": "assistant", "content": "Sure."},
        {"type": "function_call", "call_id": "c", "name": "bash", "arguments": '{"cmd":"pytest"}'},
    ]
    for items in ([anthropic], responses):
        assert AssistantTurn.of(items).ignored(TESTS) is False
        assert AssistantTurn.of(items).ignored(CHANGELOG) is True


def test_history_sent_again_fires_nothing_and_a_system_reminder_is_one_directive() -> None:
    reminder = "<system-reminder>\nRead the first failure before editing.\n</system-reminder>"
    history = [{"role": "user", "content": "fix it"}, {"role": "user", "content": reminder}]
    bodies = [{"messages": history[: n + 1]} for n in range(2)] + [{"messages": history}] * 3
    nag = nag_from_requests(bodies, encoding="bytes/4")
    assert [(p.producer, p.fires) for p in nag.producers] == [("system-reminder", 1)]
    assert nag.overall.requests_with_directive == 1
    assert nag.model_calls == 5


# -- properties ------------------------------------------------------------------------------

turns = st.lists(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True), min_size=1, max_size=12
)


def invariants(nag: NagReport) -> None:
    o, calls = nag.overall, nag.model_calls
    assert o.fires_per_100_calls * calls / 100 == pytest.approx(o.fires)
    assert 0 <= o.fast_repeats <= o.repeats <= o.fires
    assert o.requests_with_directive <= min(o.fires, calls)
    assert sum(p.fires for p in nag.producers) == o.fires
    assert sum(p.repeats for p in nag.producers) == o.repeats
    if o.ignored_checked is not None:
        assert 0 <= (o.ignored_heuristic or 0) <= o.ignored_checked <= o.fires


@settings(max_examples=40, deadline=None)
@given(turns, st.sampled_from([None, 2, 6]))
def test_event_log_figures_keep_their_bounds(plan: list[list[str]], cooldown: int | None) -> None:
    session = Session(reminders=False)
    for turn, keys in enumerate(plan):
        for key in keys:
            options: dict[str, Any] = {"body": f"Mind {key}.", "dedupe_key": key, "ttl_turns": 1}
            if cooldown is not None:
                options["cooldown_turns"] = cooldown
            session.inject(options)
        session.prepare_request()
        session.post_turn(turn)
    nag = nag_from_events(session.event_log.records, model_calls=len(plan))
    invariants(nag)
    assert nag.overall.fires + sum(nag.overall.dropped.values()) == sum(map(len, plan))


@settings(max_examples=40, deadline=None)
@given(turns)
def test_request_body_figures_keep_their_bounds(plan: list[list[str]]) -> None:
    session = Session(reminders=False)
    bodies = []
    for turn, keys in enumerate(plan):
        session.append({"role": "user", "content": f"step {turn}"})
        for key in keys:
            session.inject({"body": f"Mind the {key * 5} files.", "dedupe_key": key})
        bodies.append(to_openai_chat(session.prepare_request()))
        session.append({"role": "assistant", "content": f"done {turn}"})
        session.post_turn(turn)
    invariants(nag_from_requests(bodies, encoding="bytes/4"))


# -- the audit's table, --json and HTML ------------------------------------------------------


def test_audit_json_table_and_html_carry_the_nag_rate(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "requests.jsonl", coding_session(to_openai_chat))
    done = run_cli(["audit", str(path), "--json", "--encoding", "bytes/4"])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data)[-1] == "nag"
    assert list(data["nag"]) == NAG_KEYS
    assert (data["nag"]["fires"], data["nag"]["ignored_heuristic"]) == (3, 1)
    report = audit_file(path, encoding="bytes/4")
    assert report.nag is not None
    assert data["nag"] == report.nag.to_json()
    table = run_cli(["audit", str(path), "--encoding", "bytes/4"])
    assert table.returncode == 0, table.stderr
    for text in ("nag rate", "fires per 100 model calls", "75.0 (3 fires)", "(heuristic)"):
        assert text in table.stdout
    page = render_html(report)
    assert "nag rate: directive fires per 100 model calls" in page
    assert "1 of 3 ignored (heuristic)" in page


def test_a_session_file_has_no_nag(fixtures: Path) -> None:
    transcript = next((fixtures / "transcripts" / "claude-code" / "baseline").rglob("*.jsonl"))
    report = audit_file(transcript)
    assert report.nag is None
    assert "nag" not in report.to_json()
