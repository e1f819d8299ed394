"""Quickstart: the reminder core end to end, with no model and no network.

A tiny rule-based "model" stands in for an LLM so the run is deterministic. Each turn:
producers queue reminders, ``commit_directives`` appends one envelope as a new trailing
message, the model answers, ``post_turn`` ages the reminders. At the end the successive
requests are checked with ``check_append_only``: every request begins with the previous one,
except across the compaction, which is the one sanctioned (and evented) break.

Run: python examples/quickstart.py (`make demo` runs the full demo: `agent-reminders demo`).
"""

from __future__ import annotations

import itertools

from agent_reminders import (
    EventLog,
    EventRecord,
    Message,
    Transcript,
    check_append_only,
    commit_directives,
    compact,
    inject_reminder,
    post_turn,
)

SYSTEM: Message = {"role": "system", "content": "You are a careful coding agent."}


def fake_model(messages: tuple[Message, ...]) -> Message:
    """Answer the last user text; mention directives it can see in the last message."""
    last = messages[-1]["content"]
    seen = "directives noted" if isinstance(last, str) and "<directive" in last else "no news"
    return {"role": "assistant", "content": f"Working on it ({seen}, {len(messages)} messages)."}


def show(record: EventRecord) -> None:
    """Print one lifecycle record as a timeline line."""
    p = record.payload
    kind = record.kind.rsplit(".", 1)[1]
    detail = {
        "expired": f"reason={p.get('reason')}",
        "fired": f"turn={p.get('turn_number')} authority={p.get('authority')}",
        "iteration_summary": f"{p.get('count')} directive(s), {p.get('rendered_bytes')} bytes",
        "deduped": f"replaced {p.get('replaced_ids')}",
    }.get(kind, "")
    print(f"    {kind:<18} {p.get('reminder_id', ''):<4} {detail}")


def main() -> None:
    log = EventLog(session_id="quickstart")
    log.subscribe(show, kind_prefix="transcript.reminder.")
    ids = (f"r{n}" for n in itertools.count(1))
    t = Transcript([SYSTEM], id="quickstart").append(
        {"role": "user", "content": "Fix the failing test in parser.py."}
    )
    # Turn-indexed producers: what a provider, hook or host would push before each request.
    plan: dict[int, list[dict[str, object]]] = {
        0: [
            {
                "body": "Workspace root: /src/app (read-write).",
                "dedupe_key": "workspace",
                "ttl_turns": 1,
            },
            {"body": "Never push to main without a passing test run.", "preserve_on_compact": True},
        ],
        1: [
            {
                "body": "pytest: 1 failed (test_parse_empty).",
                "authority": "corrective",
                "ttl_turns": 2,
                "dedupe_key": "grounded_review",
            }
        ],
        3: [
            {
                "body": "Context window 72% full: summarize soon.",
                "role_hint": "developer",
                "authority": "advisory",
                "ttl_turns": 2,
                "dedupe_key": "token_pressure",
            }
        ],
    }
    requests: list[list[Message]] = []
    for turn in range(6):
        print(f"turn {turn}")
        for options in plan.get(turn, []):
            print(f"    queue  {options['body']}")
            t = inject_reminder(
                t, options, fired_at_turn=turn, event_log=log, id_factory=lambda: next(ids)
            ).transcript
        if turn == 4:
            done = compact(t, keep_last=2, summary="Recap: parser fix in progress.", event_log=log)
            print(f"    compacted: {done.archived_messages} messages archived")
            t = done.transcript
        committed = commit_directives(t, turn=turn, event_log=log)
        t = committed.transcript
        requests.append(list(t.messages))  # what would be sent to the provider
        t = t.append(fake_model(t.messages))
        t = post_turn(t, turn, event_log=log).transcript
        if turn < 5:
            t = t.append({"role": "user", "content": f"Continue (step {turn + 1})."})

    print("\nlast request sent:")
    for m in requests[-1]:
        print(f"  [{m['role']}] {str(m['content'])[:96]!r}")
    breaks = check_append_only(requests)
    found = [(b.request_index, b.reason) for b in breaks]
    print(f"\n{len(requests)} requests, prefix breaks: {found}")
    assert [b.request_index for b in breaks] == [4], "only the compaction may break the prefix"
    print("append-only holds for every request except across the compaction.")


if __name__ == "__main__":
    main()
