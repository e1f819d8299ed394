"""``agent-reminders demo`` (docs/demo.md; issue 14 deliverable 1).

The demo runs the real ``agent_loop`` offline on a built-in script: every run gives the same bytes
(stdout piped, the request log, the HTML report); its reminders follow the lifecycle of docs/core.md
and docs/session-loop.md (checked here on the event log, reminder by reminder); its request log is
the one ``serve --request-log`` writes; and the audit of it finds exactly one prefix break, at the
compaction. ``--model``/``--base-url`` run the same task on a real backend, here the recording model
server behind the real ``openai`` client.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_reminders import EventRecord, ModelRequest, ModelResponse, Usage, check_append_only
from agent_reminders.audit import audit_file, audit_requests, nag_from_events
from agent_reminders.bridge import request_log_line
from agent_reminders.cli import app
from agent_reminders.demo import (
    DEFAULT_TURNS,
    MAX_TURNS,
    MIN_TURNS,
    DemoResult,
    demo_script,
    run_demo,
)
from agent_reminders.demo.sandbox import Sandbox
from agent_reminders.testing import FunctionModel, RecordingModelServer

# the module, not the command function of the same name that agent_reminders.cli exports
cli_demo = importlib.import_module("agent_reminders.cli.demo")
ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")
runner = CliRunner()
AUDIT_KEYS = [
    "format",
    "encoding",
    "requests",
    "prompt_tokens",
    "final_prompt_tokens",
    "prefix_breaks",
    "reuse",
    "uncached_tokens",
    "uncached_over_final",
    "cost_ratio",
    "directive_tokens",
    "directive_overhead",
    "nag",
]
COMPACTION = 14  # task 1 is 14 turns whatever --turns says


def demo_command(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``agent-reminders demo`` in a subprocess (stdout piped) and return its stdout."""
    full = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "agent_reminders.cli", "demo", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def result() -> DemoResult:
    return run_demo()


# -- same bytes ------------------------------------------------------------------------------


def test_two_runs_write_the_same_bytes(tmp_path: Path) -> None:
    outputs = []
    for name in ("one", "two"):
        cwd = tmp_path / name
        cwd.mkdir()
        short = demo_command(cwd, "--out", "out")
        stdout = demo_command(cwd, "--out", "out", "--verbose")
        files = [(cwd / "out" / f).read_bytes() for f in cli_demo.ALL_FILES]
        outputs.append((short, stdout, files))
    assert outputs[0] == outputs[1]
    short, stdout = outputs[0][:2]
    assert "\x1b[" not in short + stdout  # piped: plain lines, no colour
    assert short.startswith("A scripted coding agent did two tasks")
    assert stdout.startswith("-- task 1 ")
    assert "turn 0\n   sent    request 0 " in stdout
    assert cli_demo.LEGEND in stdout
    assert "1 prefix break, at request 14 (message 0, message_changed): the compaction" in stdout


def test_the_default_output_folder_is_made_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--turns", str(MIN_TURNS)])
    assert result.exit_code == 0, result.output
    made = tmp_path / cli_demo.DEFAULT_OUT
    assert sorted(p.name for p in made.iterdir()) == sorted(cli_demo.ALL_FILES)
    assert f"Wrote {cli_demo.DEFAULT_OUT / cli_demo.REQUESTS_FILE} ({MIN_TURNS} requests" in (
        result.stdout
    )
    verbose = runner.invoke(app, ["demo", "--turns", str(MIN_TURNS), "--verbose"])
    assert f"wrote {cli_demo.DEFAULT_OUT / cli_demo.REQUESTS_FILE} ({MIN_TURNS} requests" in (
        verbose.stdout
    )


def test_in_process_runs_are_equal(result: DemoResult) -> None:
    again = run_demo()
    assert again.rows == result.rows
    assert [request_log_line(r) for r in again.requests] == [
        request_log_line(r) for r in result.requests
    ]
    assert again.usages == result.usages
    assert [(e.kind, e.payload) for e in again.events] == [
        (e.kind, e.payload) for e in result.events
    ]


# -- what the run does -----------------------------------------------------------------------


