"""The client's side of the bridge transports (docs/protocol.md, "Transports"): whole JSON-RPC
frames in and out.

``BridgeClient`` speaks through one :class:`Channel`: a WebSocket connection, newline-delimited
lines on a pair of byte streams (a ``serve`` child's stdout and stdin), or a ``Bridge`` in the
same process. ``receive`` raises ``BridgeConnectionError`` (``RMD-110``) once the other side is
gone, so the client never waits on a dead connection.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

from .._core.errors import BridgeConnectionError, missing_extra
from .._core.fields import Authority
from .connection import Connection
from .dispatcher import Dispatcher, encode

if TYPE_CHECKING:
    from .acp import Bridge

__all__ = [
    "MAX_RECEIVE_BYTES",
    "Channel",
    "InProcessChannel",
    "LineChannel",
    "WebSocketChannel",
    "open_websocket",
]

# Replies can be far larger than requests (a pending list of 1,000 items of 16 KiB bodies):
# a client accepts frames up to this size; what it sends stays under the server's 1 MiB.
MAX_RECEIVE_BYTES = 64 * 1024 * 1024


class Channel(Protocol):
    """Whole frames of JSON text in and out; ``receive`` raises ``BridgeConnectionError`` once
    the other side is gone."""

    description: str

    async def send(self, text: str) -> None: ...

    async def receive(self) -> str: ...

    async def aclose(self) -> None: ...


class WebSocketChannel:
    """One JSON-RPC message per text frame on an open ``websockets`` client connection."""

    def __init__(self, ws: Any, url: str) -> None:
        from websockets.exceptions import ConnectionClosed

        self.ws = ws
        self.description = f"the bridge at {url}"
        self.closed_errors: tuple[type[BaseException], ...] = (ConnectionClosed,)

    def _lost(self, exc: BaseException) -> BridgeConnectionError:
        return BridgeConnectionError(f"the connection to {self.description} closed ({exc})")

    async def send(self, text: str) -> None:
        try:
            await self.ws.send(text)
        except self.closed_errors as exc:
            raise self._lost(exc) from None

    async def receive(self) -> str:
        try:
            frame = await self.ws.recv()
        except self.closed_errors as exc:
            raise self._lost(exc) from None
        return frame if isinstance(frame, str) else bytes(frame).decode("utf-8", "replace")

    async def aclose(self) -> None:
        await self.ws.close()


class LineChannel:
    """Newline-delimited frames on a pair of byte streams (a child's stdout and stdin)."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        description: str,
        max_frame_bytes: int,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.reader = BufferedByteReceiveStream(receive)
        self.raw_reader = receive
        self.writer = send
        self.description = description
        self.max_frame_bytes = max_frame_bytes
        self.on_close = on_close

    async def send(self, text: str) -> None:
        try:
            await self.writer.send(text.encode("utf-8") + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise BridgeConnectionError(
                f"cannot write to {self.description}: it has closed its input ({exc!r})"
            ) from None

    async def receive(self) -> str:
        while True:
            try:
                line = await self.reader.receive_until(b"\n", self.max_frame_bytes)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                raise BridgeConnectionError(f"{self.description} closed its output") from None
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise BridgeConnectionError(
                    f"the connection to {self.description} is closed"
                ) from None
            except anyio.DelimiterNotFound:
                raise BridgeConnectionError(
                    f"{self.description} sent a line over {self.max_frame_bytes} bytes"
                ) from None
            if line.strip():
                return line.decode("utf-8", "replace")

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await self.writer.aclose()
            if self.on_close is not None:
                await self.on_close()
            await self.raw_reader.aclose()


class InProcessChannel:
    """Frames handed to a ``Bridge``'s dispatcher in the caller's task."""

    def __init__(self, bridge: Bridge, grant: Authority) -> None:
        self.description = "the in-process bridge"
        self.dispatcher = Dispatcher(
            bridge.methods, max_frame_bytes=bridge.settings.max_frame_bytes
        )
        self.inbox_in, self.inbox = anyio.create_memory_object_stream[str](math.inf)
        self.connection = Connection(notify=self._notify, grant=grant)
        self.closed = False

    def _put(self, text: str) -> None:
        try:
            self.inbox_in.send_nowait(text)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise BridgeConnectionError(f"{self.description} is closed") from None

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        self._put(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    async def send(self, text: str) -> None:
        if self.closed:
            raise BridgeConnectionError(f"{self.description} is closed")
        reply = await self.dispatcher.handle_frame(text, self.connection)
        if reply is not None:
            self._put(reply)

    async def receive(self) -> str:
        try:
            return await self.inbox.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise BridgeConnectionError(f"{self.description} is closed") from None

    async def aclose(self) -> None:
        self.closed = True
        self.inbox_in.close()
        self.inbox.close()


async def open_websocket(
    url: str, token: str | None, origin: str | None, open_timeout: float
) -> Any:
    """Open a WebSocket to ``url`` with ``Authorization: Bearer <token>`` (when given).

    Raises:
        BridgeConnectionError: ``RMD-110`` with ``status`` 401 or 403 for a refused upgrade,
            or naming why nothing could be reached.
    """
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, InvalidURI, WebSocketException
    except ImportError:  # pragma: no cover - depends on the environment
        raise missing_extra("websockets", "bridge", "BridgeClient.connect_ws") from None
    headers = None if token is None else {"Authorization": f"Bearer {token}"}
    try:
        return await connect(
            url,
            additional_headers=headers,
            origin=origin,  # type: ignore[arg-type]
            max_size=MAX_RECEIVE_BYTES,
            open_timeout=open_timeout,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        why = _REFUSED.get(status, "the server refused the WebSocket upgrade")
        raise BridgeConnectionError(
            f"the bridge at {url} answered HTTP {status}: {why}", status=status
        ) from None
    except InvalidURI as exc:
        raise BridgeConnectionError(
            f"{url!r} is not a WebSocket URL (ws://HOST:PORT/): {exc}"
        ) from None
    except (OSError, TimeoutError, WebSocketException) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise BridgeConnectionError(f"cannot connect to the bridge at {url}: {reason}") from None


_REFUSED = {
    401: "no bearer token, or not one of the server's tokens",
    403: "the Origin header is not in the server's allowed_origins",
}
