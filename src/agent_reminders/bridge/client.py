"""``BridgeClient``: an async JSON-RPC 2.0 client for the bridge (docs/bridge.md, "Client").

One client speaks to one server over one of three transports:

- WebSocket: ``BridgeClient.connect_ws(url, token)`` (the token goes in the
  ``Authorization: Bearer`` header, never in the URL; needs the ``bridge`` extra);
- stdio: ``BridgeClient.connect_stdio(argv)`` starts ``agent-reminders serve ...`` as a child
  process and speaks newline-delimited JSON-RPC on its stdin/stdout (its stderr is inherited
  unless told otherwise); ``BridgeClient.from_streams(receive, send)`` does the same on any pair
  of anyio byte streams;
- in process: ``BridgeClient.in_process(bridge)`` hands each frame to a ``Bridge``'s dispatcher
  in the calling task, with no socket and no child (the command line's ``--store`` mode).

There is no background task: whichever caller is waiting reads the next message and hands it to
its addressee (a reply to the request with that id, a notification to the buffer), so a client
works with or without ``async with`` and on any anyio backend. Concurrent requests on one client
are matched by id. Notifications the server sends (``session/update``,
``_session/reminder_emitted`` …) are buffered in arrival order and read through
:meth:`BridgeClient.notifications` (an async iterator) or :meth:`BridgeClient.take_notifications`
(what has arrived, without waiting); every notification of a prompt arrives before its reply.

An error reply raises :class:`~agent_reminders.bridge.RpcError` (``code``, ``message``,
``data``; an RMD code is ``data["code"]`` and ``rmd_code``), which is also the library's error
class of that RMD code (``except QueueError`` catches a refused revoke, ``except AuthorityError``
a reminder above the token's grant; see :func:`~agent_reminders.bridge.errors.refusal`). When
the connection closes, fails, or the client is closed, every request still waiting raises
:class:`~agent_reminders.BridgeConnectionError` (``RMD-110``): none is left hanging.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from .._core.errors import BridgeConnectionError
from .._core.fields import Authority
from .channels import (
    MAX_RECEIVE_BYTES,
    Channel,
    InProcessChannel,
    LineChannel,
    WebSocketChannel,
    open_websocket,
)
from .client_reminders import ReminderCalls
from .dispatcher import DEFAULT_MAX_FRAME_BYTES, encode
from .errors import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, RpcError, refusal

if TYPE_CHECKING:
    from .acp import Bridge

__all__ = ["BridgeClient", "Notification"]

log = logging.getLogger("agent_reminders.bridge.client")

# How long closing a stdio client waits for the server to finish before it is killed.
_STDIO_EXIT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification the server sent: ``method`` (``"session/update"`` …) and ``params``."""

    method: str
    params: Any


class _Slot:
    """One request waiting for its reply."""

    __slots__ = ("reply",)

    def __init__(self) -> None:
        self.reply: dict[str, Any] | None = None


def _rpc_error(error: object) -> RpcError:
    if not isinstance(error, Mapping):
        return RpcError(INTERNAL_ERROR, f"malformed error reply: {error!r}")
    code = error.get("code")
    message = error.get("message")
    data = error.get("data")
    return refusal(
        code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
        message if isinstance(message, str) else repr(message),
        dict(data) if isinstance(data, Mapping) else None if data is None else {"value": data},
    )


