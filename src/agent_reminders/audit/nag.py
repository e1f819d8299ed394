"""The nag rate (docs/audit.md, "Nag rate"): how often directives reach the model, how much of
the prompt they take, how often the same one comes back, and — a heuristic — how often the
model's next turn ignored one.

Two sources. :func:`nag_from_events` reads a session's event log, where every fire is known
with its producer, its dedupe key and what was refused. :func:`nag_from_requests` reads the
successive request bodies an agent sent (what the audit reads): the directives new in each
request, and the assistant turn after them in the next request, which the event log has not.

Example:
    >>> from agent_reminders import Session
    >>> session = Session()
    >>> _ = session.inject({"body": "Run the tests before you finish.", "dedupe_key": "tests"})
    >>> _ = session.prepare_request()
    >>> _ = session.prepare_request()
    >>> nag = nag_from_events(session.event_log.records, model_calls=2)
    >>> nag.overall.fires, nag.overall.fires_per_100_calls, nag.to_json()["producers"].keys()
    (1, 50.0, dict_keys(['in_pipeline']))
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._core.envelope import body_key, read_directives
from .._core.events import EventRecord, Kind
from .readers import PromptSequence, RequestReader
from .tokenizers import DEFAULT_ENCODING, load_tokenizer
from .turns import next_assistant_turn, strings

__all__ = [
    "FAST_REPEAT_WINDOW",
    "NagCounter",
    "NagFigures",
    "NagReport",
    "nag_from_events",
    "nag_from_requests",
]

FAST_REPEAT_WINDOW = 5
"""A fire of a key that fired fewer than this many turns (requests) before is a fast repeat."""

_PRODUCER_OF_KIND = {"directive": "envelope", "system-reminder": "system-reminder"}


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class NagFigures:
    """The nag figures of one producer, or of all of them.

    Attributes:
        producer: The producer's name (a provider or generator id, ``in_pipeline``, ``hook``,
            ``bridge``…; from request bodies ``envelope`` or ``system-reminder``), or ``"all"``.
        fires: Directives that reached a request for the first time (one per directive, however
            many requests repeat the message that holds it).
        fires_per_100_calls: ``fires`` per 100 model calls.
        requests_with_directive: Requests that carried at least one new directive.
        requests_with_directive_share: ``requests_with_directive`` ÷ model calls.
        directive_tokens: The tokens of the directives' bodies; ``None`` where not known (a
            producer's own share, from the event log).
        directive_share: Of all producers (``producer == "all"``): the tokens of the
            directives the final prompt holds ÷ the final prompt's tokens, when both are known
            (``None`` for one producer).
        repeats: Fires of a key that had fired before in the session (from request bodies: the
            same text).
        fast_repeats: Repeats less than :data:`FAST_REPEAT_WINDOW` turns after the key's
            previous fire.
        ignored_heuristic: Fires the next assistant turn neither mentioned nor acted on — a
            heuristic (docs/audit.md, "Nag rate"); ``None`` from the event log.
        ignored_checked: Fires the heuristic could judge (a next assistant turn was found,
            and it ran what the directive names or the directive has a salient word to look
            for); ``None`` from the event log.
        dropped: Refused reminders by reason (``first_after``, ``cooldown``, ``max_fires``…),
            from the event log.
    """

    producer: str
    fires: int
    fires_per_100_calls: float
    requests_with_directive: int
    requests_with_directive_share: float
    directive_tokens: int | None
    directive_share: float | None
    repeats: int
    fast_repeats: int
    ignored_heuristic: int | None = None
    ignored_checked: int | None = None
    dropped: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The figures as in the ``nag`` object (ratios rounded to 4 places)."""
        share = self.directive_share
        return {
            "fires": self.fires,
            "fires_per_100_calls": round(self.fires_per_100_calls, 4),
            "requests_with_directive": self.requests_with_directive,
            "requests_with_directive_share": round(self.requests_with_directive_share, 4),
            "directive_tokens": self.directive_tokens,
            "directive_share": None if share is None else round(share, 4),
            "repeats": self.repeats,
            "fast_repeats": self.fast_repeats,
            "ignored_heuristic": self.ignored_heuristic,
            "ignored_checked": self.ignored_checked,
            "dropped": dict(self.dropped),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class NagReport:
    """The nag rate of a session (or a request log): all producers, and each one.

    Attributes:
        source: ``events`` (:func:`nag_from_events`) or ``requests`` (:func:`nag_from_requests`).
        model_calls: The model calls the rates are per.
        prompt_tokens: The final prompt's tokens the directive share is of (``None``: unknown).
        overall: The figures of all producers together (``producer == "all"``).
        producers: Each producer's figures, most fires first.
        fast_repeat_window: :data:`FAST_REPEAT_WINDOW`.
    """

    source: Literal["events", "requests"]
    model_calls: int
    prompt_tokens: int | None
    overall: NagFigures
    producers: tuple[NagFigures, ...]
    fast_repeat_window: int = FAST_REPEAT_WINDOW

    def to_json(self) -> dict[str, Any]:
        """The ``nag`` object: ``source``, ``model_calls``, ``prompt_tokens``,
        ``fast_repeat_window``, the overall figures (:meth:`NagFigures.to_json`) and
        ``producers``, each producer's figures by name."""
        return {
            "source": self.source,
            "model_calls": self.model_calls,
            "prompt_tokens": self.prompt_tokens,
            "fast_repeat_window": self.fast_repeat_window,
            **self.overall.to_json(),
            "producers": {p.producer: p.to_json() for p in self.producers},
        }

    def summary(self) -> str:
        """The figures in one plain sentence.

        Example:
            >>> nag_from_events([], model_calls=4).summary()
            'no directive fired in 4 model calls'
        """
        o, calls = self.overall, self.model_calls
        if not o.fires:
            return f"no directive fired in {calls} model call{'' if calls == 1 else 's'}"
        parts = [
            f"{o.fires} directive{'' if o.fires == 1 else 's'} fired in {calls} model calls "
            f"({o.fires_per_100_calls:.1f} per 100 calls)",
            f"{o.requests_with_directive} of {calls} requests carried a new one "
            f"({o.requests_with_directive_share:.0%})",
        ]
        if o.directive_share is not None:
            parts.append(f"directives are {o.directive_share:.1%} of the final prompt")
        parts.append(
            f"{o.repeats} repeat{'' if o.repeats == 1 else 's'} of a key, {o.fast_repeats} "
            f"within {self.fast_repeat_window} turns"
        )
        if o.ignored_checked:
            parts.append(
                f"the next turn ignored {o.ignored_heuristic} of {o.ignored_checked} (a heuristic)"
            )
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class _Fire:
    """One directive reaching a request: who made it, in which session and request (turn
    number, or the request's place in its session), its key, tokens and the heuristic's
    verdict (``None``: not judged)."""

    producer: str
    session: str | None
    request: int
    key: str | None
    tokens: int | None = None
    ignored: bool | None = None
    repeat: bool = False
    fast: bool = False


def _with_repeats(fires: Iterable[_Fire]) -> list[_Fire]:
    """The fires, each marked ``repeat`` when its key fired before in its session, ``fast``
    when that was fewer than :data:`FAST_REPEAT_WINDOW` requests before."""
    last: dict[tuple[str | None, str], int] = {}
    out = []
    for fire in fires:
        if fire.key is None:
            out.append(fire)
            continue
        before = last.get((fire.session, fire.key))
        last[(fire.session, fire.key)] = fire.request
        if before is not None:
            fast = fire.request - before < FAST_REPEAT_WINDOW
            fire = replace(fire, repeat=True, fast=fast)
        out.append(fire)
    return out


def _figures(
    producer: str,
    fires: Sequence[_Fire],
    *,
    calls: int,
    tokens: int | None,
    share: float | None,
    judged: bool,
    dropped: Mapping[str, int],
) -> NagFigures:
    requests = len({(f.session, f.request) for f in fires})
    verdicts = [f.ignored for f in fires if f.ignored is not None]
    return NagFigures(
        producer=producer,
        fires=len(fires),
        fires_per_100_calls=100 * _ratio(len(fires), calls),
        requests_with_directive=requests,
        requests_with_directive_share=_ratio(requests, calls),
        directive_tokens=tokens,
        directive_share=share,
        repeats=sum(f.repeat for f in fires),
        fast_repeats=sum(f.fast for f in fires),
        ignored_heuristic=sum(verdicts) if judged else None,
        ignored_checked=len(verdicts) if judged else None,
        dropped=dict(sorted(dropped.items())),
    )


def _report(
    source: Literal["events", "requests"],
    fires: Iterable[_Fire],
    *,
    calls: int,
    prompt_tokens: int | None,
    tokens: int | None,
    held: int | None,
    dropped: Sequence[tuple[str, str]] = (),
) -> NagReport:
    """The report of ``fires`` (in order) and ``dropped`` ``(producer, reason)`` pairs;
    ``tokens`` is the overall directive tokens, each producer's own when every fire has them;
    ``held`` the directive tokens the final prompt holds."""
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        raise ValueError(f"model_calls must be an int >= 0; got {calls!r}")
    marked = _with_repeats(fires)
    judged = source == "requests"
    names = Counter(f.producer for f in marked) + Counter(p for p, _ in dropped)
    producers = []
    for name in sorted(names, key=lambda n: (-names[n], n)):
        own = [f for f in marked if f.producer == name]
        counts = [f.tokens for f in own]
        producers.append(
            _figures(
                name,
                own,
                calls=calls,
                tokens=None if None in counts else sum(c or 0 for c in counts),
                share=None,
                judged=judged,
                dropped=Counter(reason for p, reason in dropped if p == name),
            )
        )
    overall = _figures(
        "all",
        marked,
        calls=calls,
        tokens=tokens,
        share=None if held is None or not prompt_tokens else held / prompt_tokens,
        judged=judged,
        dropped=Counter(reason for _, reason in dropped),
    )
    return NagReport(
        source=source,
        model_calls=calls,
        prompt_tokens=prompt_tokens,
        overall=overall,
        producers=tuple(producers),
    )


# -- from the event log ----------------------------------------------------------------------


class _Producers:
    """Who made each reminder, from the records in order: a canonical provider's reminder
    (source ``stdlib_provider``) is injected right after its ``provider_evaluated`` record; a
    generator's is tagged ``("generator", id)`` (``Emission.reminder``); anything else is
    named by its source."""

    def __init__(self) -> None:
        self.by_id: dict[str, str] = {}
        self.by_key: dict[str, str] = {}
        self.batch: str | None = None  # the provider whose reminders are being injected now

    def see(self, record: EventRecord) -> None:
        p, kind = record.payload, record.kind
        if kind == Kind.PROVIDER_EVALUATED:
            self.batch = str(p.get("provider_id")) if p.get("fired") else None
        elif kind == Kind.INJECTED:
            name = self.name(p)
            self.by_id[str(p.get("reminder_id"))] = name
            if p.get("dedupe_key") is not None:
                self.by_key.setdefault(str(p["dedupe_key"]), name)
            if p.get("source") != "stdlib_provider":
                self.batch = None
        elif kind not in (Kind.DEDUPED, Kind.LINTED, Kind.DROPPED):
            self.batch = None

    def name(self, payload: Mapping[str, Any]) -> str:
        source = str(payload.get("source") or "unknown")
        tags: Sequence[Any] = payload.get("tags") or ()
        if source == "stdlib_provider":
            if len(tags) >= 2 and tags[0] == "generator":
                return str(tags[1])
            return self.batch or (str(tags[0]) if tags else source)
        return source


def nag_from_events(
    records: Iterable[EventRecord],
    *,
    model_calls: int,
    prompt_tokens: int | None = None,
    session_id: str | None = None,
) -> NagReport:
    """The nag rate of a session from its event-log records.

    A fire is a ``fired`` record (one per directive committed into a request); its producer
    and dedupe key come from the ``injected`` record of the same ``reminder_id``. Directive
    tokens are the ``iteration_summary`` records' ``body_bytes`` ÷ 4 (rounded up, per
    request); refusals are the ``dropped`` records, counted for the producer of their key.

    Args:
        records: ``session.event_log.records`` (any order-keeping iterable of records).
        model_calls: The model calls the session made (its requests).
        prompt_tokens: The final prompt's tokens, for ``directive_share``.
        session_id: Only the records of this session (a log shared with sub-agents).

    Raises:
        ValueError: ``model_calls`` is not an int of 0 or more.

    Example:
        >>> from agent_reminders import Session
        >>> session = Session(reminders={"restraint": False})  # every fire goes through
        >>> for turn in range(3):
        ...     _ = session.fire("on_budget_threshold",
        ...                      {"context_tokens": 800, "context_window": 1000})
        ...     _ = session.prepare_request()
        >>> nag = nag_from_events(session.event_log.records, model_calls=3)
        >>> [(p.producer, p.fires, p.repeats, p.fast_repeats) for p in nag.producers]
        [('token_pressure', 3, 2, 2)]
    """
    producers = _Producers()
    fires: list[_Fire] = []
    drops: list[tuple[EventRecord, str | None]] = []
    keys: dict[str, str | None] = {}
    tokens = held = 0  # directive tokens sent; those sent since the last compaction
    for record in records:
        p = record.payload
        if session_id is not None and p.get("session_id") != session_id:
            continue
        kind = record.kind
        if kind == Kind.INJECTED:
            keys[str(p.get("reminder_id"))] = p.get("dedupe_key")
        elif kind == Kind.FIRED:
            rid = str(p.get("reminder_id"))
            name = producers.by_id.get(rid) or producers.name(p)
            turn = p.get("turn_number")
            fires.append(
                _Fire(
                    name, p.get("session_id"), turn if isinstance(turn, int) else 0, keys.get(rid)
                )
            )
        elif kind == Kind.ITERATION_SUMMARY:
            sent = math.ceil(int(p.get("body_bytes") or 0) / 4)
            tokens, held = tokens + sent, held + sent
        elif kind == Kind.PROVIDER_EVALUATED and p.get("event") == "post_compact":
            held = 0  # a compaction archived what was sent before it
        elif kind == Kind.DROPPED:
            drops.append((record, producers.batch))
        producers.see(record)
    dropped = []
    for record, batch in drops:
        p = record.payload
        owner = producers.by_id.get(str(p.get("reminder_id")))
        if owner is None and p.get("dedupe_key") is not None:
            owner = producers.by_key.get(str(p["dedupe_key"]))
        dropped.append((owner or batch or "unknown", str(p.get("reason"))))
    return _report(
        "events",
        fires,
        calls=model_calls,
        prompt_tokens=prompt_tokens,
        tokens=tokens,
        held=held,
        dropped=dropped,
    )


# -- from request bodies ---------------------------------------------------------------------


@dataclass(slots=True)
class _SessionState:
    """What one session's previous request left: its message digests, the directives it
    held (by text), its fires waiting for the next turn, its place and its prompt."""

    digests: tuple[bytes, ...] = ()
    held: Counter[str] = field(default_factory=Counter)
    waiting: list[int] = field(default_factory=list)  # indexes into NagCounter's fires
    requests: int = 0
    prompt_tokens: int = 0
    held_tokens: int = 0  # of the directives the last request holds


class NagCounter:
    """Counts the nag figures of successive requests as the audit reads them (one
    :class:`~agent_reminders.audit.readers.PromptSequence` at a time);
    :func:`nag_from_requests` is the one-call form.

    A directive is new in a request when the request holds more directives of its text than
    the previous request of its session did. The next assistant turn of a request is the
    first assistant message (with its tool calls) after the request's messages in the next
    request of its session, when that request extends it.

    Example:
        >>> from agent_reminders.audit.readers import RequestReader
        >>> from agent_reminders import Reminder, render_envelope
        >>> envelope = {"role": "user", "content": render_envelope([Reminder(body="Run pytest.")])}
        >>> counter, read = NagCounter(lambda text: [0] * len(text)), RequestReader().read
        >>> counter.add(read({"messages": [envelope]}, "line 1"), prompt_tokens=100)
        >>> counter.report().overall.fires
        1
    """

    def __init__(self, encode: Callable[[str], list[int]]) -> None:
        self._encode = encode
        self._sessions: dict[str | None, _SessionState] = {}
        self._fires: list[_Fire] = []
        self._bodies: list[str] = []  # the body of each fire
        self._found: dict[bytes, tuple[tuple[str, str], ...]] = {}
        self._calls = 0
        self._counted: dict[str, int] = {}

    def _directives(self, sequence: PromptSequence) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for piece in (*sequence.system, *sequence.messages):
            found = self._found.get(piece.digest)
            if found is None:
                text = piece.text
                hit = "<context-directives" in text or "<system-reminder" in text
                found = tuple(read_directives("\n".join(strings(piece.value)))) if hit else ()
                self._found[piece.digest] = found
            out.extend(found)
        return out

    def add(self, sequence: PromptSequence, *, prompt_tokens: int) -> None:
        """Count the next request (``prompt_tokens``: its prompt, as the audit counts it)."""
        self._calls += 1
        state = self._sessions.setdefault(sequence.session_id, _SessionState())
        digests = tuple(p.digest for p in sequence.messages)
        if state.waiting and digests[: len(state.digests)] == state.digests:
            values = [p.value for p in sequence.messages]
            turn = next_assistant_turn(values, len(state.digests))
            if turn is not None:
                for index in state.waiting:
                    verdict = turn.ignored(self._bodies[index])
                    self._fires[index] = replace(self._fires[index], ignored=verdict)
        directives = self._directives(sequence)
        held = Counter(body_key(body) for _, body in directives)
        excess = held - state.held
        new: list[tuple[str, str]] = []
        for kind, body in reversed(directives):  # a directive appended last is the new one
            if excess[body_key(body)] > 0:
                excess[body_key(body)] -= 1
                new.append((kind, body))
        state.waiting = []
        for kind, body in reversed(new):
            state.waiting.append(len(self._fires))
            self._bodies.append(body)
            self._fires.append(
                _Fire(
                    _PRODUCER_OF_KIND[kind],
                    sequence.session_id,
                    state.requests,
                    _digest(body),
                    tokens=self._tokens(body),
                )
            )
        state.digests, state.held = digests, held
        state.requests += 1
        state.prompt_tokens = prompt_tokens
        state.held_tokens = sum(self._tokens(body) for _, body in directives)

    def _tokens(self, body: str) -> int:
        count = self._counted.get(body)
        if count is None:
            count = self._counted[body] = len(self._encode(body))
        return count

    def report(self, model_calls: int | None = None) -> NagReport:
        """The figures so far: per ``model_calls`` (default: the requests counted), the
        directive share of the final prompts of all sessions."""
        final = sum(s.prompt_tokens for s in self._sessions.values())
        return _report(
            "requests",
            self._fires,
            calls=self._calls if model_calls is None else model_calls,
            prompt_tokens=final or None,
            tokens=sum(f.tokens or 0 for f in self._fires),
            held=sum(s.held_tokens for s in self._sessions.values()),
        )


def _digest(body: str) -> str:
    """The key of a directive from request bodies: a digest of its whitespace-normalized text
    (a producer's dedupe key is not in the request)."""
    return hashlib.blake2b(
        body_key(body).encode("utf-8", "surrogatepass"), digest_size=8
    ).hexdigest()


def nag_from_requests(
    bodies: Iterable[object], *, encoding: str = DEFAULT_ENCODING, format: str = "auto"
) -> NagReport:
    """The nag rate of successive model requests (OpenAI Chat or Responses, Anthropic
    Messages, the request log), read as the audit reads them.

    Per request, the directives new in it (``<directive>`` blocks of ``<context-directives>``
    envelopes, and ``<system-reminder>`` elements, each read as one); a repeat is a directive
    of the same text as an earlier one of its session; ``ignored_heuristic`` is judged on the
    assistant turn after it (docs/audit.md, "Nag rate"). Directive tokens are the bodies'
    tokens; their share is of the final prompt of each session.

    Raises:
        AuditError: ``RMD-111`` naming the request that is not one.
        ConfigError: ``RMD-104`` for an unknown format or encoding.

    Example:
        >>> from agent_reminders import Reminder, render_envelope
        >>> nag = render_envelope([Reminder(body="Run pytest before you finish.")])
        >>> first = [{"role": "user", "content": "fix it"}, {"role": "user", "content": nag}]
        >>> second = first + [{"role": "assistant", "content": "Done."}]
        >>> report = nag_from_requests([{"messages": first}, {"messages": second}],
        ...                            encoding="bytes/4")
        >>> report.overall.fires, report.overall.ignored_heuristic, report.overall.ignored_checked
        (1, 1, 1)
    """
    reader, tokenizer = RequestReader(format), load_tokenizer(encoding)
    counter = NagCounter(tokenizer.encode)
    for index, body in enumerate(bodies):
        sequence = reader.read(body, f"requests[{index}]")
        tokens = sum(len(tokenizer.encode(p.text)) for p in sequence.pieces)
        counter.add(sequence, prompt_tokens=tokens)
    return counter.report()
