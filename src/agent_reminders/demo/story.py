"""The demo in a few plain lines: what the agent did, and which reminders reached the model
and why (the default output of ``agent-reminders demo``; ``--verbose`` prints the timeline).

Each line groups the deliveries of one kind of event, in the order it first happened, with the
requests that carried it: ``- the agent edited code → a hook asked it to run the tests
(requests 5, 17, 18)``. Short repeats are left out: they say nothing new.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

from .run import DemoResult
from .scenario import IDLE_MS, MAX_TOOL_OUTPUT
from .timeline import Delivery

__all__ = ["WIDTH", "reminder_lines", "story_lines"]

WIDTH = 96
"""The width the story's paragraphs are wrapped to."""

_PERCENT = re.compile(r"(\d+)% of the context window")
# what the sub-agent inherited, in a few words
_INHERITED = {"host:person": "the person's note", "post_compact_recap": "the recap"}
_NAMES = {"ci": "CI"}


def _host(who: str, why: str) -> tuple[str, str]:
    who = _NAMES.get(who, who)
    if why.startswith("finish_step"):
        return who, f"the {who} sent a note while a tool ran → delivered after that step"
    if why.startswith("interrupt_immediate"):
        return who, (
            f"the {who} interrupted → shown before the next tool ran; kept after compaction"
        )
    if why == "audit_only":
        return who, f"the {who}'s note was for the record only → it never reached the model"
    return who, f"the {who} sent a note → delivered at the next step"


def _topic(d: Delivery) -> tuple[str, str] | None:
    """What kind of event ``d`` answers (the key its line groups by) and that line's words;
    ``None`` for a delivery the story leaves out."""
    label, why = d.label, d.why
    if d.repeat:
        return None
    if d.who != "agent":  # the sub-agent: only what it was handed
        if not label.startswith("inherited "):
            return None
        return "handoff", "a reviewer sub-agent started → it got"
    if label in ("project_facts", "workspace_anchor"):
        return "facts", "the session began → the model got the project's facts and folders"
    if label.startswith("host:"):
        return _host(label.removeprefix("host:"), why)
    known = {
        "tool_output_truncated": (
            f"a file read was cut at {MAX_TOOL_OUTPUT:,} characters → the model was told to "
            "read the rest"
        ),
        "grounded_review": "a test run or a tool call failed → the model was told what failed",
        "hook:run_tests": "the agent edited code → a hook asked it to run the tests",
        "token_pressure": "the context window filled up → the model was told how full",
        "post_compact_recap": "the context was nearly full → compacted; the model got a recap",
        "idle_nudge": (
            f"the person was away {IDLE_MS // 60_000} minutes → the model was asked to re-check"
        ),
        "generator:tools": "the host offered a new tool → announced to the model once",
    }
    if label in known:
        return label, known[label]
    return label, f"{label} ({why}) → a reminder"


def _where(key: str, found: list[Delivery]) -> str:
    """The requests that carried ``found``: ``(requests 3, 15)``; at session start, those of
    the first request, then ``again`` the later ones."""
    requests = sorted({d.request for d in found if d.request is not None})
    if not requests:
        return ""
    if found[0].who != "agent":
        return f" (its request {requests[0]})"
    if key == "facts" and len(requests) > 1:
        return f" (request {requests[0]}; again {', '.join(map(str, requests[1:]))})"
    return f" (request{'s' if len(requests) > 1 else ''} {', '.join(map(str, requests))})"


def _line(key: str, words: str, found: list[Delivery]) -> str:
    if key == "handoff":
        labels = dict.fromkeys(d.label.removeprefix("inherited ") for d in found)
        words += " " + " and ".join(_INHERITED.get(label, label) for label in labels)
    elif key == "token_pressure":
        shares = [m.group(1) + "%" for d in found if (m := _PERCENT.search(d.body))]
        if shares:
            words += f": {', then '.join(shares)}"
    return f"  - {words}{_where(key, found)}"


def reminder_lines(deliveries: Iterable[Delivery]) -> list[str]:
    """One line per kind of event that made a reminder reach the model, in the order each
    first happened."""
    groups: dict[str, tuple[str, list[Delivery]]] = {}
    for d in deliveries:
        topic = _topic(d)
        if topic is None:
            continue
        key, words = topic
        groups.setdefault(key, (words, []))[1].append(d)
    return [_line(key, words, found) for key, (words, found) in groups.items()]


def story_lines(result: DemoResult) -> list[str]:
    """What the run did, then what reached the model and why, in plain words.

    Example:
        >>> from agent_reminders.demo import run_demo
        >>> lines = story_lines(run_demo(turns=22))
        >>> [line for line in lines if "edited code" in line]
        ['  - the agent edited code → a hook asked it to run the tests (requests 5, 17, 18)']
    """
    who = "A scripted coding agent" if result.model == "scripted" else f"The model {result.model}"
    offline = ", offline" if result.model == "scripted" else ""
    reviewer = (
        ", and a reviewer sub-agent checked its work" if "reviewer" in result.statuses else ""
    )
    head = (
        f"{who} did two tasks on a small Python project{offline} "
        f"({len(result.requests)} requests to the model){reviewer}."
    )
    return [
        *textwrap.wrap(head, WIDTH),
        "What reached the model, and why:",
        *reminder_lines(result.deliveries),
    ]