def lifecycle(events: Sequence[EventRecord], rid: str) -> list[tuple[str, str, object]]:
    """(session, kind, detail) of every lifecycle record of reminder ``rid``, in order;
    detail is the request of a ``fired``, the reason of an ``expired``."""
    out: list[tuple[str, str, object]] = []
    for e in events:
        p = e.payload
        if p.get("reminder_id") != rid and p.get("replacing_id") != rid:
            continue
        kind = e.kind.rsplit(".", 1)[1]
        detail: object = {
            "fired": p.get("turn_number"),
            "expired": (p.get("reason"), p.get("expired_at_turn")),
            "injected": p.get("source"),
        }.get(kind)
        out.append((p["session_id"], kind, detail))
    return out


def reminder_id(events: Sequence[EventRecord], match: Callable[[dict[str, Any]], bool]) -> str:
    """The id of the first injected reminder whose payload matches."""
    return next(
        str(e.payload["reminder_id"])
        for e in events
        if e.kind == "transcript.reminder.injected" and match(e.payload)
    )


def test_each_key_reminder_lives_its_documented_lifecycle(result: DemoResult) -> None:
    events = result.events
    rid = {
        "truncated": reminder_id(events, lambda p: p["tags"] == ["truncation"]),
        "review": reminder_id(events, lambda p: "grounded_review" in p["tags"]),
        "editor": reminder_id(events, lambda p: p["tags"] == ["editor"]),
        "person": reminder_id(events, lambda p: p["tags"] == ["person"]),
        "hook": reminder_id(events, lambda p: p["source"] == "hook"),
        "recap": reminder_id(events, lambda p: p["tags"] == ["recap"]),
        "idle": reminder_id(events, lambda p: p["tags"] == ["idle"]),
        "tools": reminder_id(events, lambda p: p["tags"] == ["generator", "tools"]),
    }
    a, r = "demo", "demo-reviewer"
    # ttl 1: the truncated read is in exactly one request, the one after the cut output
    assert lifecycle(events, rid["truncated"]) == [
        (a, "injected", "stdlib_provider"),
        (a, "fired", 1),
        (a, "expired", ("ttl", 1)),
    ]
    # ttl 2: the failing pytest run covers two assistant turns
    assert lifecycle(events, rid["review"]) == [
        (a, "injected", "stdlib_provider"),
        (a, "fired", 3),
        (a, "expired", ("ttl", 4)),
    ]
    # finish_step: drained after the tools of turn 2, so in request 3; ttl 4
    assert lifecycle(events, rid["editor"]) == [
        (a, "injected", "bridge"),
        (a, "fired", 3),
        (a, "expired", ("ttl", 6)),
    ]
    # interrupt_immediate, durable and propagate=all: kept by the compaction, committed again
    # after it (the message that held it was archived), and inherited by the sub-agent
    assert lifecycle(events, rid["person"]) == [
        (a, "injected", "bridge"),
        (a, "fired", 4),
        (a, "fired", COMPACTION),
        (r, "injected", "inherited"),
        (r, "inherited", None),
        (r, "fired", 0),
    ]
    assert lifecycle(events, rid["hook"]) == [
        (a, "injected", "hook"),
        (a, "fired", 5),
        (a, "expired", ("ttl", 6)),
    ]
    # the recap is durable (no TTL) and reaches the sub-agent too
    assert lifecycle(events, rid["recap"]) == [
        (a, "injected", "stdlib_provider"),
        (a, "fired", COMPACTION),
        (r, "injected", "inherited"),
        (r, "inherited", None),
        (r, "fired", 0),
    ]
    for key in ("idle", "tools"):  # propagate none / ttl 1: the first request after the pause
        assert lifecycle(events, rid[key]) == [
            (a, "injected", "stdlib_provider"),
            (a, "fired", COMPACTION),
            (a, "expired", ("ttl", COMPACTION)),
        ]


def test_the_interrupt_skips_the_tool_batch_and_audit_only_never_reaches_a_request(
    result: DemoResult,
) -> None:
    skipped = [
        e.payload["iteration"]
        for e in result.events
        if e.kind == "loop.checkpoint" and e.payload["dispatch_skipped"]
    ]
    assert skipped == [3]
    tool_results = [m for m in result.requests[4].messages if m["role"] == "tool"]
    assert "skipped" in str(tool_results[-1]["content"])
    (audited,) = result.session.transcript.audit
    assert audited["mode"] == "audit_only"
    assert audited["visibility"] == "audit"
    body = audited["reminder"]["body"]
    assert all(body not in request_log_line(r) for r in result.requests)


