"""The injection queue: user messages and reminders pushed by a host, drained at loop seams.

Items wait in FIFO order until a seam that serves their delivery mode drains them
(docs/session-loop.md, "Seams and delivery modes").
The queue never merges items; dedupe happens in the transcript when a reminder is injected.
Validation of reminder payloads follows the checks of the bridge's ``session/remind``
(docs/protocol.md), so the bridge can sit on this queue unchanged.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._core.errors import QueueError, ReminderOptionError, payload_error
from ._core.fields import (
    AUTHORITY_RANK,
    DEFAULT_MAX_BODY_BYTES,
    MAX_ID_BYTES,
    MAX_KEY_BYTES,
    MAX_META_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
    Authority,
    coerce_enum,
    over_limit,
    pending_row_fields,
    validate_reminder_payload,
)
from ._core.ids import IdFactory, new_id
from ._core.messages import check_text
from ._core.queue_rules import (
    MODE_ALIASES,
    ItemStatus,
    RevokeOutcome,
    check_max_pending,
    check_revoke_id,
    normalize_mode,
    push_allowed,
    revoke_outcome,
    seam_modes,
)
from ._core.records import DeliveryMode
from ._core.seams import SEAMS  # noqa: F401  # importable from here, as it always was

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "InjectionQueue",
    "MAX_ID_BYTES",
    "MAX_KEY_BYTES",
    "MAX_META_BYTES",
    "MAX_TAGS",
    "MAX_TAG_BYTES",
    "MODE_ALIASES",
    "QueueError",
    "QueueItem",
    "QueueState",
    "normalize_mode",
    "unchanged_since_made",
    "validate_reminder_payload",
]


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One queued item: ``kind`` (``"user"`` or ``"reminder"``), ``id``, ``mode``, ``payload``.

    A reminder's payload holds the validated reminder fields (snake_case); a user item's payload
    is ``{"content": ...}``. ``seal`` is set by :meth:`InjectionQueue.reminder_item` only (it is
    no argument, and no other item has one): what the queue validated, so that a store handed
    the item unchanged need not check it again (:func:`unchanged_since_made`).
    """

    kind: Literal["user", "reminder"]
    id: str
    mode: DeliveryMode
    payload: dict[str, Any] = field(default_factory=dict)
    seal: _Seal | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueState:
    """Everything a queue holds: the queued ``items`` (FIFO) and the ids it remembers.

    Part of ``SessionState``: ``InjectionQueue.state()`` makes one and
    ``InjectionQueue.from_state(state)`` continues from it. Delivered and revoked ids are
    remembered for the life of the session, so a restored queue still refuses them.
    """

    items: tuple[QueueItem, ...] = ()
    delivered_ids: frozenset[str] = frozenset()
    revoked_ids: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "delivered_ids", frozenset(self.delivered_ids))
        object.__setattr__(self, "revoked_ids", frozenset(self.revoked_ids))
        for item in self.items:
            if not isinstance(item, QueueItem):
                raise TypeError(f"items must be QueueItem values, not {type(item).__name__}")
        delivered, revoked = self.delivered_ids, self.revoked_ids
        pending = [i.id for i in self.items]
        if (
            len(set(pending)) == len(pending)
            and delivered.isdisjoint(revoked)  # set operations: no Python loop over the
            and delivered.isdisjoint(pending)  # delivered ids, which grow with the session
            and revoked.isdisjoint(pending)
        ):
            return
        seen: set[str] = set()
        for rid in (*pending, *delivered, *revoked):
            if rid in seen:
                raise ValueError(f"queue state: id {rid!r} appears twice")
            seen.add(rid)


def _check_content(content: object) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        if not content.strip():
            raise payload_error("content is blank")
        check_text(content, "content")
        return content
    if (
        isinstance(content, Sequence)
        and content
        and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content)
    ):
        check_text(content, "content")
        return [dict(b) for b in content]
    raise payload_error("content must be a non-blank string or a non-empty list of content blocks")


def _content_size(content: str | list[dict[str, Any]]) -> int:
    """A user item's size in UTF-8 bytes: its text, or its blocks as compact JSON (content
    that passed ``_check_content`` holds no lone surrogate)."""
    text = content if isinstance(content, str) else _CONTENT_JSON.encode(content)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


