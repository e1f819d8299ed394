"""The cache chain from the provider's own numbers (docs/audit.md, "What the provider billed").

Each model request, as its provider billed it, is a :class:`Call`: the input tokens read from
the prompt cache, written to it and paid uncached, the output tokens, the model and when it
was sent. Requests of one conversation form a **chain** (a session's main conversation, or one
sub-agent's); :func:`analyze` walks each chain and finds every **miss**:

- Anthropic: a request should read what the one before it left in the cache (its read + its
  write); a read below that is a miss.
- OpenAI: a request should read the one before it, in 128-token steps from 1,024 tokens; a
  read below that is a miss.
- A sub-agent's first request starts cold: it cannot read its parent's cache, so what it
  writes (Anthropic) or pays uncached (OpenAI) is a miss of its own cause.

Each miss gets one cause — from the timeline first (compaction, a model switch, an idle gap past
the cache's lifetime), then the provider's own ``cache_miss_reason``, then the request bodies
where they are known (tools, system, the first earlier message that changed, with a short diff;
a changed message carrying a reminder or a hook's context is ``reminder_changed``), then what a
transcript says changed, and otherwise, honestly, ``unexplained`` — and its cost: the tokens that
were not read, priced at what they cost over a read.

Example:
    >>> calls = [Call(index=0, provider="anthropic", uncached=10, read=0, written=5000),
    ...          Call(index=1, provider="anthropic", uncached=10, read=5000, written=40),
    ...          Call(index=2, provider="anthropic", uncached=10, read=0, written=5060)]
    >>> report = analyze(calls)
    >>> [(m.request, m.cause, m.tokens) for m in report.misses]
    [(2, 'unexplained', 5040)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .breaks import first_difference
from .cache_models import DIRECTIVE_MARKERS, OPENAI_MIN_TOKENS, OPENAI_STEP
from .prices import Price, PriceTable
from .readers import PromptSequence, canonical_json

__all__ = [
    "CAUSES",
    "HOOK_MARKERS",
    "TTL_SECONDS",
    "BilledReport",
    "BilledRow",
    "Call",
    "Cause",
    "Miss",
    "Provider",
    "analyze",
    "readable",
    "short_diff",
]

Provider = Literal["anthropic", "openai"]
Cause = Literal[
    "compaction",
    "model_changed",
    "idle_gap",
    "tools_changed",
    "system_changed",
    "message_changed",
    "reminder_changed",
    "subagent_cold_start",
    "previous_message_not_found",
    "unexplained",
]
CAUSES: Mapping[Cause, str] = {
    "compaction": "the conversation was compacted: the old turns were replaced by a summary",
    "model_changed": "the model changed: a cache belongs to one model",
    "idle_gap": "the pause before the request outlived the cache entry",
    "tools_changed": "the tools differ from the previous request's",
    "system_changed": "the system prompt differs from the previous request's",
    "message_changed": "an earlier message was changed, removed or inserted",
    "reminder_changed": "an earlier message carrying a reminder or a hook's context changed",
    "subagent_cold_start": "a sub-agent's first request: it cannot read its parent's cache",
    "previous_message_not_found": "the provider no longer knew the previous request",
    "unexplained": "nothing in the input explains it",
}
"""Every cause, in the order they are tried, with what it means in plain words."""

TTL_SECONDS: Mapping[str, int] = {"5m": 300, "1h": 3600}
"""How long a cache entry lives after its last use: Anthropic's two lifetimes (OpenAI keeps a
prefix 5 to 10 minutes idle; the audit uses 5)."""

# the provider's cache_miss_reason → the audit's cause
_PROVIDER_CAUSES: Mapping[str, Cause] = {
    "model_changed": "model_changed",
    "system_changed": "system_changed",
    "tools_changed": "tools_changed",
    "messages_changed": "message_changed",
    "previous_message_not_found": "previous_message_not_found",
}
_BODY_CAUSES: Mapping[str, Cause] = {
    "tools_changed": "tools_changed",
    "system_changed": "system_changed",
    "message_changed": "message_changed",
    "messages_removed": "message_changed",
    "channel_downgraded": "message_changed",
}
HOOK_MARKERS: tuple[str, ...] = (*DIRECTIVE_MARKERS, "hook additional context")
"""A changed message holding one of these was a reminder or a hook's context: the cause is
``reminder_changed``."""
_SNIPPET = 40


@dataclass(frozen=True, slots=True)
class Call:
    """One model request as its provider billed it.

    Attributes:
        index: Its position in the input, from 0.
        provider: ``anthropic`` (reads, writes and uncached input are separate figures) or
            ``openai`` (input tokens include the cached ones; nothing is billed for a write).
        uncached: Input tokens neither read from the cache nor written to it.
        read: Input tokens read from the cache.
        written: Input tokens written to the cache (both lifetimes).
        written_1h: Of ``written``, those written to 1-hour entries.
        output: Output tokens.
        model: The model's name as the provider reported it.
        timestamp: When the request was sent (or answered), when the input says.
        session: The conversation's session id, when the input has one.
        agent: A sub-agent's id; ``None`` for the session's main conversation.
        source: The file it was read from.
        line: The line of that file.
        provider_reason: The provider's own ``cache_miss_reason`` (Anthropic's cache
            diagnostics), when it sent one.
        compacted: A compaction happened in this conversation since its previous request.
        changed: What the input itself says changed since the previous request, as a cause
            and its detail (a Claude Code transcript: the CLI's version changed, so did its
            system prompt; how a compaction was triggered).
        body: The request body, when the input has it.
    """

    index: int
    provider: Provider
    uncached: int
    read: int
    written: int = 0
    written_1h: int = 0
    output: int = 0
    model: str | None = None
    timestamp: datetime | None = None
    session: str | None = None
    agent: str | None = None
    source: str | None = None
    line: int | None = None
    provider_reason: str | None = None
    compacted: bool = False
    changed: tuple[Cause, str] | None = None
    body: PromptSequence | None = None

    @property
    def prompt(self) -> int:
        """All input tokens of the request."""
        return self.uncached + self.read + self.written

    def cost(self, price: Price | None) -> float | None:
        """What the request cost in US dollars at ``price`` (``None``: not priced)."""
        if price is None:
            return None
        return price.cost(
            uncached=self.uncached,
            read=self.read,
            written_5m=self.written - self.written_1h,
            written_1h=self.written_1h,
            output=self.output,
        )


@dataclass(frozen=True, slots=True)
class Miss:
    """A request that read less from the cache than it could have.

    Attributes:
        request: The request's index in the input.
        cause: Why (see :data:`CAUSES`).
        detail: The evidence in a few words (the gap, the models, the message and a diff).
        tokens: Input tokens that were not read from the cache and could have been.
        cost: What those tokens cost over a read, in US dollars (``None``: not priced).
        provider_reason: The provider's own ``cache_miss_reason``, when it sent one.
        message: The first earlier message that changed (from 0 after the system prompt;
            ``-1`` for the tools or the system prompt), when the bodies tell.
    """

    request: int
    cause: Cause
    detail: str
    tokens: int
    cost: float | None
    provider_reason: str | None = None
    message: int | None = None


@dataclass(frozen=True, slots=True)
class BilledRow:
    """One request with what it should have read and what it cost.

    Attributes:
        call: The request as billed.
        expected_read: What it should have read (``None``: the first of its conversation).
        cost: Its cost in US dollars (``None``: the model is not in the price table).
        miss: The miss at this request, if any.
        predicted_read: What the request-side simulation predicted it would read (the
            ``anthropic`` cache model for an Anthropic request, ``openai`` for an OpenAI one),
            when the request body is known.
    """

    call: Call
    expected_read: int | None
    cost: float | None
    miss: Miss | None = None
    predicted_read: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as in ``billed.rows`` of the ``--json`` object."""
        call = self.call
        return {
            "request": call.index,
            "line": call.line,
            "session": call.session,
            "agent": call.agent,
            "model": call.model,
            "timestamp": None if call.timestamp is None else _iso(call.timestamp),
            "read": call.read,
            "written": call.written,
            "uncached": call.uncached,
            "output": call.output,
            "expected_read": self.expected_read,
            "predicted_read": self.predicted_read,
            "cost": _money(self.cost),
            "miss": None if self.miss is None else self.miss.cause,
        }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True, slots=True)