def test_token_pressure_builds_from_usage_and_the_compaction_drops_it(result: DemoResult) -> None:
    pressure = [
        e.payload["reminder_id"]
        for e in result.events
        if e.kind == "transcript.reminder.injected" and e.payload["tags"] == ["token_pressure"]
    ]
    assert len(pressure) == 2  # CAUTION, then WARNING, during task 1 only
    text = request_log_line(result.requests[COMPACTION - 1])
    assert "Context pressure CAUTION" in text
    assert "Context pressure WARNING" in text
    assert "CRITICAL" not in text
    # each level once: the same level again within 5 turns is held back (restraint)...
    held = [e.payload for e in result.events if e.kind == "transcript.reminder.dropped"]
    assert {p["reason"] for p in held if p["dedupe_key"] == "token_pressure"} == {"cooldown"}
    # ...so the WARNING is not renewed, and its last turn ends at the compaction's TTL tick
    last = lifecycle(result.events, pressure[-1])
    assert last[-1] == ("demo", "expired", ("ttl", None))
    after = "\n".join(request_log_line(r) for r in result.requests[COMPACTION:])
    assert "Context pressure" not in after


def test_a_generator_announces_the_tool_added_for_task_two(result: DemoResult) -> None:
    before, after = result.requests[COMPACTION - 1], result.requests[COMPACTION]
    assert "delegate" not in {t["name"] for t in before.tools}
    assert "delegate" in {t["name"] for t in after.tools}
    assert "New tool available: delegate" in str(after.messages[-1]["content"])


def test_the_timeline_names_what_fired_and_why(result: DemoResult) -> None:
    text = "\n".join(line for line in cli_demo.plain_lines(result.rows))
    for fragment in (
        "tool_output_truncated  <- post_tool_use",
        "grounded_review  <- post_tool_use",
        "host:editor  <- finish_step, delivered at post_tool_dispatch",
        "host:person  <- interrupt_immediate, delivered at pre_tool_dispatch",
        "-> skipped: a host interrupt came first",
        "hook:run_tests  <- tool hook",
        "token_pressure  <- on_budget_threshold",
        "project_facts  <- session_start",
        "workspace_anchor  <- session_start",
        "post_compact_recap  <- post_compact",
        "idle_nudge  <- session_idle",
        "generator:tools  <- before_request",
        "inherited host:person  <- handoff",
        "lands in the audit trail at loop_exit",
        "-> blocked by a hook: /srv/vendor is mounted read-only",
        "reviewer request 0",
    ):
        assert fragment in text, fragment
    titles = [row.title for row in result.rows]
    assert titles[:2] == ["task 1", "turn 0"]
    assert titles.index("compaction") < titles.index("task 2") < titles.index("reviewer 0")


def test_the_deliveries_are_what_each_request_carried(result: DemoResult) -> None:
    text = "\n".join(cli_demo.plain_lines(result.rows))
    for d in result.deliveries:
        if d.request is None:  # the audit trail only: never in a request
            assert (d.who, d.label, d.why) == ("agent", "host:ci", "audit_only")
            assert all(d.body not in request_log_line(r) for r in result.requests)
            continue
        request = "request" if d.who == "agent" else f"{d.who} request"
        star = "*" if d.repeat else ""
        line = next(x for x in text.splitlines() if f"sent    {request} {d.request} (" in x)
        assert f"{d.reminder_id} {d.label}{star}" in line
        if d.who == "agent" and not d.repeat:
            sent = result.requests[d.request].messages
            assert any(d.body in str(m["content"]) for m in sent)


STORY = [
    "  - the session began → the model got the project's facts and folders "
    "(request 0; again 10, 11, 21)",
    "  - a file read was cut at 3,000 characters → the model was told to read the rest (request 1)",
    "  - a test run or a tool call failed → the model was told what failed (requests 3, 15, 28)",
    "  - the editor sent a note while a tool ran → delivered after that step (request 3)",
    "  - the person interrupted → shown before the next tool ran; kept after compaction "
    "(requests 4, 14)",
    "  - the agent edited code → a hook asked it to run the tests (requests 5, 17, 18)",
    "  - the context window filled up → the model was told how full: 72%, then 87% "
    "(requests 10, 13)",
    "  - the CI's note was for the record only → it never reached the model",
    "  - the context was nearly full → compacted; the model got a recap (request 14)",
    "  - the host offered a new tool → announced to the model once (request 14)",
    "  - a reviewer sub-agent started → it got the person's note and the recap (its request 0)",
]
JARGON = (
    "seam",
    "finish_step",
    "interrupt_immediate",
    "audit_only",
    "post_tool_use",
    "on_budget_threshold",
    "ttl",
    "dedupe",
    "message_changed",
    "prefix",
    "*",
    "<-",
)


