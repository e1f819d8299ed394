"""Hooks: user code at tool calls, session events, steps, personas and worker lifecycle.

A hook returns ``None``, an action (``{"action": "allow" | "continue" | "block" | "deny" |
"modify", "reason": ..., "arguments": {...}}``; ``modify`` needs ``arguments``, a mapping that
replaces the tool call's arguments), or reminder effects (``{"reminder": {...}, "then":
action}``, a bare reminder mapping, or a list of effects). Reminder effects are validated as
strict options and injected with source ``hook``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._core.errors import ObservationalHookError, ReminderOptionError
from ._core.fields import RECEIPT_FIELDS, event_fields
from ._core.lifecycle import Injected
from ._core.records import Source
from ._core.request import ToolCall, ToolResult
from .providers.base import EVENTS, FireResult

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "DispatchResult",
    "HookEffects",
    "Hooks",
    "WORKER_EVENTS",
]

WORKER_EVENTS: tuple[str, ...] = (
    "worker_spawned",
    "worker_progressed",
    "worker_waiting_for_input",
    "worker_suspended",
    "worker_resumed",
    "worker_completed",
    "worker_failed",
    "worker_stopped",
    "worker_cancelled",
)
ACTION_KEYS: frozenset[str] = frozenset({"action", "reason", "arguments", "then"})
ACTIONS: frozenset[str] = frozenset({"allow", "continue", "block", "deny", "modify"})

PreHook = Callable[[ToolCall], Any]
PostHook = Callable[[ToolCall, ToolResult], Any]
SessionHook = Callable[[str, Mapping[str, Any]], Any]
StepHook = Callable[[int, Mapping[str, Any]], Any]
PersonaHook = Callable[[str, Mapping[str, Any]], Any]
WorkerHook = Callable[[str, Mapping[str, Any]], Any]


@dataclass
class HookEffects:
    """Effects gathered from hook return values."""

    reminders: list[Mapping[str, Any]] = field(default_factory=list)
    actions: list[Mapping[str, Any]] = field(default_factory=list)
    result: ToolResult | None = None


@dataclass(frozen=True, slots=True)
class DispatchResult:
    """What :meth:`Hooks.dispatch` did: injected reminders (receipt dicts), the actions the
    hooks returned, and the provider fire for events that providers subscribe to."""

    reminders: list[dict[str, Any]] = field(default_factory=list)
    actions: list[Mapping[str, Any]] = field(default_factory=list)
    fire: FireResult | None = None


def _action(value: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    name = value.get("action")
    if name not in ACTIONS:
        raise ReminderOptionError(
            f"{where}: unknown hook action {name!r}; expected one of {', '.join(sorted(ACTIONS))}",
        )
    if name == "modify" and not isinstance(value.get("arguments"), Mapping):
        # Ignoring it would run the tool with arguments the hook meant to replace.
        raise ReminderOptionError(
            f"{where}: a 'modify' action needs 'arguments', a mapping of the new tool "
            f"arguments; got {value.get('arguments')!r}",
        )
    return value


def collect_effects(value: object, where: str, into: HookEffects | None = None) -> HookEffects:
    """Sort a hook's return value into reminders, actions and a replacement tool result."""
    out = into if into is not None else HookEffects()
    if value is None:
        return out
    if isinstance(value, ToolResult):
        out.result = value
    elif isinstance(value, list | tuple):
        for item in value:
            collect_effects(item, where, out)
    elif isinstance(value, Mapping):
        if "reminder" in value or "result" in value:
            extra = sorted(str(k) for k in value if k not in ("reminder", "result", "then"))
            if extra:
                raise ReminderOptionError(f"{where}: unknown effect key(s): {', '.join(extra)}")
            if "reminder" in value:
                reminder = value["reminder"]
                if not isinstance(reminder, Mapping):
                    raise ReminderOptionError(f"{where}: 'reminder' must be a mapping")
                out.reminders.append(reminder)
            if "result" in value:
                if not isinstance(value["result"], ToolResult):
                    raise TypeError(f"{where}: 'result' must be a ToolResult")
                out.result = value["result"]
            if value.get("then") is not None:
                collect_effects(value["then"], where, out)
        elif "action" in value:
            out.actions.append(_action(value, where))
        elif "body" in value and not ACTION_KEYS & set(value):
            out.reminders.append(value)
        else:
            raise ReminderOptionError(
                f"{where}: a hook returned a mapping that is neither a reminder (needs 'body') "
                "nor an action (needs 'action')",
            )
    else:
        raise TypeError(
            f"{where}: a hook returned {type(value).__name__}; expected None, an "
            "action, a reminder effect or a list of those"
        )
    return out


def receipt(done: Injected, session: Session) -> dict[str, Any]:
    """The receipt entry of an injected reminder: its lifecycle fields, never its body."""
    reminder = next(r for r in session.transcript.reminders if r.id == done.reminder_id)
    return {**event_fields(reminder, RECEIPT_FIELDS), "deduped_count": done.deduped_count}


def inject_effects(effects: HookEffects, session: Session) -> list[dict[str, Any]]:
    """Inject gathered reminder effects with source ``hook``; returns their receipts."""
    return [
        receipt(session.inject_from(options, source=Source.HOOK), session)
        for options in effects.reminders
    ]