_CONTENT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class InjectionQueue:
    """A FIFO of host-pushed user messages and reminders, each with a delivery mode.

    Example:
        >>> q = InjectionQueue()
        >>> rid = q.remind({"body": "CI is red on main"}, mode="steer")
        >>> [row["mode"] for row in q.pending()]
        ['finish_step']
        >>> [item.id for item in q.drain("iteration_start")] == [rid]
        True
    """

    def __init__(
        self,
        *,
        max_authority: Authority | str = Authority.CONTRACT,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_pending: int | None = None,
        id_factory: IdFactory | None = None,
    ) -> None:
        self.max_authority = coerce_enum(Authority, max_authority, "max_authority")
        if type(max_body_bytes) is not int or max_body_bytes <= 0:
            raise ReminderOptionError(f"max_body_bytes must be an int > 0; got {max_body_bytes!r}")
        check_max_pending(max_pending)
        self.max_body_bytes = max_body_bytes
        self.max_pending = max_pending
        self._new_id = id_factory or new_id
        self._lock = threading.Lock()
        self._items: list[QueueItem] = []
        self._delivered: set[str] = set()
        self._revoked: set[str] = set()

    def __len__(self) -> int:
        return len(self._items)

    def _status(self, item_id: str) -> tuple[ItemStatus, QueueItem | None]:
        # the caller holds the lock; the pending item too, when there is one
        if item_id in self._delivered:
            return "delivered", None
        if item_id in self._revoked:
            return "revoked", None
        for item in self._items:
            if item.id == item_id:
                return "pending", item
        return "unknown", None

    def status_of(self, item_id: str) -> ItemStatus:
        """``"pending"``, ``"delivered"``, ``"revoked"`` or ``"unknown"`` (never queued here).

        Example:
            >>> q = InjectionQueue()
            >>> rid = q.remind({"body": "CI is red"})
            >>> q.status_of(rid), q.status_of("nope")
            ('pending', 'unknown')
        """
        with self._lock:
            return self._status(item_id)[0]

    def knows(self, item_id: str) -> bool:
        """Whether ``item_id`` is pending here, or was delivered or revoked."""
        return self.status_of(item_id) != "unknown"

    def pending_ids(self) -> set[str]:
        """The ids still queued here."""
        with self._lock:
            return {i.id for i in self._items}

    def _push(self, item: QueueItem) -> str:
        with self._lock:
            push_allowed(item.id, self._status(item.id)[0], len(self._items), self.max_pending)
            self._items.append(item)
        return item.id

    def offer(self, item: QueueItem) -> bool:
        """Add an item already accepted elsewhere (validated and stored, as the bridge's
        store holds it) unless its id is known here; ``True`` when added. An item offered
        twice (loaded from the store, and handed over as it was stored) is queued once; the
        store already applied ``max_pending``."""
        with self._lock:
            known = self._status(item.id)[0] != "unknown"
            if not known:
                self._items.append(item)
        return not known

    def mark_revoked(self, item_ids: Iterable[str]) -> int:
        """Drop the pending reminders among ``item_ids`` as revoked (a store says they were
        revoked elsewhere); returns how many. Delivered ids stay delivered, user messages
        stay queued (only reminders are revoked)."""
        wanted = set(item_ids)
        with self._lock:
            gone = {i.id for i in self._items if i.id in wanted and i.kind == "reminder"}
            if gone:
                self._items = [i for i in self._items if i.id not in gone]
                self._revoked.update(gone)
        return len(gone)

    def remind(
        self,
        payload: Mapping[str, Any],
        *,
        mode: str | None = None,
        grant: Authority | str | None = None,
    ) -> str:
        """Queue a reminder; returns its id (the caller's ``id`` when given).

        ``grant`` lowers the authority allowed for this call (a bridge token's
        ``max_authority``); it can never exceed the queue's own ``max_authority``.
        """
        return self._push(self._reminder(payload, mode=mode, grant=grant))

    def reminder_item(
        self,
        payload: Mapping[str, Any],
        *,
        mode: str | None = None,
        grant: Authority | str | None = None,
    ) -> QueueItem:
        """The item :meth:`remind` would queue, validated the same way, without queueing it
        (for a caller that stores it elsewhere, as the bridge does in a store).

        Example:
            >>> q = InjectionQueue()
            >>> item = q.reminder_item({"body": "CI is red"}, mode="queue")
            >>> item.mode.value, item.payload["body"], len(q)
            ('audit_only', 'CI is red', 0)

        A store that is handed this very item, unchanged, need not check it again
        (:func:`unchanged_since_made`).
        """
        item = self._reminder(payload, mode=mode, grant=grant)
        object.__setattr__(item, "seal", _Seal(item.payload))  # a frozen field, set once here
        return item

    def _reminder(
        self,
        payload: Mapping[str, Any],
        *,
        mode: str | None = None,
        grant: Authority | str | None = None,
    ) -> QueueItem:
        limit = self.max_authority
        if grant is not None:
            asked = coerce_enum(Authority, grant, "grant")
            if AUTHORITY_RANK[asked] > AUTHORITY_RANK[limit]:
                limit = asked
        fields = validate_reminder_payload(payload, grant=limit, max_body_bytes=self.max_body_bytes)
        resolved = normalize_mode(mode)
        fields["id"] = fields["id"] or self._new_id()
        return QueueItem(kind="reminder", id=fields["id"], mode=resolved, payload=fields)

    def inject(self, content: str | list[dict[str, Any]], *, mode: str | None = None) -> str:
        """Queue a user message (a string or content blocks); returns its id."""
        return self._push(self.user_item(content, mode=mode))

    def user_item(
        self, content: str | list[dict[str, Any]], *, mode: str | None = None
    ) -> QueueItem:
        """The item :meth:`inject` would queue, validated the same way, without queueing it
        (content over ``max_body_bytes`` — its text, or its blocks as compact JSON — is
        refused with ``RMD-002``)."""
        checked = _check_content(content)
        size = _content_size(checked)
        if size > self.max_body_bytes:
            raise over_limit("content", size, self.max_body_bytes)
        resolved = normalize_mode(mode)
        return QueueItem(
            kind="user", id=self._new_id(), mode=resolved, payload={"content": checked}
        )

    def pending(self) -> list[dict[str, Any]]:
        """The queued items in FIFO order as ``session/pending_injections`` rows, ``position``
        from 0."""
        with self._lock:
            items = list(self._items)
        return [_row(item, position) for position, item in enumerate(items)]

    def revoke(self, reminder_id: str) -> RevokeOutcome:
        """Remove a queued reminder: ``"revoked"``, or ``"already_revoked"`` when repeated.

        Raises:
            QueueError: ``reason`` ``already_delivered``, ``unknown_reminder_id`` or
                ``missing_reminder_id``.
        """
        rid = check_revoke_id(reminder_id)
        with self._lock:
            status, item = self._status(rid)
            outcome = revoke_outcome(status, None if item is None else item.kind, rid)
            if outcome == "revoked":
                self._items = [i for i in self._items if i.id != rid]
                self._revoked.add(rid)
        return outcome

    def drain(self, seam: str) -> list[QueueItem]:
        """Take the items whose mode ``seam`` serves, FIFO, leaving the rest in order.

        Raises:
            ValueError: unknown seam.
        """
        modes = seam_modes(seam)
        if not self._items:  # nothing queued: a push racing this drain waits for the next seam
            return []
        with self._lock:
            taken = [i for i in self._items if i.mode in modes]
            if taken:
                self._items = [i for i in self._items if i.mode not in modes]
                self._delivered.update(i.id for i in taken)
        return taken

    @property
    def delivered_ids(self) -> frozenset[str]:
        """Ids drained so far (remembered for the life of the session)."""
        return frozenset(self._delivered)

    @property
    def revoked_ids(self) -> frozenset[str]:
        """Ids revoked so far (remembered for the life of the session)."""
        return frozenset(self._revoked)

    def state(self) -> QueueState:
        """A snapshot of the queued items and the delivered and revoked ids.

        Example:
            >>> q = InjectionQueue()
            >>> _ = q.inject("hello")
            >>> InjectionQueue.from_state(q.state()).pending() == q.pending()
            True
        """
        with self._lock:
            return QueueState(
                items=tuple(_copied(self._items)),
                delivered_ids=frozenset(self._delivered),
                revoked_ids=frozenset(self._revoked),
            )

    @classmethod
    def from_state(
        cls,
        state: QueueState,
        *,
        max_authority: Authority | str = Authority.CONTRACT,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_pending: int | None = None,
        id_factory: IdFactory | None = None,
    ) -> InjectionQueue:
        """A queue that continues from ``state`` (the limits are configuration, not state)."""
        if not isinstance(state, QueueState):
            raise TypeError(f"state must be a QueueState, not {type(state).__name__}")
        new = cls(
            max_authority=max_authority,
            max_body_bytes=max_body_bytes,
            max_pending=max_pending,
            id_factory=id_factory,
        )
        new._items = _copied(state.items)
        new._delivered = set(state.delivered_ids)
        new._revoked = set(state.revoked_ids)
        return new


