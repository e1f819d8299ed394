"""What the provider would bill: the demo session and bench/cache.py's strategies, sent through
the Anthropic prompt-cache oracle, audited from the usage it reports.

Each request is the library's Anthropic Messages body (``to_anthropic``: its cache breakpoints
included) for ``claude-sonnet-4-5``, handed to ``agent_reminders.testing.AnthropicPromptCache``
— byte-exact prefixes, the 20-block look-back, 5-minute entries, 1,024-token minimum, one token
per 4 bytes — on a fake clock 10 s apart (no entry expires). Each ``{request, response}`` pair
is then audited as ``agent-reminders audit`` does (``audit_requests``): the provider's numbers,
every cache miss with its cause and cost at the published price (``PriceTable.default()``).

    PYTHONPATH=src:bench python bench/billed.py [--turns 200] [--seed 7]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from _results import machine, session_args, table, write_section
from agent_reminders import ModelRequest
from agent_reminders.audit import BilledReport, audit_requests
from agent_reminders.demo.run import run_demo
from agent_reminders.integrations import to_anthropic
from agent_reminders.testing import AnthropicPromptCache, FakeClock
from cache import SESSION
from strategies import LABELS, make_script, requests_for

SECTION = "What the provider would bill (`bench/billed.py`)"
MODEL = "claude-sonnet-4-5"
STRATEGIES = ("envelope", "system_prompt", "edit_history", "ephemeral_tail")
T0 = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
GAP = 10.0  # seconds between requests: well inside the 5-minute lifetime
OUTPUT = 50  # output tokens per answer (the same for every strategy)


def billed(requests: Iterable[ModelRequest]) -> BilledReport:
    """Send ``requests`` through the cache oracle and audit the pairs it answers."""
    cache = AnthropicPromptCache(clock=FakeClock())
    pairs: list[dict[str, Any]] = []
    for i, request in enumerate(requests):
        body = {"model": MODEL, "max_tokens": 1024, **to_anthropic(request)}
        usage, _ = cache.respond(body, f"msg_{i}")
        pairs.append(
            {
                "request": body,
                "response": {"model": MODEL, "usage": {**usage, "output_tokens": OUTPUT}},
                "timestamp": (T0 + timedelta(seconds=GAP * i)).isoformat(),
            }
        )
        cache.clock.advance(GAP)  # type: ignore[attr-defined]
    report = audit_requests(pairs, encoding="bytes/4").billed
    assert report is not None
    return report


def figures(report: BilledReport) -> dict[str, Any]:
    """The figures of the table (``billed`` of ``--json``, without rows)."""
    return report.to_json(rows=False)


def row(label: str, report: BilledReport) -> list[object]:
    causes = ", ".join(f"{c} ({e['misses']})" for c, e in report.by_cause().items()) or "none"
    return [
        label,
        len(report.rows),
        f"{report.read_share:.2%}",
        len(report.misses),
        causes,
        f"${report.cost:,.2f}",
        f"${report.cost - report.miss_cost:,.2f}",
        f"{report.miss_share:.1%}",
    ]


def main() -> int:
    args = session_args(__doc__ or "")

    demo = billed(run_demo().requests)
    script = make_script(args.turns, args.seed, **SESSION)
    found = {name: billed(requests_for(name, script)) for name in STRATEGIES}
    if args.json:
        out = {"demo": figures(demo), **{n: figures(r) for n, r in found.items()}}
        print(json.dumps(out, indent=1))
        return 0
    header = [
        "session",
        "requests",
        "input read from the cache",
        "misses",
        "causes",
        "cost",
        "with no miss",
        "misses' share",
    ]
    rows = [row("`agent-reminders demo` (30 turns)", demo)]
    rows += [row(LABELS[name], report) for name, report in found.items()]
    text = table(header, rows)
    print(text)
    body = f"""Every request as the library's Anthropic Messages body (`to_anthropic`, its cache \
breakpoints included) for `{MODEL}`, sent to the prompt-cache oracle \
(`agent_reminders.testing.AnthropicPromptCache`: byte-exact prefixes per model, the 20-block \
look-back, 5-minute entries, 1,024-token minimum, one token per 4 bytes) {GAP:.0f} s apart on a \
fake clock, then audited from the usage it reported (`audit_requests` on the \
`{{request, response}}` pairs, as `agent-reminders audit` does), at the published price \
(${3:.2f} per million input tokens, reads 0.1x, writes 1.25x; {OUTPUT} output tokens per \
answer). The demo session; then bench/cache.py's session ({args.turns} turns, seed \
{args.seed}) under four strategies. Deterministic: the same figures on every run. Machine: \
{machine()}.

{text}

The demo's one miss is its compaction (the conversation shrinks to the recap: the one break a \
long session should have). Rewriting the system prompt misses on every turn a reminder \
changes it; editing earlier messages (removing expired reminders) misses where the edit falls; \
an ephemeral trailing injection re-writes its tail on every request."""
    write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