class BilledReport:
    """The provider's numbers of every request, and every miss with its cause and cost."""

    rows: tuple[BilledRow, ...]
    provider: Provider
    unpriced: tuple[str, ...] = ()

    @property
    def misses(self) -> tuple[Miss, ...]:
        """Every miss, in request order."""
        return tuple(r.miss for r in self.rows if r.miss is not None)

    def total(self, field: str) -> int:
        """A token figure (``read``, ``written``, ``uncached``, ``output``, ``prompt``) summed
        over requests."""
        return sum(int(getattr(r.call, field)) for r in self.rows)

    @property
    def read_share(self) -> float:
        """Input tokens read from the cache ÷ all input tokens."""
        prompt = self.total("prompt")
        return self.total("read") / prompt if prompt else 0.0

    @property
    def cost(self) -> float:
        """What the requests cost in US dollars (priced models only)."""
        return sum(r.cost for r in self.rows if r.cost is not None)

    @property
    def miss_cost(self) -> float:
        """What the misses cost over reads, in US dollars."""
        return sum(m.cost for m in self.misses if m.cost is not None)

    @property
    def miss_share(self) -> float:
        """``miss_cost`` ÷ ``cost``: the share of the bill the misses are."""
        return self.miss_cost / self.cost if self.cost else 0.0

    def fails(
        self,
        *,
        max_misses: int | None = None,
        max_share: float | None = None,
        ignore: frozenset[str] = frozenset(),
    ) -> bool:
        """Whether the misses (those of a cause not in ``ignore``) exceed the limits: more
        than ``max_misses`` of them, or costing more than ``max_share`` of the bill; with
        neither limit, any miss.

        Example:
            >>> calls = [Call(index=0, provider="openai", uncached=2048, read=0),
            ...          Call(index=1, provider="openai", uncached=2100, read=0)]
            >>> report = analyze(calls)
            >>> report.fails(), report.fails(max_misses=1), report.fails(ignore={"unexplained"})
            (True, False, False)
        """
        counted = [m for m in self.misses if m.cause not in ignore]
        if max_misses is None and max_share is None:
            return bool(counted)
        share = sum(m.cost or 0.0 for m in counted) / self.cost if self.cost else 0.0
        return (max_misses is not None and len(counted) > max_misses) or (
            max_share is not None and share > max_share
        )

    def by_cause(self) -> dict[Cause, dict[str, Any]]:
        """Per cause (the ones found, the costliest first): misses, tokens and cost."""
        found: dict[Cause, dict[str, Any]] = {}
        for miss in self.misses:
            entry = found.setdefault(miss.cause, {"misses": 0, "tokens": 0, "cost": 0.0})
            entry["misses"] += 1
            entry["tokens"] += miss.tokens
            entry["cost"] += miss.cost or 0.0
        ranked = sorted(found.items(), key=lambda kv: (-kv[1]["cost"], -kv[1]["tokens"]))
        return {cause: {**v, "cost": _money(v["cost"])} for cause, v in ranked}

    def by_session(self) -> dict[str, dict[str, Any]]:
        """Per session (its sub-agents included), in order of first request: requests,
        misses, the read share and the cost."""
        found: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            name = row.call.session or "(no session id)"
            entry = found.setdefault(
                name, {"requests": 0, "misses": 0, "read": 0, "prompt": 0, "cost": 0.0}
            )
            entry["requests"] += 1
            entry["misses"] += row.miss is not None
            entry["read"] += row.call.read
            entry["prompt"] += row.call.prompt
            entry["cost"] += row.cost or 0.0
        return {
            name: {
                "requests": e["requests"],
                "misses": e["misses"],
                "read_share": round(e["read"] / e["prompt"], 4) if e["prompt"] else 0.0,
                "cost": _money(e["cost"]),
            }
            for name, e in found.items()
        }

    def to_json(self, *, rows: bool = True) -> dict[str, Any]:
        """The ``billed`` object of ``--json`` (docs/audit.md, "What the provider billed")."""
        calls = {r.call.index: r.call for r in self.rows}
        out: dict[str, Any] = {
            "provider": self.provider,
            "requests": len(self.rows),
            "tokens": {
                "read": self.total("read"),
                "written": self.total("written"),
                "uncached": self.total("uncached"),
                "output": self.total("output"),
            },
            "read_share": round(self.read_share, 4),
            "cost": {
                "actual": _money(self.cost),
                "without_misses": _money(self.cost - self.miss_cost),
                "misses": _money(self.miss_cost),
                "miss_share": round(self.miss_share, 4),
                "unpriced_models": list(self.unpriced),
            },
            "misses": [_miss_json(calls[m.request], m) for m in self.misses],
            "causes": self.by_cause(),
            "sessions": self.by_session(),
        }
        if rows:
            out["rows"] = [r.to_json() for r in self.rows]
        return out