def test_the_default_output_is_short_and_plain(tmp_path: Path) -> None:
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert invoked.exit_code == 0, invoked.output
    lines = invoked.stdout.splitlines()
    assert len(lines) <= 25
    assert max(len(line) for line in lines[:-4]) <= 100  # the last four: paths
    assert lines[0].startswith("A scripted coding agent did two tasks")
    for line in STORY:
        assert line in lines, line
    assert not [w for w in JARGON if w in invoked.stdout]  # nothing of the timeline's words
    report = audit_file(tmp_path / cli_demo.REQUESTS_FILE)
    said = " ".join(invoked.stdout.split())
    assert (
        f"Prompt cache: {report.reuse['exact']:.0%} of the {report.prompt_tokens:,} prompt "
        "tokens could be read from the provider's cache, because every request began with "
        "the one before it. The one exception, by design: request 14, the first after the "
        "compaction."
    ) in said
    assert report.reuse["exact"] > 0.85
    assert lines[-4:] == [
        f"Wrote {tmp_path / cli_demo.REQUESTS_FILE} ({DEFAULT_TURNS} requests, as the model "
        "got them)",
        f"  and {tmp_path / cli_demo.REPORT_FILE} (the audit report: open it in a browser).",
        "Next: agent-reminders demo --verbose   (turn by turn, with the audit's tables)",
        f"      agent-reminders audit {tmp_path / cli_demo.REQUESTS_FILE}",
    ]


def test_the_short_output_is_the_same_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["demo", "--out", str(tmp_path), "--turns", str(MIN_TURNS)]
    piped = runner.invoke(app, args)
    monkeypatch.setattr(cli_demo, "is_terminal", lambda: True)
    terminal = runner.invoke(app, args)
    assert terminal.exit_code == piped.exit_code == 0
    assert terminal.stdout == piped.stdout
    assert "┃" not in terminal.stdout