def _snapshot(payload: Mapping[str, Any]) -> dict[str, Any]:
    # the payload's values, with the containers copied (tags, _meta)
    return {
        k: list(v) if type(v) is list else dict(v) if type(v) is dict else v
        for k, v in payload.items()
    }


class _Seal:
    """What ``reminder_item`` validated: a copy of the item's payload, its containers copied
    too (tags, _meta), handed out once (:meth:`take`), then forgotten."""

    __slots__ = ("left",)

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.left = [_snapshot(payload)]

    def take(self) -> dict[str, Any] | None:
        """The copy, the first time only (``list.pop`` is atomic: one caller gets it)."""
        try:
            return self.left.pop()
        except IndexError:
            return None


def unchanged_since_made(item: QueueItem) -> bool:
    """Whether ``item`` is one :meth:`InjectionQueue.reminder_item` returned (it carries the
    queue's ``seal``), whose payload still holds what it was made with (the same keys; values
    of the same types and equal): then it is in the queue's own form, and a store need not run
    :func:`check_queue_item` on it again. Answers ``True`` at most once per item.

    Example:
        >>> item = InjectionQueue().reminder_item({"body": "CI is red"})
        >>> unchanged_since_made(item), unchanged_since_made(item)
        (True, False)
        >>> changed = InjectionQueue().reminder_item({"body": "CI is red"})
        >>> changed.payload["ttl_turns"] = -1
        >>> unchanged_since_made(changed)
        False
    """
    seal = item.seal if isinstance(item, QueueItem) else None
    made = None if seal is None else seal.take()
    payload = item.payload
    # equal values of the same types, key by key (a changed key order only costs a check)
    return (
        made is not None
        and type(payload) is dict
        and payload == made
        and list(map(type, payload.values())) == list(map(type, made.values()))
    )