def _miss_json(call: Call, miss: Miss) -> dict[str, Any]:
    return {
        "request": miss.request,
        "line": call.line,
        "source": call.source,
        "session": call.session,
        "agent": call.agent,
        "model": call.model,
        "cause": miss.cause,
        "detail": miss.detail,
        "tokens": miss.tokens,
        "cost": _money(miss.cost),
        "provider_reason": miss.provider_reason,
        "message": miss.message,
    }


def _floor_step(tokens: int) -> int:
    return 0 if tokens < OPENAI_MIN_TOKENS else tokens // OPENAI_STEP * OPENAI_STEP


def _expected(previous: Call, call: Call) -> int:
    if call.provider == "anthropic":
        return min(previous.read + previous.written, call.prompt)
    return min(_floor_step(previous.prompt), _floor_step(call.prompt))


def _miss_cost(call: Call, tokens: int, price: Price | None) -> float | None:
    """The extra paid because ``tokens`` were written or sent uncached instead of read."""
    if price is None:
        return None
    written = min(tokens, call.written)
    one_hour = min(written, call.written_1h)
    units = (
        (written - one_hour) * (price.write_5m - price.read)
        + one_hour * (price.write_1h - price.read)
        + (tokens - written) * (1.0 - price.read)
    )
    return units * price.input / 1_000_000


