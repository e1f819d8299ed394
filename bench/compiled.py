"""What the generated functions buy: each beside its plain reference version, in one run.

The library compiles a few hot functions from source at import (``_core/_compiled.py``): the
``__init__`` of its ``fast_init`` records and the field checks of the reminder table. Each has a
plain reference version (a loop over the same table) that specifies it and that the property
tests hold it to. Here both run on the same inputs, alternating, round after round; per
function we keep the lowest time per call over the rounds (on a shared machine noise only adds
time) and report generated ÷ reference. The ``__init__`` rows call the function on an existing
record (what a constructor call adds is the same for both); the ``check_record`` rows copy the
values first (it checks in place), in both.

Run: python bench/compiled.py [--rounds 7] [--number 20000] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import RESULTS, machine, table, write_section
from agent_reminders import EventRecord, ModelRequest, Reminder, ToolResult
from agent_reminders._core._compiled import Generated, generated
from agent_reminders._core.fields import (
    Authority,
    _given,
    _parse_options,
    _payload_fields,
    check_record,
    parse_reminder_options,
)
from agent_reminders.providers import ProviderContext


def _init_case(cls: type, *args: Any, **kwargs: Any) -> tuple[Generated, Callable[..., Any]]:
    entry = generated(cls.__init__)
    record = cls(*args, **kwargs)
    return entry, lambda f: f(record, *args, **kwargs)


def _cases() -> list[tuple[str, Generated, Callable[[Callable[..., Any]], Any]]]:
    stored = dict(Reminder(id="r1", body="Run tests", tags=("tests",)).__dict__)
    wire = {
        **stored,
        "tags": ["tests", "ci"],
        "authority": "advisory",
        "propagate": "all",
        "ttl_turns": 3,
    }
    options = {"body": "Run tests", "tags": ["tests"], "authority": "advisory", "ttl_turns": 2}
    parsed = parse_reminder_options(options)
    payload = {"body": "Run tests", "tags": ["tests"], "dedupe_key": "k", "authority": "advisory"}
    context = {
        "session_id": "s",
        "turn": 1,
        "messages": [],
        "event": None,
        "tool_name": None,
        "tool_input": None,
        "tool_result": None,
    }
    cases: list[tuple[str, Generated, Callable[[Callable[..., Any]], Any]]] = [
        ("`EventRecord.__init__` (4 fields)", *_init_case(EventRecord, 1, "t", "k", {})),
        ("`ToolResult.__init__` (1 given, 2 defaults)", *_init_case(ToolResult, "out")),
        (
            "`ModelRequest.__init__` (5 given, defaults)",
            *_init_case(ModelRequest, system="s", messages=[], tools=[], session_id="x", turn=0),
        ),
        (
            "`ProviderContext.__init__`",
            *_init_case(ProviderContext, **_context_arguments(context)),
        ),
        (
            "`check_record`, stored values (a copy, then the checks)",
            generated(check_record),
            lambda f: f(dict(stored)),
        ),
        (
            "`check_record`, wire values (a copy, then the checks)",
            generated(check_record),
            lambda f: f(dict(wire)),
        ),
        ("option parser (body, tags, authority, ttl_turns)", generated(_parse_options), None),
        ("`ParsedOptions.given`", generated(_given), lambda f: f(parsed)),
        (
            "payload checks (body, tags, dedupe_key, authority)",
            generated(_payload_fields),
            lambda f: f(payload, Authority.CONTRACT, 16384),
        ),
    ]
    return [
        (label, entry, call if call is not None else (lambda f: f(options)))
        for label, entry, call in cases
    ]


def _context_arguments(candidates: dict[str, Any]) -> dict[str, Any]:
    """The required arguments of ``ProviderContext`` (whatever they are in this tree)."""
    import dataclasses

    out: dict[str, Any] = {}
    for f in dataclasses.fields(ProviderContext):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            out[f.name] = candidates.get(f.name)
    return out


def measure(rounds: int, number: int) -> list[dict[str, Any]]:
    rows = []
    for label, entry, call in _cases():
        best = {"generated": float("inf"), "reference": float("inf")}
        for _ in range(rounds):
            for side, function in (("generated", entry.function), ("reference", entry.reference)):
                seconds = timeit.timeit(lambda f=function, c=call: c(f), number=number)
                best[side] = min(best[side], seconds / number * 1e6)
        rows.append(
            {
                "function": label,
                "generated_us": best["generated"],
                "reference_us": best["reference"],
                "ratio": best["generated"] / best["reference"],
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = measure(args.rounds, args.number)
    if args.json:
        print(json.dumps(rows))
    body = "\n\n".join(
        [
            f"Machine: {machine()}. Each generated function beside its plain reference version "
            f"(`_core/_compiled.py`), alternating; the lowest µs per call over {args.rounds} "
            f"rounds of {args.number:,} calls each.",
            table(
                ("function", "generated µs", "reference µs", "generated ÷ reference"),
                [
                    (
                        r["function"],
                        f"{r['generated_us']:.3f}",
                        f"{r['reference_us']:.3f}",
                        f"{r['ratio']:.2f}",
                    )
                    for r in rows
                ],
            ),
        ]
    )
    if not args.json:
        print(body)
    write_section("Generated code beside its reference (`bench/compiled.py`)", body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
