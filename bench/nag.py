"""The nag rate of a long coding-agent session, with the library's restraint and without.

One seeded script fixes a 200-turn session: the agent reads files (some outputs cut short),
edits, runs the tests (failing for a few runs with fewer failures each time, then passing),
updates its to-do list now and then; the context grows until it is compacted. The session is
driven the way ``agent_loop`` drives it — ``session_start``, then per turn ``prepare_request``,
the assistant's tool call, ``on_budget_threshold`` with the prompt's size, the tool result and
``post_tool_use``, ``post_step``, ``post_turn`` — with every canonical provider, a workspace
anchor, ``goal_anchor`` and a user to-do provider that reminds the agent to update its list
after 3 turns without it:

``with restraint``
    The defaults (``restraint=True``): the canonical providers' cadences, ``grounded_review``'s
    resolution, the directive budget; the to-do provider resolves its reminder when the list
    is updated and sets ``cooldown_turns=5``.
``without restraint``
    ``restraint=False``; the to-do provider reminds on every step past 3 turns.

Both are measured side by side in one run with ``nag_from_events`` (the event log) and checked
against the targets: no key fires twice within 5 turns with an unchanged body, directives are at
most 3 % of the final prompt, and every canonical provider's fire is traced to the provider
evaluation (event and turn) that made it.

    TIKTOKEN_CACHE_DIR=<tiktoken cache> PYTHONPATH=src:bench python bench/nag.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from _results import machine, session_args, table, write_section
from agent_reminders import Session
from agent_reminders.audit import NagReport, load_tokenizer, nag_from_events
from agent_reminders.demo.run import run_demo
from agent_reminders.providers import CANONICAL_PROVIDERS
from agent_reminders.testing import assistant, tool_call

SECTION = "The nag rate, with restraint and without (`bench/nag.py`)"
WINDOW = 128_000  # the model's context window, in tokens
COMPACT_AT = 0.85
SYSTEM = "You are a coding agent working in /srv/calc."
GOAL = "Port the expression parser in src/calc/parser.py to the new grammar in docs/grammar.md."
FAST = 5  # the target: no key twice within 5 turns with an unchanged body
TARGET_SHARE = 0.03


def _tokens(text: str) -> int:
    return (len(text.encode()) + 3) // 4


def _prompt_tokens(session: Session) -> int:
    return _tokens(session.system or "") + sum(
        _tokens(json.dumps(m, ensure_ascii=False)) for m in session.transcript.request_messages()
    )


class _Todo:
    """A user provider: remind to update the to-do list after 3 turns without an update."""

    def __init__(self, restraint: bool) -> None:
        self.restraint = restraint
        self.updated_at = 0

    def evaluate(self, ctx: Any) -> Any:
        if ctx.event == "post_tool_use" and ctx.payload.get("tool_name") == "TodoWrite":
            self.updated_at = ctx.turn
            return (
                {"resolved": "todo", "body": "The to-do list is up to date."}
                if self.restraint
                else None
            )
        if ctx.event != "post_step" or ctx.turn - self.updated_at < 3:
            return None
        todo = {"body": "Update the to-do list with what is done and what is next.", "ttl_turns": 1}
        todo["dedupe_key"] = "todo"
        return {**todo, "cooldown_turns": 5} if self.restraint else todo


_WORDS = ("def", "return", "self", "parser", "token", "grammar", "value", "node", "import", "for")
READ_CUT = 30_000  # characters: longer tool output is cut short


def _script(turns: int, seed: int) -> list[dict[str, Any]]:
    """Per turn: the tool call and its result (the same for both sessions)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    failing = 0
    for turn in range(turns):
        roll = rng.random()
        if turn % 9 == 8:
            out.append({"tool_name": "TodoWrite", "command": None, "content": "ok", "ok": True})
        elif roll < 0.25 or failing:
            if failing == 0 and rng.random() < 0.4:
                failing = rng.randint(1, 3)
            lines = [
                f"FAILED tests/test_parser.py::test_case_{i} - assert {i} == {i + 1}"
                for i in range(failing)
            ]
            summary = (
                f"{failing} failed, {40 - failing} passed in 0.42s"
                if failing
                else "40 passed in 0.40s"
            )
            out.append(
                {
                    "tool_name": "Bash",
                    "command": "pytest -q",
                    "content": "\n".join([*lines, summary]),
                    "ok": not failing,
                }
            )
            failing = max(0, failing - 1)
        elif roll < 0.55:
            size = rng.randint(4_000, 40_000)  # a source file, a log, a listing
            cut = size > READ_CUT
            words = (rng.choice(_WORDS) for _ in range(min(size, READ_CUT) // 6))
            content = " ".join(words)
            out.append(
                {
                    "tool_name": "Read",
                    "command": None,
                    "content": content,
                    "ok": True,
                    "truncated": cut,
                    "original_size": size * 4 if cut else size,
                }
            )
        else:
            out.append(
                {
                    "tool_name": "Edit",
                    "command": None,
                    "content": "The file was updated.",
                    "ok": True,
                }
            )
    return out


@dataclass
class Run:
    """One session of the script and its nag figures."""

    label: str
    report: NagReport
    fast_unchanged: int
    justified: tuple[int, int]


class _Driven:
    """A session driven through the script, with each reminder's body as it was queued."""

    def __init__(self, script: list[dict[str, Any]], restraint: bool) -> None:
        options = {
            "restraint": restraint,
            "providers": ["goal_anchor"],
            "config": {
                "token_pressure": {"context_window": WINDOW},
                "goal_anchor": {"goal": GOAL},
            },
        }
        workspace = {"primary": "/srv/calc", "roots": []}
        self.session = Session("nag", system=SYSTEM, workspace=workspace, reminders=options)
        todo = _Todo(restraint)
        self.session.providers.register(
            "todo", subscribes_to=["post_tool_use", "post_step"], evaluate=todo.evaluate
        )
        self.bodies: dict[str, str] = {}
        self.final_prompt = 0
        self._run(script)

    def _fire(self, event: str, payload: Mapping[str, Any] | None = None) -> None:
        self.session.fire(event, payload)
        self.bodies.update((r.id, r.body) for r in self.session.transcript.reminders)

    def _run(self, script: list[dict[str, Any]]) -> None:
        session = self.session
        session.append({"role": "user", "content": GOAL})
        self._fire("session_start")
        for turn, step in enumerate(script):
            request = session.prepare_request(turn=turn)
            call = tool_call(f"call_{turn}", step["tool_name"], command=step["command"])
            session.append(assistant(f"Step {turn}.", tool_calls=[call]))
            used = _prompt_tokens(session)
            usage = {"input_tokens": used, "output_tokens": 20}
            self._fire("on_budget_threshold", {"usage": usage, "context_window": WINDOW})
            session.append(
                {"role": "tool", "tool_call_id": f"call_{turn}", "content": step["content"]}
            )
            result = {
                k: step[k] for k in ("content", "ok", "truncated", "original_size") if k in step
            }
            payload = {"tool_name": step["tool_name"], "command": step["command"], "result": result}
            payload["arguments"] = {"command": step["command"]}
            self._fire("post_tool_use", payload)
            # as the loop sends it: the calls, without their results
            call_only = {k: payload[k] for k in ("tool_name", "arguments", "command")}
            self._fire("post_step", {"iteration": turn, "tool_calls": [call_only]})
            session.post_turn(request.turn)
            if used > COMPACT_AT * WINDOW:
                session.compact(keep_last=6, summary=f"Work on the parser up to step {turn}.")
            session.append({"role": "user", "content": "Go on."})
        self.final_prompt = _final_prompt(session.prepare_request(turn=len(script)))


def _final_prompt(request: Any) -> int:
    """The final request's tokens (o200k_base, else one per 4 bytes)."""
    tokenizer = load_tokenizer("o200k_base")
    parts = [request.system or ""] + [json.dumps(m, ensure_ascii=False) for m in request.messages]
    return sum(len(tokenizer.encode(part)) for part in parts)


def _fast_unchanged(records: list[Any], bodies: Mapping[str, str]) -> int:
    """Fires of a key less than ``FAST`` turns after its previous fire, with the same body and
    no resolution of the key in between (a failure that comes back after a pass is news)."""
    keys = {
        r.payload["reminder_id"]: r.payload.get("dedupe_key")
        for r in records
        if r.kind == "transcript.reminder.injected"
    }
    last: dict[str, tuple[int, str]] = {}
    count = 0
    for r in records:
        if r.kind == "transcript.reminder.expired" and r.payload["reason"] == "resolved":
            last.pop(keys.get(r.payload["reminder_id"]) or "", None)
        if r.kind != "transcript.reminder.fired":
            continue
        rid, turn = r.payload["reminder_id"], r.payload["turn_number"]
        key, body = keys.get(rid), bodies.get(rid, "")
        if key is None:
            continue
        before = last.get(key)
        if before is not None and turn - before[0] < FAST and before[1] == body:
            count += 1
        last[key] = (turn, body)
    return count


def _justified(records: list[Any], canonical: set[str]) -> tuple[int, int]:
    """(canonical fires traced to the evaluation that made them, canonical fires)."""
    made_by: dict[str, str] = {}
    evaluation: str | None = None  # the provider evaluated last (a resolution's note comes after)
    for r in records:
        if r.kind == "transcript.reminder.provider_evaluated":
            evaluation = r.payload["provider_id"]
        elif r.kind == "transcript.reminder.injected" and r.payload["source"] == "stdlib_provider":
            made_by[r.payload["reminder_id"]] = evaluation or "unknown"
    fires = [
        r.payload["reminder_id"]
        for r in records
        if r.kind == "transcript.reminder.fired" and r.payload["source"] == "stdlib_provider"
    ]
    ours = [rid for rid in fires if made_by.get(rid) in canonical or rid not in made_by]
    traced = [rid for rid in ours if made_by.get(rid) in canonical]
    return len(traced), len(ours)


def measure(label: str, driven: _Driven, model_calls: int) -> Run:
    records = list(driven.session.event_log.records)
    report = nag_from_events(records, model_calls=model_calls, prompt_tokens=driven.final_prompt)
    canonical = {p.id for p in CANONICAL_PROVIDERS}
    return Run(
        label, report, _fast_unchanged(records, driven.bodies), _justified(records, canonical)
    )


def _row(run: Run) -> list[object]:
    o = run.report.overall
    share = "n/a" if o.directive_share is None else f"{o.directive_share:.2%}"
    busiest = sorted(run.report.producers, key=lambda p: -p.fires)[:4]
    top = ", ".join(f"{p.producer} {p.fires_per_100_calls:.0f}" for p in busiest)
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(o.dropped.items())) or "none"
    traced, fires = run.justified
    return [
        run.label,
        f"{o.fires_per_100_calls:.1f}",
        top,
        f"{o.requests_with_directive_share:.0%}",
        share,
        o.repeats,
        run.fast_unchanged,
        dropped,
        f"{traced}/{fires}",
    ]


def main() -> int:
    args = session_args(__doc__ or "")

    script = _script(args.turns, args.seed)
    runs = [
        measure("with restraint (default)", _Driven(script, True), args.turns + 1),
        measure("without restraint", _Driven(script, False), args.turns + 1),
    ]
    demo = [
        Run(f"demo, {label}", result.nag, 0, (0, 0))
        for label, result in (
            ("with restraint", run_demo()),
            ("without restraint", run_demo(restraint=False)),
        )
    ]
    if args.json:
        print(json.dumps({r.label: r.report.to_json() for r in [*runs, *demo]}, indent=1))
        return 0
    header = [
        "session",
        "fires / 100 calls",
        "top producers (fires / 100 calls)",
        "requests with a directive",
        "directives in the final prompt",
        "repeats of a key",
        f"same body again within {FAST} turns",
        "dropped",
        "canonical fires traced",
    ]
    text = table(header, [_row(r) for r in runs])
    demo_text = table(header[:6], [_row(r)[:6] for r in demo])
    print(text)
    print(demo_text)
    ours = runs[0]
    share = ours.report.overall.directive_share or 0.0
    verdict = (
        f"Targets on the {args.turns}-turn session with the defaults: the same key with the same "
        f"body again within {FAST} turns {ours.fast_unchanged} time(s) (target 0; not counted: "
        "a repeat after the key was resolved); directives "
        f"{share:.2%} of the final prompt (target ≤ {TARGET_SHARE:.0%}); canonical fires traced "
        f"to the provider evaluation that made them: {ours.justified[0]} of {ours.justified[1]}."
    )
    print(verdict)
    intro = (
        f"The seeded {args.turns}-turn coding-agent session of `bench/nag.py` (seed {args.seed}: "
        "reads of 4,000-40,000 characters, cut at 30,000; edits; test runs, now and then failing "
        "for one to three runs, then passing; a to-do list updated every 9 turns; compaction at "
        f"{COMPACT_AT:.0%} of a {WINDOW:,}-token window), driven as `agent_loop` drives a "
        "session, with every canonical provider, a workspace anchor, `goal_anchor` and a user "
        "to-do provider; measured from the event log (`nag_from_events`), both in one run. "
        f"Machine: {machine()}."
    )
    demo_intro = (
        "The demo (`agent-reminders demo`, 30 turns, a 6,400-token window: its directive share "
        "is large because the session is tiny), the same two ways:"
    )
    note = (
        "The one same-body repeat with restraint is a test failure that came back four turns "
        "after a passing run, once the review of it had expired (nothing pending to resolve): "
        "news again, but the same text. Dropped fires are recorded events, never sent: most are "
        "`workspace_anchor` and `project_facts` refreshes and `token_pressure` at a level it "
        "already stated."
    )
    body = "\n\n".join([intro, text, verdict, note, demo_intro, demo_text])
    write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