def readable(message: Any) -> str:
    """A message as a person reads it, for a diff: its text (the text blocks joined), else
    its canonical JSON.

    Example:
        >>> readable({"role": "user", "content": [{"type": "text", "text": "a\\nb"}]})
        'a\\nb'
    """
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, Mapping)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n".join(str(t) for t in texts)
    return canonical_json(message)


def short_diff(old: str, new: str) -> str:
    """The first difference of two texts, with a little context on each side."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    head = max(0, start - _SNIPPET // 2)

    def cut(text: str) -> str:
        piece = text[head : start + _SNIPPET]
        return ("…" if head else "") + piece + ("…" if start + _SNIPPET < len(text) else "")

    return f"{cut(old)!r} → {cut(new)!r}"


def _from_bodies(old: PromptSequence, new: PromptSequence) -> tuple[Cause, str, int] | None:
    found = first_difference(old, new)
    if found is None:
        return None
    message, reason = found
    cause = _BODY_CAUSES[reason]
    if len(new.messages) < len(old.messages):  # compacted (or truncated): what else changed
        shrank = f"the conversation shrank from {len(old.messages)} to {len(new.messages)} messages"
        also = {"tools_changed": "; the tools changed too", "system_changed": "; so did the system"}
        return "compaction", shrank + also.get(reason, ""), message
    if reason == "tools_changed":
        return cause, "the tools changed", -1
    if reason == "system_changed":
        texts = ["".join(p.text for p in s.system) for s in (old, new)]
        return cause, f"the system prompt changed: {short_diff(*texts)}", -1
    if reason == "messages_removed":
        return cause, f"messages from {message} on were removed", message
    before = old.messages[message].text
    after = new.messages[message].text if message < len(new.messages) else ""
    if any(marker in text for marker in HOOK_MARKERS for text in (before, after)):
        cause = "reminder_changed"
    before = readable(old.messages[message].value)
    after = readable(new.messages[message].value) if message < len(new.messages) else ""
    what = "sent as a user message" if reason == "channel_downgraded" else "changed"
    return cause, f"message {message} {what}: {short_diff(before, after)}", message


def _cause(previous: Call, call: Call, ttl: int) -> tuple[Cause, str, int | None]:
    """The cause of a miss at ``call``, ``previous`` being its conversation's request before."""
    if call.compacted:
        said = call.changed[1] if call.changed and call.changed[0] == "compaction" else None
        return "compaction", said or "compacted since the previous request", None
    if previous.model and call.model and previous.model != call.model:
        return "model_changed", f"{previous.model} → {call.model}", None
    if previous.timestamp is not None and call.timestamp is not None:
        gap = (call.timestamp - previous.timestamp).total_seconds()
        if gap > ttl:
            return "idle_gap", f"idle {_duration(gap)}, the cache lives {_duration(ttl)}", None
    reason = call.provider_reason
    found = None
    if previous.body is not None and call.body is not None:
        found = _from_bodies(previous.body, call.body)
    if reason is not None and reason in _PROVIDER_CAUSES:
        cause = _PROVIDER_CAUSES[reason]
        same = {cause, "reminder_changed"} if cause == "message_changed" else {cause}
        if found is not None and found[0] in same:
            return found  # the bodies agree, and name the message with a diff
        return cause, f"the provider says {reason}", None
    if found is not None:
        return found
    if call.changed:
        return call.changed[0], call.changed[1], None
    said = f" (the provider says {reason})" if reason else ""
    return "unexplained", f"the prompt read less than the previous request cached{said}", None


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def analyze(
    calls: Iterable[Call],
    prices: PriceTable | None = None,
    *,
    predicted: Mapping[int, int] | None = None,
) -> BilledReport:
    """Walk each conversation's chain of requests and find every miss, its cause and cost.

    Args:
        calls: The requests in the order they were sent (conversations may interleave:
            a request is compared with the previous one of its session and agent).
        prices: The price table (default: :meth:`PriceTable.default`).
        predicted: Per request index, the read the request-side simulation predicted.
    """
    table = PriceTable.default() if prices is None else prices
    predicted = predicted or {}
    last: dict[tuple[str | None, str | None], Call] = {}
    lifetimes: dict[tuple[str | None, str | None], int] = {}
    rows: list[BilledRow] = []
    unpriced: dict[str, None] = {}
    providers: dict[Provider, int] = {}
    for call in calls:
        providers[call.provider] = providers.get(call.provider, 0) + 1
        price = table.lookup(call.model)
        if price is None:
            unpriced[call.model or "(no model named)"] = None
        key = (call.session, call.agent)
        previous = last.get(key)
        ttl = lifetimes.get(key, TTL_SECONDS["5m"])
        last[key] = call
        if call.written:
            lifetimes[key] = TTL_SECONDS["1h" if call.written_1h else "5m"]
        expected: int | None = None
        miss: Miss | None = None
        if previous is None:
            tokens = call.written if call.provider == "anthropic" else call.prompt - call.read
            if call.agent is not None and tokens > 0:
                miss = Miss(
                    request=call.index,
                    cause="subagent_cold_start",
                    detail=f"sub-agent {call.agent} started cold",
                    tokens=tokens,
                    cost=_miss_cost(call, tokens, price),
                    provider_reason=call.provider_reason,
                )
        else:
            expected = _expected(previous, call)
            if call.read < expected:
                tokens = expected - call.read
                cause, detail, message = _cause(previous, call, ttl)
                miss = Miss(
                    request=call.index,
                    cause=cause,
                    detail=detail,
                    tokens=tokens,
                    cost=_miss_cost(call, tokens, price),
                    provider_reason=call.provider_reason,
                    message=message,
                )
        rows.append(
            BilledRow(
                call=call,
                expected_read=expected,
                cost=call.cost(price),
                miss=miss,
                predicted_read=predicted.get(call.index),
            )
        )
    provider: Provider = max(providers, key=lambda p: providers[p]) if providers else "anthropic"
    return BilledReport(rows=tuple(rows), provider=provider, unpriced=tuple(unpriced))
