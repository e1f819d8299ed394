"""The firing policy: budget, unchanged durable reminders, short repeats (see
docs/session-loop.md, "The firing policy").

:class:`FirePolicy` evaluates the providers subscribed to one event and decides what each
result becomes: injected in full, injected as a short repeat, or skipped. It does not own the
conversation: the session hands it the providers, a context, its current transcript and an
``inject`` callback that applies one decision — so every rule of ``fire`` lives here, and the
session only applies them. The one thing the policy remembers between fires (which body each
dedupe key last carried in full) is its :class:`ProviderState`, part of ``SessionState``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .._core.cadence import CADENCE_FIELDS
from .._core.errors import ProviderSkippedError
from .._core.events import EventLog, Kind
from .._core.fields import ParsedOptions
from .._core.frozen import fast_init
from .._core.lifecycle import Injected
from .._core.records import Authority, Propagate, Reminder, RoleHint
from .._core.transcript import Transcript
from .base import FireResult, ProviderContext, ProviderSpec
from .registry import Resolution, normalize_results

__all__ = [
    "FirePolicy",
    "ProviderState",
    "is_blocking",
    "short_repeat_text",
]

BUDGET_EXCEEDED = "reminder_iteration_budget_exceeded"
# a new or compacted context: every provider is asked, whatever its interval
NEW_CONTEXT_EVENTS = frozenset({"session_start", "post_compact"})
UNCHANGED_DURABLE = "unchanged_durable_reminder"


def short_repeat_text(dedupe_key: str) -> str:
    """The body of a short repeat: the reminder ``dedupe_key`` is unchanged."""
    return f"Reminder {dedupe_key!r} is unchanged since its previous full emission above."


def is_blocking(
    providers: Iterable[ProviderSpec],
    event: str,
    context: Callable[[ProviderSpec], ProviderContext] | None = None,
) -> bool:
    """Whether any of ``providers`` subscribed to ``event`` does blocking I/O.

    With ``context`` (the context each provider would be evaluated with), a provider's
    ``blocks_when`` is asked as well, so an evaluation that would not touch its I/O stays
    inline.
    """
    return any(
        p.blocking
        and event in p.subscribes_to
        and (context is None or p.blocks_when is None or p.blocks_when(context(p)))
        for p in providers
    )


@dataclass(frozen=True, slots=True)
class ProviderState:
    """What the firing policy remembers between fires (part of ``SessionState``).

    Attributes:
        full_bodies: For each dedupe key, the body last injected in full — a later identical
            result may then be sent as a short repeat.
        fired_turns: For each provider with an ``interval``, the turn it last fired at.
    """

    full_bodies: Mapping[str, str] = field(default_factory=dict)
    fired_turns: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "full_bodies", MappingProxyType(dict(self.full_bodies)))
        object.__setattr__(self, "fired_turns", MappingProxyType(dict(self.fired_turns)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProviderState):
            return NotImplemented
        return dict(self.full_bodies) == dict(other.full_bodies) and dict(self.fired_turns) == dict(
            other.fired_turns
        )

    __hash__ = None  # type: ignore[assignment]


@fast_init
@dataclass(frozen=True, slots=True)
class _Plan:
    options: ParsedOptions
    body: str
    size: int


class FirePolicy:
    """Decides, for one ``fire``, what the providers' results become.

    Example:
        >>> from agent_reminders import Session
        >>> s = Session(reminders={"providers": ["-grounded_review"]})
        >>> s.providers.register("plan", subscribes_to="post_step",
        ...                      evaluate=lambda ctx: {"body": "Keep the plan short."})
        >>> s.fire("post_step").fired_count
        1
    """

    def __init__(self, state: ProviderState | None = None) -> None:
        self._full_bodies: dict[str, str] = dict(state.full_bodies) if state else {}
        self._fired_turns: dict[str, int] = dict(state.fired_turns) if state else {}

    @property
    def full_bodies(self) -> Mapping[str, str]:
        """A read-only view of the body each dedupe key last carried in full."""
        return MappingProxyType(self._full_bodies)

    def state(self) -> ProviderState:
        """A snapshot of what the policy remembers."""
        return ProviderState(full_bodies=self._full_bodies, fired_turns=self._fired_turns)

    def _resting(self, spec: ProviderSpec, ctx: ProviderContext) -> bool:
        """Whether ``spec``'s ``interval`` keeps it from being asked at ``ctx.turn``."""
        interval = _interval(spec, ctx)
        last = self._fired_turns.get(spec.id)
        return interval is not None and last is not None and ctx.turn < last + interval

    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        *,
        providers: Sequence[ProviderSpec],
        context: Callable[[ProviderSpec], ProviderContext],
        transcript: Callable[[], Transcript],
        inject: Callable[[ParsedOptions, str, str | None], Injected],
        resolve: Callable[[Resolution], Injected | None],
        budget: int,
        event_log: EventLog,
        session_id: str,
    ) -> FireResult:
        """Evaluate ``providers`` subscribed to ``event`` in order and inject what they return.

        ``inject(options, body, cadence_key)`` applies one decision (it is called after the
        provider's ``provider_evaluated`` event, so later providers see earlier ones'
        reminders); ``resolve(resolution)`` applies a provider's resolution and returns the
        note it queued, if any. A provider resting by its ``interval`` is not asked. A
        provider raising :class:`ProviderSkippedError` is evented (``fired: false`` with
        ``error``) and skipped; any other exception is evented and propagates.
        """
        used = 0
        reports: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for spec in providers:
            if event not in spec.subscribes_to:
                continue
            ctx = context(spec)
            if self._fired_turns and event not in NEW_CONTEXT_EVENTS and self._resting(spec, ctx):
                continue
            try:
                result = spec.evaluate(ctx)
                parsed = () if result is None else normalize_results(result, spec.id)
            except ProviderSkippedError as exc:
                _evaluated(event_log, session_id, spec.id, event, 0, error=str(exc))
                continue
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                _evaluated(event_log, session_id, spec.id, event, 0, error=error)
                raise
            if not parsed:  # the usual case: nothing to say this time
                _evaluated(event_log, session_id, spec.id, event, 0)
                continue
            planned: list[_Plan] = []
            resolutions: list[Resolution] = []
            current = transcript()
            for entry in parsed:
                if isinstance(entry, Resolution):
                    resolutions.append(entry)
                    continue
                item = _paced(entry, spec, ctx)
                # a durable reminder has no TTL: the stored one is current
                existing = _unchanged_durable(item, (e.reminder for e in current.pending))
                if existing is not None:
                    skipped.append(
                        {
                            "provider": spec.id,
                            "reason": UNCHANGED_DURABLE,
                            "reminder_id": existing.id,
                            "body_bytes": len(item.body.encode()),
                        }
                    )
                    continue
                body = self._short_repeat_body(item, current)
                size = len(body.encode())
                if used + size > budget:
                    skipped.append(
                        {"provider": spec.id, "reason": BUDGET_EXCEEDED, "body_bytes": size}
                    )
                    continue
                used += size
                planned.append(_Plan(options=item, body=body, size=size))
            _evaluated(event_log, session_id, spec.id, event, len(planned))
            for resolution in resolutions:
                note = resolve(resolution)
                if note is not None and resolution.body is not None:
                    size = len(resolution.body.encode())
                    reports.append({**_report(spec.id, note, size), "resolved": resolution.key})
            for plan in planned:
                key = spec.cadence_key(plan.options) if spec.cadence_key else None
                done = inject(plan.options, plan.body, key)
                if done.dropped is not None:  # the reminder's cadence refused it
                    used -= plan.size
                    skipped.append(
                        {"provider": spec.id, "reason": done.dropped, "body_bytes": plan.size}
                    )
                    continue
                if _interval(spec, ctx) is not None:
                    self._fired_turns[spec.id] = ctx.turn
                reports.append(_report(spec.id, done, plan.size))
        return FireResult(
            fired_count=len(reports),
            reports=reports,
            skipped_count=len(skipped),
            skipped_reports=skipped,
            budget_bytes=budget,
            used_body_bytes=used,
        )

    def _short_repeat_body(self, parsed: ParsedOptions, transcript: Transcript) -> str:
        """A short body for a keyed, non-durable repeat whose full text the model already saw.

        Only when the pending reminder it replaces was already committed (the model has the
        full text in history) and carries the same text — or is itself the short form of it.
        """
        key = parsed.dedupe_key
        if key is None or (parsed.preserve_on_compact and parsed.ttl_turns is None):
            return parsed.body
        short = short_repeat_text(key)
        if len(short) >= len(parsed.body):
            return parsed.body
        same_text = {parsed.body}
        if self._full_bodies.get(key) == parsed.body:
            same_text.add(short)
        for e in transcript.pending:
            r = e.reminder
            if (
                r.dedupe_key == key
                and r.body in same_text
                and transcript.is_committed(transcript.current(e))
            ):
                return short
        self._full_bodies[key] = parsed.body
        return parsed.body