def test_the_request_log_is_the_one_serve_writes(tmp_path: Path, result: DemoResult) -> None:
    out = tmp_path / "out"
    invoked = runner.invoke(app, ["demo", "--out", str(out)])
    assert invoked.exit_code == 0, invoked.output
    lines = (out / cli_demo.REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines == [
        request_log_line(r, model="scripted", usage=u)
        for r, u in zip(result.requests, result.usages, strict=True)
    ]
    records = [json.loads(line) for line in lines]
    assert {r["session_id"] for r in records} == {"demo"}  # the parent only
    # the model and each answer's usage, but no timestamp: the same bytes on every run
    assert all(
        list(r) == ["session_id", "turn", "model", "usage", "system", "messages"] for r in records
    )
    assert [r["usage"] for r in records] == [u.to_dict() for u in result.usages if u]
    assert records[0]["usage"]["input_tokens"] > 0


@pytest.mark.usefixtures("tiktoken_encodings")  # the quoted token counts are o200k_base's
def test_the_docs_quote_the_real_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    printed: set[str] = set()
    for args in (["demo"], ["demo", "--verbose"]):
        invoked = runner.invoke(app, args)
        assert invoked.exit_code == 0, invoked.output
        printed |= set(invoked.stdout.splitlines())
    docs = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    quoted = [b.split("```", 1)[0] for b in docs.split("```text\n")[1:]]
    assert len(quoted) >= 5
    # and the README's, under "What `make demo` shows"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## What `make demo` shows\n", 1)[1].split("\n## ", 1)[0]
    (shown,) = [b.split("```", 1)[0] for b in section.split("```text\n")[1:]]
    quoted.append(shown)
    for block in quoted:
        for line in block.splitlines():
            assert line in printed, line


# -- the audit ---------------------------------------------------------------------------------


def test_exactly_one_prefix_break_at_the_compaction(tmp_path: Path, result: DemoResult) -> None:
    assert result.compaction_request == COMPACTION
    breaks = check_append_only([list(r.messages) for r in result.requests])
    assert [(b.request_index, b.reason) for b in breaks] == [(COMPACTION, "message_changed")]
    out = tmp_path / "out"
    assert runner.invoke(app, ["demo", "--out", str(out)]).exit_code == 0
    report = audit_file(out / cli_demo.REQUESTS_FILE)
    assert [b.to_json() for b in report.prefix_breaks] == [
        {"request": COMPACTION, "message": 0, "reason": "message_changed"}
    ]
    html = (out / cli_demo.REPORT_FILE).read_text(encoding="utf-8")
    assert html.lower().startswith("<!doctype html>")
    assert "<svg" in html
    assert "message_changed" in html
    # the red mark says what it is: the compaction, on purpose
    assert "the one intended break: compaction at request 14" in html
    assert ">compaction: the intended break</text>" in html
    assert '<div class="card bad"><div class="v">1</div>' not in html
    # the nag card is red for its fast repeat, and says what one is
    assert (
        "1 fast repeat: the same reminder again within 5 requests (a model told the same "
        "thing that soon tends to skip it)"
    ) in html


def test_json_prints_the_audit_object_only(tmp_path: Path) -> None:
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--json"])
    assert invoked.exit_code == 0, invoked.output
    data = json.loads(invoked.stdout)
    assert list(data) == AUDIT_KEYS
    assert data["format"] == "log"
    assert data["requests"] == DEFAULT_TURNS
    assert data["prefix_breaks"] == [
        {"request": COMPACTION, "message": 0, "reason": "message_changed"}
    ]
    assert set(data["reuse"]) == {"exact", "openai", "anthropic", "vllm"}
    assert data == audit_file(tmp_path / cli_demo.REQUESTS_FILE).to_json()


def test_the_demo_ends_with_the_nag_rate(tmp_path: Path, result: DemoResult) -> None:
    last = result.usages[-1]
    assert last is not None
    assert result.nag == nag_from_events(
        result.events,
        model_calls=len(result.requests),
        prompt_tokens=last.input_tokens,
        session_id=result.session.id,  # the reviewer's fires are not the parent's
    )
    by = {p.producer: p for p in result.nag.producers}
    assert {"workspace_anchor", "hook", "tools"} <= set(by)  # a provider, a hook, a generator
    assert result.nag.model_calls == DEFAULT_TURNS
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--verbose"])
    assert invoked.exit_code == 0, invoked.output
    lines = invoked.stdout.splitlines()
    assert lines[-2:] == cli_demo.nag_lines(result.nag)
    assert lines[-2].startswith("Nag rate, fires per 100 model calls: workspace_anchor ")
    anchor = by["workspace_anchor"].fires_per_100_calls
    assert f"workspace_anchor {anchor:.1f}" in lines[-2]
    o = result.nag.overall
    assert lines[-1].startswith(
        f"{o.requests_with_directive} of {DEFAULT_TURNS} requests "
        f"({o.requests_with_directive_share:.0%}) carried a new directive; directives are "
    )
    assert lines[-1].endswith(
        f"; {o.fast_repeats} fast repeats (the same key again within 5 turns)."
    )


@pytest.mark.parametrize("turns", [MIN_TURNS, MAX_TURNS])
def test_turns_sets_the_number_of_requests(tmp_path: Path, turns: int) -> None:
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--turns", str(turns), "--json"])
    assert invoked.exit_code == 0, invoked.output
    data = json.loads(invoked.stdout)
    assert data["requests"] == turns
    assert [b["request"] for b in data["prefix_breaks"]] == [COMPACTION]


@pytest.mark.parametrize("turns", [MIN_TURNS - 1, MAX_TURNS + 1, 0])
def test_turns_out_of_range_is_one_error_line(tmp_path: Path, turns: int) -> None:
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--turns", str(turns)])
    assert invoked.exit_code == 2
    assert "--turns" in invoked.stderr
    assert "Traceback" not in invoked.output
    assert not (tmp_path / cli_demo.REQUESTS_FILE).exists()


def test_run_demo_refuses_turns_out_of_range() -> None:
    with pytest.raises(ValueError, match=f"{MIN_TURNS} to {MAX_TURNS} turns"):
        run_demo(turns=MIN_TURNS - 1)


def test_base_url_without_model_is_one_error_line(tmp_path: Path) -> None:
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--base-url", "http://x/v1"])
    assert invoked.exit_code == 1
    assert invoked.stderr.strip() == (
        "error: --base-url needs --model (e.g. --model openai:NAME --base-url URL)"
    )


def test_a_terminal_gets_the_rich_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_demo, "is_terminal", lambda: True)
    args = ["demo", "--out", str(tmp_path), "--turns", str(MIN_TURNS), "--verbose"]
    invoked = runner.invoke(app, args)
    assert invoked.exit_code == 0, invoked.output
    assert "┃ turn" in invoked.stdout
    assert "what happened" in invoked.stdout
    assert "-- task 1 ---" not in invoked.stdout  # not the plain lines
    assert "1 prefix break, at request 14" in " ".join(invoked.stdout.split())


