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
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._core.errors import ProviderSkippedError
from .._core.events import EventLog, Kind
from .._core.fields import ParsedOptions
from .._core.frozen import fast_init
from .._core.lifecycle import Injected
from .._core.records import Authority, Propagate, Reminder, RoleHint
from .._core.transcript import Transcript
from .base import FireResult, ProviderContext, ProviderSpec
from .registry import normalize_results

__all__ = [
    "FirePolicy",
    "ProviderState",
    "is_blocking",
    "short_repeat_text",
]

BUDGET_EXCEEDED = "reminder_iteration_budget_exceeded"
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
    """

    full_bodies: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "full_bodies", MappingProxyType(dict(self.full_bodies)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProviderState):
            return NotImplemented
        return dict(self.full_bodies) == dict(other.full_bodies)

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

    def state(self) -> ProviderState:
        """A snapshot of what the policy remembers."""
        return ProviderState(full_bodies=self._full_bodies)

    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        *,
        providers: Sequence[ProviderSpec],
        context: Callable[[ProviderSpec], ProviderContext],
        transcript: Callable[[], Transcript],
        inject: Callable[[ParsedOptions, str], Injected],
        budget: int,
        event_log: EventLog,
        session_id: str,
    ) -> FireResult:
        """Evaluate ``providers`` subscribed to ``event`` in order and inject what they return.

        ``inject(options, body)`` applies one decision (it is called after the provider's
        ``provider_evaluated`` event, so later providers see earlier ones' reminders).
        A provider raising :class:`ProviderSkippedError` is evented (``fired: false`` with
        ``error``) and skipped; any other exception is evented and propagates.
        """
        used = 0
        reports: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for spec in providers:
            if event not in spec.subscribes_to:
                continue
            try:
                result = spec.evaluate(context(spec))
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
            current = transcript()
            for item in parsed:
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
            for plan in planned:
                done = inject(plan.options, plan.body)
                if done.dropped is not None:  # the reminder's cadence refused it
                    used -= plan.size
                    skipped.append(
                        {"provider": spec.id, "reason": done.dropped, "body_bytes": plan.size}
                    )
                    continue
                reports.append(
                    {
                        "provider": spec.id,
                        "reminder_id": done.reminder_id,
                        "deduped_count": done.deduped_count,
                        "body_bytes": plan.size,
                    }
                )
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