def _interval(spec: ProviderSpec, ctx: ProviderContext) -> int | None:
    config = ctx.config
    if config is not None and config.get("interval") is not None:
        return int(config["interval"])
    return spec.interval


def _report(provider: str, done: Injected, size: int) -> dict[str, Any]:
    return {
        "provider": provider,
        "reminder_id": done.reminder_id,
        "deduped_count": done.deduped_count,
        "body_bytes": size,
    }


def _paced(item: ParsedOptions, spec: ProviderSpec, ctx: ProviderContext) -> ParsedOptions:
    """``item`` with its provider's cadence: ``reminders.config[id]["cadence"]`` field by
    field (``None`` turns one off), else what the result set, else — under ``restraint`` —
    the provider's own default for the event."""
    defaults = spec.cadence.get(ctx.event, {}) if ctx.options.restraint else {}
    config = ctx.config
    override = (config.get("cadence") if config is not None else None) or {}
    if not defaults and not override:
        return item
    values = {}
    for name in CADENCE_FIELDS:
        mine = getattr(item, name)
        if name in override:
            values[name] = override[name]
        else:
            values[name] = defaults.get(name) if mine is None else mine
    return replace(item, **values)


def _unchanged_durable(parsed: ParsedOptions, pending: Iterable[Reminder]) -> Reminder | None:
    """The pending durable reminder that ``parsed`` would repeat unchanged, if any."""
    if not parsed.preserve_on_compact or parsed.ttl_turns is not None:
        return None
    propagate = parsed.propagate or Propagate.SESSION
    role_hint = parsed.role_hint or RoleHint.SYSTEM
    authority = parsed.authority or Authority.CONTRACT
    for r in pending:
        if (
            r.dedupe_key == parsed.dedupe_key
            and r.body == parsed.body
            and r.is_durable
            and r.tags == parsed.tags
            and r.propagate is propagate
            and r.role_hint is role_hint
            and r.authority is authority
        ):
            return r
    return None


def _evaluated(
    log: EventLog,
    session_id: str,
    provider_id: str,
    event: str,
    fired: int,
    *,
    error: str | None = None,
) -> None:
    payload: dict[str, Any] = {
        "provider_id": provider_id,
        "event": event,
        "fired": fired > 0,
        "fired_count": fired,
    }
    if error is not None:
        payload["error"] = error
    log.lifecycle(Kind.PROVIDER_EVALUATED, session_id, payload)