# -- a real backend ----------------------------------------------------------------------------


def test_model_and_base_url_run_the_same_task_on_a_real_backend(tmp_path: Path) -> None:
    script = demo_script(MIN_TURNS)
    with RecordingModelServer(script) as server:
        stdout = demo_command(
            tmp_path,
            "--out",
            "out",
            "--turns",
            str(MIN_TURNS),
            "--model",
            "openai:demo-model",
            "--base-url",
            server.base_url,
            "--verbose",
            env={"OPENAI_API_KEY": "test-key"},
        )
        bodies = server.bodies("chat")
    assert len(bodies) == len(script)  # the parent's requests and the reviewer's
    assert {b["model"] for b in bodies} == {"demo-model"}
    assert all(b["messages"][0]["role"] == "system" for b in bodies)
    lines = (tmp_path / "out" / cli_demo.REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
    assert len(lines) == MIN_TURNS
    assert "1 prefix break, at request 14 (message 0, message_changed)" in stdout
    assert "reviewer request 0" in stdout


def test_any_model_gets_the_same_tasks_and_its_own_usage_is_kept() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse(
            message={"role": "assistant", "content": "Nothing to do."},
            usage=Usage(input_tokens=6_300, output_tokens=10),
        )

    result = run_demo(model=FunctionModel(answer))
    assert result.statuses == {"task 1": "completed", "task 2": "completed"}  # no delegate call
    assert len(result.requests) == 2
    assert result.compaction_request == 1
    breaks = check_append_only([list(r.messages) for r in result.requests])
    assert [b.request_index for b in breaks] == [1]
    assert result.model == "function:answer"
    assert result.usages == (Usage(input_tokens=6_300, output_tokens=10),) * 2  # its own
    # the backend's usage drives token_pressure (6,310 of 6,400 tokens: CRITICAL)
    assert any("Context pressure CRITICAL: 99%" in str(m["content"]) for m in seen[1].messages)
    assert "sent    request 0 (2 messages, 6,300 tokens)" in "\n".join(
        cli_demo.plain_lines(result.rows)
    )


def test_a_break_other_than_the_compaction_fails_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hi, bye = {"role": "user", "content": "hi"}, {"role": "user", "content": "bye"}
    log = [{"session_id": "demo", "messages": m} for m in ([hi], [bye], [hi])]
    monkeypatch.setattr(cli_demo, "_audit", lambda path: audit_requests(log, format="log"))
    invoked = runner.invoke(app, ["demo", "--out", str(tmp_path), "--turns", str(MIN_TURNS)])
    assert invoked.exit_code == 1
    assert invoked.stderr.strip() == (
        "error: expected one prefix break, at request 14 (the compaction); found: "
        "request 1 (message_changed), request 2 (message_changed)"
    )
    assert "the audit found breaks at requests 1, 2." in " ".join(invoked.stdout.split())


def test_the_sandbox_tools_answer_a_real_model_s_mistakes() -> None:
    box = Sandbox()
    assert box.read_file("/srv/app/docs/usage.md").ok  # an absolute path in the workspace
    for result, text in (
        (box.read_file("nope.py"), "read_file: no such file: nope.py"),
        (box.edit_file("nope.py", "a", "b"), "edit_file: no such file: nope.py"),
        (box.edit_file("src/app/csv.py", "absent", "b"), "the old text was not found"),
        (box.bash("ls -la"), "only pytest, rg and git diff run in the demo sandbox"),
        (box.bash("rg 'unclosed"), "bash: No closing quotation"),
        (box.bash("rg -n"), "only pytest, rg and git diff"),
    ):
        assert not result.ok
        assert text in result.content
    assert box.bash("git diff").content == "(no changes)"
    assert box.rg("read_rows", "src/app/report.py").content.startswith("src/app/report.py:")


def test_without_restraint_the_same_run_nags_more(result: DemoResult) -> None:
    loose = run_demo(restraint=False)
    assert loose.session.reminder_options.restraint is False
    assert loose.nag.overall.fires > result.nag.overall.fires
    anchors = {p.producer: p.fires for p in loose.nag.producers}["workspace_anchor"]
    assert anchors > {p.producer: p.fires for p in result.nag.producers}["workspace_anchor"]