def _copied(items: Iterable[QueueItem]) -> list[QueueItem]:
    # payloads are plain dicts: a snapshot must not share them with the live queue
    return [
        QueueItem(kind=i.kind, id=i.id, mode=i.mode, payload=copy.deepcopy(i.payload))
        for i in items
    ]


def check_queue_item(kind: object, id: object, mode: object, payload: object) -> QueueItem:
    """Rebuild a stored queue item, strictly: the item must be exactly what the queue made.

    Raises:
        ReminderError: the code of the rule the stored value breaks (``RMD-002`` …), or
            ``RMD-001`` when a valid value is not in the queue's own canonical form.
    """
    if kind not in ("user", "reminder"):
        raise ReminderOptionError(f"kind must be 'user' or 'reminder'; got {kind!r}")
    if not isinstance(id, str) or not id.strip():
        raise ReminderOptionError(f"id must be a non-blank string; got {id!r}")
    if not isinstance(mode, str) or mode not in {m.value for m in DeliveryMode}:
        allowed = ", ".join(m.value for m in DeliveryMode)
        raise ReminderOptionError(f"mode must be one of {allowed}; got {mode!r}")
    if not isinstance(payload, Mapping):
        raise ReminderOptionError(f"payload must be an object; got {payload!r}")
    if kind == "user":
        if set(payload) != {"content"}:
            raise ReminderOptionError("a user item's payload must be exactly {content}")
        content = _check_content(payload["content"])
        return QueueItem(kind="user", id=id, mode=DeliveryMode(mode), payload={"content": content})
    # no body-size limit here: the limit of the queue it was pushed to already applied
    fields = validate_reminder_payload(payload, max_body_bytes=sys.maxsize)
    if fields != dict(payload) or fields["id"] != id:
        raise ReminderOptionError("a reminder item's payload is not in the form the queue stores")
    return QueueItem(kind="reminder", id=id, mode=DeliveryMode(mode), payload=fields)


def _row(item: QueueItem, position: int) -> dict[str, Any]:
    if item.kind == "user":
        return {
            "kind": "user",
            "id": item.id,
            "messageId": item.id,
            "mode": item.mode.value,
            "position": position,
            "content": item.payload["content"],
        }
    return {
        "kind": "reminder",
        "id": item.id,
        "reminderId": item.id,
        "mode": item.mode.value,
        "position": position,
        **pending_row_fields(item.payload),
    }
