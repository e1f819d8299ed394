"""One ``session/prompt``: ``agent_loop`` on a stored session, streamed as ``session/update``.

The model is wrapped: before each request goes out the session is saved (so what the seams
drained is marked delivered in the store), the directives committed into it are announced
(``reminder_emitted``) and the tool results of the previous step are reported; after the model
answers, the request is appended to the request log (with the time it was sent, the model and
the answer's usage; a call that raised is logged without usage), what another process queued
for the session meanwhile is picked up from the store (so the next seam delivers it), and the
answer's text and tool calls are streamed.
Every notification is awaited before the prompt's response is returned.

A save that fails (Redis restarting, a locked file) is tried again, waiting a little longer each
time, for up to :data:`SAVE_RETRY_SECONDS` (and half the lease, so the worker still holds the
session when it writes); the directives of the request are announced once a save has worked,
so each is announced exactly once even when the failed write had in fact landed. When the store
stays down longer, the prompt ends with an error; if its last save still lands, the directives
it committed are announced before that error. A failed pick-up after an answer is only logged:
the answer is kept, and the watcher or the next answer picks up what was missed.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from .._core.errors import AgentRemindersError, StoreError
from .._core.events import EventRecord, Kind
from .._core.fields import FIELDS
from .._core.records import Reminder
from .._core.request import ModelInfo, ModelRequest, ModelResponse, ToolCall, ToolResult
from ..hooks import Hooks
from ..loop.run import agent_loop
from ..session import Session
from .connection import Connection
from .live import LivePrompt
from .request_log import append_request, utc_timestamp
from .updates import tool_call_update, tool_result_update

if TYPE_CHECKING:
    from .acp import Bridge

__all__ = ["STOP_REASONS", "PromptRun"]

log = logging.getLogger("agent_reminders.bridge")
# how long a prompt keeps trying to save while the store fails (at most half the lease: past
# the lease another worker may own the session), and the first and the longest pause between
# two tries
SAVE_RETRY_SECONDS = 10.0
SAVE_PAUSE_SECONDS = (0.05, 1.0)

STOP_REASONS = {
    "completed": "end_turn",
    "max_iterations": "max_turn_requests",
    "cancelled": "cancelled",
}


# the reminder fields of an emitted notification, camelCase and in their JSON form, taken from
# the field table (the id travels as reminderId; the role it was rendered in sits among them)
_BY_NAME = {f.name: f for f in FIELDS}
_EMITTED_HEAD = tuple(_BY_NAME[n] for n in ("tags", "body", "role_hint", "authority"))
_EMITTED_TAIL = tuple(_BY_NAME[n] for n in ("source", "ttl_turns"))


def _emitted(reminder: Reminder, role: str) -> dict[str, Any]:
    wire = reminder.to_dict()
    return {
        "reminderId": reminder.id,
        **{f.camel: wire.get(f.name) for f in _EMITTED_HEAD},
        "renderedRole": role,
        **{f.camel: wire.get(f.name) for f in _EMITTED_TAIL},
    }


class PromptRun:
    """The state of one prompt: what was announced and what is still to report."""

    def __init__(
        self, bridge: Bridge, session: Session, live: LivePrompt, connection: Connection
    ) -> None:
        self.bridge = bridge
        self.session = session
        self.live = live
        self.connection = connection
        self.fired: list[tuple[str, str]] = []  # (reminder id, the channel it went on)
        self.open_calls: dict[str, ToolCall] = {}
        self.results: dict[str, ToolResult] = {}
        self._failing_since: float | None = None  # when the saves started failing

    async def update(self, update: dict[str, Any]) -> None:
        await self.connection.notify(
            "session/update", {"sessionId": self.session.id, "update": update}
        )

    def _on_fired(self, record: EventRecord) -> None:
        rid = record.payload.get("reminder_id")
        if isinstance(rid, str):
            self.fired.append((rid, str(record.payload.get("rendered_role", "user"))))

    def _on_tool(self, call: ToolCall, result: ToolResult) -> None:
        self.results[call.id] = result

    async def flush(self) -> None:
        """Report finished tools and newly committed directives."""
        for call_id in list(self.open_calls):
            result = self.results.pop(call_id, None)
            if result is None:  # never dispatched (an interrupt or a cancel skipped it)
                text = self._tool_text(call_id)
                await self.update(tool_result_update(call_id, False, text))
            else:
                await self.update(tool_result_update(call_id, result.ok, result.content))
            del self.open_calls[call_id]
        await self._announce_fired()

    async def _announce_fired(self) -> None:
        """Announce the directives committed since the last announcement (call it only once
        they are saved)."""
        if self.fired:
            by_id = {r.id: r for r in self.session.transcript.reminders}
            fired, self.fired = self.fired, []
            for rid, role in fired:
                reminder = by_id.get(rid)
                if reminder is not None:
                    await self._announce(reminder, role)

    async def save(self) -> None:
        """Save the session, trying again while the store fails (see the module's text).

        Raises:
            StoreError: the store still failed when the time to try again ran out, or the
                prompt was cancelled meanwhile (perhaps because the lease was lost).
        """
        window = min(SAVE_RETRY_SECONDS, self.bridge.settings.lease_seconds / 2)
        pause, longest = SAVE_PAUSE_SECONDS
        while True:
            try:
                await self.bridge.store.save_session(self.session.state())
            except StoreError as exc:
                now = anyio.current_time()
                if self._failing_since is None:
                    self._failing_since = now
                    log.warning(
                        "session %s: saving failed, trying again for up to %.1f s: %s",
                        self.session.id,
                        window,
                        exc,
                    )
                if now - self._failing_since >= window or self.live.cancel.is_set():
                    raise
                await anyio.sleep(pause)
                pause = min(pause * 2, longest)
            else:
                if self._failing_since is not None:
                    log.warning("session %s: saved again; the store answers", self.session.id)
                    self._failing_since = None
                return

    def _tool_text(self, call_id: str) -> str:
        for message in reversed(self.session.transcript.messages):
            if message["role"] == "tool" and message.get("tool_call_id") == call_id:
                content = message.get("content")
                return content if isinstance(content, str) else ""
        return ""

    async def _announce(self, reminder: Reminder, role: str) -> None:
        body = _emitted(reminder, role)
        if self.connection.emitted_as_update:
            await self.update(
                {
                    "sessionUpdate": "reminder_emitted",
                    "_meta": {"agent_reminders": {"reminder": body}},
                }
            )
        else:
            await self.connection.notify(
                "_session/reminder_emitted", {"sessionId": self.session.id, "reminder": body}
            )

    async def model(self, request: ModelRequest) -> ModelResponse:
        """The configured model, with saving, logging and streaming around it."""
        bridge = self.bridge
        assert bridge.model is not None
        await self.save()
        await self.flush()
        log_path = bridge.settings.request_log
        if log_path is None:
            response = await bridge.model(request)
        else:
            sent = utc_timestamp(datetime.now(UTC))
            name = getattr(bridge.model, "name", None)
            model = name if isinstance(name, str) else None
            try:
                response = await bridge.model(request)
            except Exception:  # a failed call is logged too (without usage); the error goes on
                await append_request(log_path, request, model=model, timestamp=sent)
                raise
            usage = response.usage if isinstance(response, ModelResponse) else None
            await append_request(log_path, request, model=model, usage=usage, timestamp=sent)
        try:
            await self.live.pick_up(bridge.store)
        except AgentRemindersError as exc:  # the answer is kept; the watcher tries again
            log.warning("session %s: picking up from the store failed: %s", self.session.id, exc)
        message = response.message if isinstance(response, ModelResponse) else None
        if message is not None:
            content = message.get("content")
            if isinstance(content, str) and content:
                await self.update(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": content},
                    }
                )
            for call in message.get("tool_calls") or ():
                self.open_calls[call["id"]] = ToolCall(
                    id=call["id"], name=call["name"], arguments=dict(call["arguments"])
                )
                await self.update(
                    tool_call_update(call["id"], call["name"], dict(call["arguments"]))
                )
        return response

    async def run(self, task: str | list[dict[str, Any]]) -> str:
        """Run the loop; returns the ACP ``stopReason``."""
        hooks = Hooks()
        hooks.tool("*", post=self._on_tool)
        info = getattr(self.bridge.model, "model_info", None)
        if isinstance(info, ModelInfo):  # the loop sees this wrapper, not the model itself
            self.session.model = info
        unsubscribe = self.session.event_log.subscribe(self._on_fired, kind_prefix=Kind.FIRED)
        try:
            result = await agent_loop(
                self.model,
                task,
                session=self.session,
                hooks=hooks,
                max_iterations=self.bridge.settings.max_iterations,
                cancel=self.live.cancel,
            )
            await self.flush()
        finally:
            unsubscribe()
            await self.save()
            # reached after a failure too: directives of a request whose save failed are
            # durable now, and are announced before the prompt's (error) reply
            await self._announce_fired()
        return STOP_REASONS[result.status]