def _request_id(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Connecting:
    """What ``connect_ws`` / ``connect_stdio`` return: ``await`` it for a client, or use it
    as ``async with`` (the client is closed on exit)."""

    def __init__(self, opener: Callable[[], Awaitable[BridgeClient]]) -> None:
        self.opener = opener
        self.client: BridgeClient | None = None

    def __await__(self) -> Generator[Any, None, BridgeClient]:
        return self.opener().__await__()

    async def __aenter__(self) -> BridgeClient:
        self.client = await self.opener()
        return self.client

    async def __aexit__(self, *exc_info: object) -> None:
        if self.client is not None:
            await self.client.aclose()


class _NotificationIterator:
    def __init__(self, next_notification: Callable[[], Awaitable[Notification | None]]) -> None:
        self.next_notification = next_notification

    def __aiter__(self) -> _NotificationIterator:
        return self

    async def __anext__(self) -> Notification:
        found = await self.next_notification()
        if found is None:
            raise StopAsyncIteration
        return found


class BridgeClient(ReminderCalls):
    """An async JSON-RPC 2.0 client for ``agent-reminders serve`` (docs/bridge.md, "Client").

    Make one with :meth:`connect_ws`, :meth:`connect_stdio`, :meth:`from_streams` or
    :meth:`in_process`; it is an async context manager that closes on exit. ``request``
    sends any method; the other methods are the bridge's (docs/protocol.md, "Methods"), with
    snake_case Python arguments and the protocol's camelCase params on the wire.

    Attributes:
        max_frame_bytes: The largest frame this client sends; a larger request raises
            ``RpcError`` ``-32600`` without being sent (the server's own default limit).
        process: The ``serve`` child of :meth:`connect_stdio` (``None`` otherwise).

    Example:
        >>> import anyio
        >>> from agent_reminders.bridge import Bridge
        >>> from agent_reminders.storage import MemoryStore
        >>> async def main():
        ...     async with BridgeClient.in_process(Bridge(MemoryStore())) as client:
        ...         sid = await client.new_session()
        ...         rid = await client.remind("CI is red on main", session_id=sid, tags=["ci"])
        ...         return [row["reminderId"] == rid for row in await client.pending(sid)]
        >>> anyio.run(main)
        [True]
    """

    def __init__(
        self,
        channel: Channel,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        process: Process | None = None,
    ) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.process = process
        self._channel = channel
        self._channel_open = True
        self._next_id = 0
        self._waiting: dict[int, _Slot] = {}
        self._notes: deque[Notification] = deque()
        self._reading = False
        self._changed: anyio.Event | None = None
        self._send_lock: anyio.Lock | None = None
        self._closed: BridgeConnectionError | None = None

    # -- making one ---------------------------------------------------------------------------

    @classmethod
    def connect_ws(
        cls,
        url: str,
        token: str | None = None,
        *,
        origin: str | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        open_timeout: float = 10.0,
    ) -> _Connecting:
        """Connect to ``serve --ws`` at ``url`` (``ws://127.0.0.1:8765/``).

        ``token`` is sent as ``Authorization: Bearer <token>``; ``origin`` as the ``Origin``
        header (a non-browser client sends none). ``await`` the result, or use it with
        ``async with``.

        Raises:
            BridgeConnectionError: ``RMD-110`` — nothing listens there, the upgrade was
                refused (HTTP 401: no or a wrong token; 403: an Origin not allowed), or
                ``url`` is not a WebSocket URL.
            ImportError: ``websockets`` is missing (the ``bridge`` extra).
        """

        async def opener() -> BridgeClient:
            ws = await open_websocket(url, token, origin, open_timeout)
            return cls(WebSocketChannel(ws, url), max_frame_bytes=max_frame_bytes)

        return _Connecting(opener)

    @classmethod
    def connect_stdio(
        cls,
        command: str | Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr: int | IO[Any] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> _Connecting:
        """Start ``command`` (``["agent-reminders", "serve", "--store", ...]``; a string is
        split like a shell would, but no shell runs) and speak JSON-RPC on its stdin/stdout.

        Its stderr (the server's log) goes to this process's stderr unless ``stderr`` says
        otherwise (``subprocess.DEVNULL``, a file). Closing the client closes the child's
        stdin; the server finishes its running requests and exits (it is killed after
        10 seconds). ``await`` the result, or use it with ``async with``.

        Raises:
            BridgeConnectionError: ``RMD-110`` — the program cannot be started.
        """
        argv = shlex.split(command) if isinstance(command, str) else [os.fspath(a) for a in command]
        if not argv:
            raise ValueError("command must name the program to start (agent-reminders serve ...)")

        async def opener() -> BridgeClient:
            try:
                process = await anyio.open_process(argv, cwd=cwd, env=env, stderr=stderr)
            except OSError as exc:
                raise BridgeConnectionError(
                    f"cannot start the bridge {argv[0]!r}: {exc.strerror or exc}"
                ) from None
            assert process.stdin is not None
            assert process.stdout is not None

            async def stop() -> None:
                with anyio.move_on_after(_STDIO_EXIT_SECONDS):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                await process.aclose()

            channel = LineChannel(
                process.stdout,
                process.stdin,
                description=f"the bridge process {argv[0]!r} (pid {process.pid})",
                max_frame_bytes=MAX_RECEIVE_BYTES,
                on_close=stop,
            )
            return cls(channel, max_frame_bytes=max_frame_bytes, process=process)

        return _Connecting(opener)

    @classmethod
    def from_streams(
        cls,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> BridgeClient:
        """A client on a pair of anyio byte streams carrying newline-delimited JSON-RPC
        (``receive`` the server's output, ``send`` its input); closing the client closes
        both."""
        channel = LineChannel(
            receive,
            send,
            description="the bridge on the given streams",
            max_frame_bytes=MAX_RECEIVE_BYTES,
        )
        return cls(channel, max_frame_bytes=max_frame_bytes)

    @classmethod
    def in_process(
        cls, bridge: Bridge, *, grant: Authority | str = Authority.CONTRACT
    ) -> BridgeClient:
        """A client of ``bridge`` in this process: each request runs the bridge's own handler
        in the calling task, with reminder authority up to ``grant`` (``contract``, as over
        stdio). No socket, no child process — the command line's ``--store`` mode."""
        from .._core.fields import coerce_enum

        chosen = coerce_enum(Authority, grant, "grant")
        return cls(
            InProcessChannel(bridge, chosen), max_frame_bytes=bridge.settings.max_frame_bytes
        )

    async def __aenter__(self) -> BridgeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        """Whether the connection is gone (closed by either side, or failed)."""
        return self._closed is not None

    async def aclose(self) -> None:
        """Close the connection; requests still waiting raise ``BridgeConnectionError``.
        Closing twice is fine."""
        if self._closed is None:
            self._closed = BridgeConnectionError(
                f"the client of {self._channel.description} was closed"
            )
        self._wake()
        if self._channel_open:
            self._channel_open = False
            await self._channel.aclose()

    # -- JSON-RPC ----------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> Any:
        """Send one request and return its ``result``.

        Raises:
            RpcError: the server answered with an error (``code``, ``message``, ``data``).
            BridgeConnectionError: ``RMD-110`` — the connection closed before the reply.
        """
        self._next_id += 1
        rid = self._next_id
        frame = self._frame({"jsonrpc": "2.0", "id": rid, "method": method}, params)
        slot = _Slot()
        self._waiting[rid] = slot
        try:
            await self._send(frame, method)
            await self._pump(lambda: slot.reply is not None)
        finally:
            del self._waiting[rid]
        if slot.reply is None:
            lost = self._closed or BridgeConnectionError("the connection closed")
            raise BridgeConnectionError(f"no reply to {method} (id {rid}): {lost.message}")
        if "error" in slot.reply:
            raise _rpc_error(slot.reply["error"])
        return slot.reply.get("result")

    async def notify(
        self, method: str, params: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> None:
        """Send a notification (no reply comes, not even for an error)."""
        await self._send(self._frame({"jsonrpc": "2.0", "method": method}, params), method)

    def notifications(self) -> _NotificationIterator:
        """An async iterator over the server's notifications, in arrival order, waiting for
        the next one; it ends when the connection closes (after what was buffered).

        Notifications are kept from the moment the client connects, whether or not anyone
        iterates; a prompt's notifications all arrive before its reply, so after
        ``await client.prompt(...)`` they are already buffered (see
        :meth:`take_notifications`).
        """
        return _NotificationIterator(self._next_notification)

    def take_notifications(self) -> list[Notification]:
        """The notifications received so far and not yet read, without waiting."""
        taken = list(self._notes)
        self._notes.clear()
        return taken

    # -- the bridge's methods (docs/protocol.md, "Methods") --------------------------------------

    async def initialize(
        self,
        *,
        protocol_version: int = 1,
        client_capabilities: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``initialize`` → ``{protocolVersion, agentCapabilities, authMethods}``.

        Declare ``{"_meta": {"agent_reminders": {"reminder_emitted": True}}}`` in
        ``client_capabilities`` to get committed reminders as ``session/update`` notifications
        instead of ``_session/reminder_emitted``.
        """
        params = {
            "protocolVersion": protocol_version,
            "clientCapabilities": dict(client_capabilities or {}),
        }
        result: dict[str, Any] = await self.request("initialize", params)
        return result

    async def new_session(
        self,
        cwd: str | os.PathLike[str] | None = None,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        """``session/new`` → the new session's id (``cwd`` defaults to this process's)."""
        params = {
            "cwd": os.fspath(cwd or os.getcwd()),
            "mcpServers": [dict(m) for m in mcp_servers],
        }
        result = await self.request("session/new", params)
        return str(result["sessionId"])

    async def load_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        mcp_servers: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """``session/load``: the stored conversation arrives as ``session/update``
        notifications before this returns."""
        params = {
            "sessionId": session_id,
            "cwd": os.fspath(cwd or os.getcwd()),
            "mcpServers": [dict(m) for m in mcp_servers],
        }
        await self.request("session/load", params)

    async def prompt(self, session_id: str, prompt: str | Sequence[Mapping[str, Any]]) -> str:
        """``session/prompt`` → its ``stopReason`` (``end_turn``, ``max_turn_requests``,
        ``cancelled``, ``refusal``); a string is one text block."""
        blocks = (
            [{"type": "text", "text": prompt}]
            if isinstance(prompt, str)
            else [dict(b) for b in prompt]
        )
        result = await self.request("session/prompt", {"sessionId": session_id, "prompt": blocks})
        return str(result["stopReason"])

    async def cancel(self, session_id: str) -> None:
        """``session/cancel`` (a notification): the running prompt stops at its next seam."""
        await self.notify("session/cancel", {"sessionId": session_id})

    # -- reading and routing ---------------------------------------------------------------

    def _frame(self, message: dict[str, Any], params: object) -> str:
        if isinstance(params, Mapping):
            message["params"] = dict(params)
        elif isinstance(params, Sequence) and not isinstance(params, str | bytes):
            message["params"] = list(params)
        elif params is not None:
            raise TypeError(f"{message['method']}: params must be an object or an array")
        try:
            frame = encode(message)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{message['method']}: params are not JSON ({exc})") from None
        if len(frame) > self.max_frame_bytes:
            # the server could not say which request it refuses (its reply has id null)
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: frame of {len(frame)} bytes is over the limit of "
                f"{self.max_frame_bytes} bytes (not sent)",
            )
        return frame

    async def _send(self, frame: str, method: str) -> None:
        if self._closed is not None:
            raise BridgeConnectionError(f"cannot send {method}: {self._closed.message}")
        if self._send_lock is None:
            self._send_lock = anyio.Lock()
        try:
            async with self._send_lock:
                await self._channel.send(frame)
        except BridgeConnectionError as exc:
            self._fail(exc)
            raise

    def _fail(self, exc: BridgeConnectionError) -> None:
        if self._closed is None:
            self._closed = exc
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def _pump(self, done: Callable[[], bool]) -> None:
        """Read messages until ``done()`` or the connection is gone. One caller reads at a
        time; the others wait for each message to be routed and look again."""
        while not done() and self._closed is None:
            if self._reading:
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()
                continue
            self._reading = True
            try:
                text = await self._channel.receive()
            except BridgeConnectionError as exc:
                self._fail(exc)
                return
            finally:
                self._reading = False
                self._wake()
            answer = self._route(text)  # before anyone woken above runs: no await between
            if answer is not None:
                try:
                    await self._send(answer, "an error reply")
                except BridgeConnectionError:
                    return

    def _route(self, text: str) -> str | None:
        """Hand a message to its addressee; returns the reply to send for a request the
        server made (this client serves no methods)."""
        try:
            message = json.loads(text)
        except ValueError:
            log.warning("ignoring a frame from %s that is not JSON", self._channel.description)
            return None
        refused: list[dict[str, Any]] = []
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            method = item.get("method")
            if isinstance(method, str):
                if "id" in item:
                    refused.append(
                        {
                            "jsonrpc": "2.0",
                            "id": item["id"],
                            "error": {
                                "code": METHOD_NOT_FOUND,
                                "message": f"Method not found: {method}",
                            },
                        }
                    )
                else:
                    self._notes.append(Notification(method=method, params=item.get("params")))
                continue
            rid = _request_id(item.get("id"))
            if rid is None and "error" in item:
                # the server could not tell which request this answers: every request
                # still waiting gets it rather than waiting for ever
                for waiting in self._waiting.values():
                    waiting.reply = waiting.reply or item
                continue
            slot = self._waiting.get(rid) if rid is not None else None
            if slot is None:
                log.debug("dropping a reply to id %r: nobody waits for it", item.get("id"))
                continue
            slot.reply = item
        if not refused:
            return None
        return encode(refused[0] if len(refused) == 1 else refused)

    async def _next_notification(self) -> Notification | None:
        await self._pump(lambda: bool(self._notes))
        return self._notes.popleft() if self._notes else None