class Hooks:
    """A set of hooks, registered by kind.

    Example:
        >>> hooks = Hooks()
        >>> hooks.tool("bash", post=lambda call, result: None if result.ok else {
        ...     "body": "The last shell command failed; read its output.", "ttl_turns": 1})
    """

    def __init__(self) -> None:
        self._tool: list[tuple[str, PreHook | None, PostHook | None]] = []
        self._session: dict[str, list[SessionHook]] = {}
        self._step: list[StepHook] = []
        self._persona: dict[str, list[PersonaHook]] = {}
        self._worker: dict[str, list[WorkerHook]] = {}

    def tool(
        self, pattern: str, *, pre: PreHook | None = None, post: PostHook | None = None
    ) -> None:
        """Run ``pre(call)`` before and ``post(call, result)`` after tools matching ``pattern``
        (a tool name or a glob such as ``"fs_*"``)."""
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("pattern must be a non-empty tool name or glob")
        if pre is None and post is None:
            raise ValueError("give pre=, post= or both")
        for fn in (pre, post):
            if fn is not None and not callable(fn):
                raise TypeError("tool hooks must be callable")
        self._tool.append((pattern, pre, post))

    def session(self, event: str, fn: SessionHook) -> None:
        """Run ``fn(event, payload)`` on a session event (``session_start``, ``post_compact`` …)."""
        if event not in EVENTS or event == "worker_resumed":
            raise ValueError(
                f"unknown session event {event!r}; expected one of {', '.join(EVENTS)}"
            )
        self._session.setdefault(event, []).append(self._callable(fn))

    def step(self, fn: StepHook) -> None:
        """Run ``fn(iteration, payload)`` after each step (with ``post_step``)."""
        self._step.append(self._callable(fn))

    def persona(self, name: str, fn: PersonaHook) -> None:
        """Run ``fn(name, payload)`` when the persona ``name`` is dispatched."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("persona name must be a non-blank string")
        self._persona.setdefault(name, []).append(self._callable(fn))

    def worker(self, event: str, fn: WorkerHook) -> None:
        """Observe a worker lifecycle event; such hooks may not add reminders (``RMD-008``)."""
        if event not in WORKER_EVENTS:
            raise ValueError(
                f"unknown worker event {event!r}; expected one of {', '.join(WORKER_EVENTS)}"
            )
        self._worker.setdefault(event, []).append(self._callable(fn))

    @staticmethod
    def _callable(fn: Any) -> Any:
        if not callable(fn):
            raise TypeError("a hook must be callable")
        return fn

    # -- running ----------------------------------------------------------------------------

    def _matching(self, tool_name: str) -> list[tuple[str, PreHook | None, PostHook | None]]:
        return [h for h in self._tool if fnmatch.fnmatchcase(tool_name, h[0])]

    def run_pre(
        self, call: ToolCall, session: Session
    ) -> tuple[list[Mapping[str, Any]], list[dict[str, Any]]]:
        """Run matching ``pre`` hooks; returns (actions, reminder receipts)."""
        effects = HookEffects()
        for pattern, pre, _ in self._matching(call.name):
            if pre is not None:
                collect_effects(pre(call), f"pre hook {pattern!r}", effects)
        if effects.result is not None:
            raise TypeError("a pre tool hook cannot return a ToolResult")
        return effects.actions, inject_effects(effects, session)

    def run_post(
        self, call: ToolCall, result: ToolResult, session: Session
    ) -> tuple[ToolResult, list[dict[str, Any]]]:
        """Run matching ``post`` hooks in order; a hook may replace the result."""
        receipts: list[dict[str, Any]] = []
        for pattern, _, post in self._matching(call.name):
            if post is None:
                continue
            effects = collect_effects(post(call, result), f"post hook {pattern!r}")
            if effects.result is not None:
                result = effects.result
            receipts.extend(inject_effects(effects, session))
        return result, receipts

    def dispatch(
        self, event: str, payload: Mapping[str, Any] | None = None, *, session: Session
    ) -> DispatchResult:
        """Run the hooks of ``event`` and, for provider events, ``session.fire(event, payload)``.

        ``event`` is a session event, a worker event, ``"post_step"`` (also runs step hooks with
        ``payload["iteration"]``) or ``"persona"`` (runs the hooks of ``payload["name"]``). This
        is how a host reports worker lifecycle events.

        Raises:
            ReminderError: ``RMD-008`` when a worker hook returns a reminder effect.
        """
        data: Mapping[str, Any] = payload or {}
        effects = HookEffects()
        if event in WORKER_EVENTS:
            for fn in self._worker.get(event, []):
                got = collect_effects(fn(event, data), f"worker hook {event!r}")
                if got.reminders:
                    raise ObservationalHookError(
                        f"the worker hook for {event!r} returned a reminder effect, but worker "
                        "events are observational; use a session, tool, step or persona hook",
                    )
                effects.actions.extend(got.actions)
        elif event == "persona":
            name = data.get("name")
            if not isinstance(name, str):
                raise ValueError("a persona dispatch needs payload['name'] (a string)")
            for fn in self._persona.get(name, []):
                collect_effects(fn(name, data), f"persona hook {name!r}", effects)
        elif event in EVENTS:
            for hook in self._session.get(event, []):
                collect_effects(hook(event, data), f"session hook {event!r}", effects)
            if event == "post_step":
                iteration = data.get("iteration", session.turn)
                for step in self._step:
                    collect_effects(step(iteration, data), "step hook", effects)
        else:
            known = ", ".join((*EVENTS, *WORKER_EVENTS, "persona"))
            raise ValueError(f"unknown hook event {event!r}; expected one of {known}")
        receipts = inject_effects(effects, session)
        fired = session.fire(event, data) if event in EVENTS else None
        return DispatchResult(reminders=receipts, actions=effects.actions, fire=fired)
