"""docs/protocol.md is replayed against real servers: a doc example that drifts from the code
fails here.

The page's conventions (explained at its top, "How to read the examples"):

- ```` ```console server ```` — ``$ agent-reminders serve …`` lines start the servers the
  examples that follow talk to (a new such block starts a new scene: the previous servers
  stop). Each runs in process, built from the same parts ``serve`` uses (``load_settings``,
  ``parse_model_spec``, ``open_store``, ``Bridge``, ``serve_stdio`` on real pipes, ``serve_ws``
  on a real socket); the flags are checked against the real ``serve`` command.
- ```` ```LANG file=NAME ```` — a file written into the servers' working directory first.
- ```` ```json request ```` — one or more JSON values, each sent as one frame (compact, one
  line on stdio); ```` ```text request ```` sends each line as is (malformed frames).
  ``ws=ENV`` sends over a new WebSocket connection with the token of ``$ENV``; ``hold``
  holds the model's answers until a ``released`` response block (and waits until a request
  has reached the model, so the prompt is running when the next block is sent).
- ```` ```json response ```` — every message the server sends next on that connection, in
  order; ```` ```text close ```` — the server closes the WebSocket with that code.
- ```` ```http request ```` / ```` ```http response ```` — a raw WebSocket upgrade attempt
  (``$ENV`` is the token) and the answer (status line, the headers shown, body).
- ``<name>`` placeholders, alone or inside a string, match volatile values (ids, the
  version, the worker, ``"<ms>"`` a wait).

Nothing unshown may be sent: after a request block of notifications only, and at the end of
every scene, a round trip proves no reply is pending.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shlex
import threading
import tomllib
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer.main
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

import agent_reminders
from agent_reminders.bridge import Bridge, load_settings
from agent_reminders.bridge import errors as rpc_errors
from agent_reminders.bridge.lease import new_worker_id
from agent_reminders.bridge.stdio import serve_stdio
from agent_reminders.bridge.ws import serve_ws
from agent_reminders.cli import app
from agent_reminders.cli.serve import DEFAULT_STORE
from agent_reminders.models import parse_model_spec
from agent_reminders.storage import open_store

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocol.md"
TIMEOUT = 20.0
ROLES = ("request", "response", "server", "close")

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------- the page


@dataclass(frozen=True)
class Block:
    """One fenced block: ``lang`` and the other words of its info string."""

    line: int
    lang: str
    words: tuple[str, ...]
    text: str

    @property
    def role(self) -> str | None:
        return next((w for w in self.words if w in ROLES), None)

    def attr(self, key: str) -> str | None:
        prefix = key + "="
        return next((w[len(prefix) :] for w in self.words if w.startswith(prefix)), None)

    def has(self, word: str) -> bool:
        return word in self.words

    def __str__(self) -> str:
        return f"docs/protocol.md line {self.line} ({self.lang} {' '.join(self.words)})"


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a page, in order."""
    out: list[Block] = []
    lines = text.split("\n")
    start: int | None = None
    info = ""
    for number, line in enumerate(lines, start=1):
        if start is None and line.startswith("```"):
            start, info = number, line[3:].strip()
        elif start is not None and line.strip() == "```":
            lang, *words = info.split() or [""]
            out.append(Block(start, lang, tuple(words), "\n".join(lines[start : number - 1])))
            start = None
    assert start is None, f"docs/protocol.md: the block opened on line {start} is not closed"
    return out


def json_values(block: Block) -> list[Any]:
    """The JSON values of a block, one after the other (pretty-printed or one a line)."""
    decoder = json.JSONDecoder()
    text, at = block.text, 0
    values: list[Any] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError as exc:
            raise AssertionError(f"{block}: not a sequence of JSON values: {exc}") from None
        values.append(value)


def commands(block: Block) -> list[list[str]]:
    """The ``$ …`` command lines of a console block (``\\`` continues a line)."""
    out: list[list[str]] = []
    current: str | None = None
    for line in block.text.split("\n"):
        if current is None and not line.startswith("$ "):
            continue
        part = line[2:] if current is None else line
        current = (current or "") + part.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            out.append(shlex.split(current))
            current = None
    return out


PAGE = DOC.read_text(encoding="utf-8")
BLOCKS = blocks(PAGE)


# --------------------------------------------------------------------------- placeholders

PLACEHOLDER = re.compile(r"<([A-Za-z][A-Za-z0-9]*)>")
# the bridge's ids are uuid4 hex; the library's own reminders have UUIDv7 ids
RANDOM_ID = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Bindings:
    """What the placeholders stand for: ``<version>`` and ``<owner>`` are fixed, ``"<ms>"`` is
    any positive integer, every other ``<name>`` is a random id (32 hex digits, or a UUID)
    bound where it first appears in a response and the same wherever it appears again. A
    placeholder may also sit inside a longer string (an error message naming a session)."""

    def __init__(self) -> None:
        # every server of a scene runs under this worker id (HOST:PID:RANDOM)
        owner = new_worker_id()
        self.fixed: dict[str, str] = {"version": agent_reminders.__version__, "owner": owner}
        self.ids: dict[str, str] = {}

    def fill(self, value: Any, where: Block) -> Any:
        """A documented request with its placeholders replaced by what they stand for."""
        if isinstance(value, dict):
            return {k: self.fill(v, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v, where) for v in value]
        if not isinstance(value, str):
            return value

        def known(found: re.Match[str]) -> str:
            name = found.group(1)
            known = self.fixed.get(name, self.ids.get(name))
            assert known is not None, f"{where}: <{name}> is used before a response shows it"
            return known

        return PLACEHOLDER.sub(known, value)

    def _pattern(self, doc: str) -> tuple[re.Pattern[str], dict[str, str]]:
        parts: list[str] = []
        groups: dict[str, str] = {}  # an unbound name -> its group
        at = 0
        for found in PLACEHOLDER.finditer(doc):
            parts.append(re.escape(doc[at : found.start()]))
            name = found.group(1)
            bound = self.fixed.get(name, self.ids.get(name))
            if bound is not None:
                parts.append(re.escape(bound))
            elif name in groups:
                parts.append(f"(?P={groups[name]})")
            else:
                groups[name] = f"g{len(groups)}"
                parts.append(f"(?P<{groups[name]}>{RANDOM_ID.pattern})")
            at = found.end()
        parts.append(re.escape(doc[at:]))
        return re.compile("".join(parts)), groups

    def match(self, doc: Any, actual: Any, path: str, problems: list[str]) -> None:
        """Compare a documented value with the actual one, binding ids on the way."""
        if doc == "<ms>":
            if not (type(actual) is int and actual > 0):
                problems.append(f"{path}: <ms> stands for a positive integer; got {actual!r}")
        elif isinstance(doc, str) and PLACEHOLDER.search(doc):
            pattern, groups = self._pattern(doc)
            found = pattern.fullmatch(actual) if isinstance(actual, str) else None
            if found is None:
                problems.append(f"{path}: {doc!r} documented, {actual!r} sent")
                return
            for name, group in groups.items():
                value = found.group(group)
                if value in self.ids.values():
                    problems.append(f"{path}: <{name}> is {value!r}, another name's id already")
                self.ids[name] = value
        elif isinstance(doc, dict) and isinstance(actual, dict):
            if list(doc) != list(actual):
                problems.append(f"{path}: keys {list(doc)} documented, {list(actual)} sent")
            for key in doc.keys() & actual.keys():
                self.match(doc[key], actual[key], f"{path}.{key}", problems)
        elif isinstance(doc, list) and isinstance(actual, list):
            if len(doc) != len(actual):
                problems.append(f"{path}: {len(doc)} items documented, {len(actual)} sent")
            for index, (d, a) in enumerate(zip(doc, actual, strict=False)):
                self.match(d, a, f"{path}[{index}]", problems)
        elif type(doc) is not type(actual) or doc != actual:
            problems.append(f"{path}: {doc!r} documented, {actual!r} sent")


# --------------------------------------------------------------------------- servers


class Gate:
    """The configured model, whose answers a ``hold`` request block holds back until a
    ``released`` response block: the prompt is then still running, deterministically."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.opened: anyio.Event | None = None
        self.entered = anyio.Event()

    def hold(self) -> None:
        self.opened = anyio.Event()
        self.entered = anyio.Event()

    async def reached(self, where: Block) -> None:
        """Wait until a request is at the model (the prompt got that far)."""
        try:
            with anyio.fail_after(TIMEOUT):
                await self.entered.wait()
        except TimeoutError:
            raise AssertionError(f"{where}: no model request within {TIMEOUT} s") from None

    def release(self) -> None:
        if self.opened is not None:
            self.opened.set()
        self.opened = None

    async def __call__(self, request: Any) -> Any:
        opened = self.opened
        if opened is not None:
            self.entered.set()
            await opened.wait()
        return await self.model(request)


class Conn:
    """A client connection: frames out, messages in."""

    closed_with: int | None = None

    async def send(self, frame: str) -> None:
        raise NotImplementedError

    async def receive(self) -> Any:
        raise NotImplementedError


class StdioConn(Conn):
    """``serve_stdio`` on two real pipes: lines in, lines out."""

    def __init__(self) -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        self.server_in = open(in_r, "rb")  # noqa: SIM115 - closed by close()
        self.client_out = open(in_w, "wb")  # noqa: SIM115
        self.server_out = open(out_w, "wb")  # noqa: SIM115
        self.client_in = open(out_r, "rb")  # noqa: SIM115
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.done = anyio.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        with self.client_in:
            for line in self.client_in:
                self.lines.put(line)
        self.lines.put(b"")

    async def serve(self, bridge: Bridge) -> None:
        try:
            await serve_stdio(bridge, stdin=self.server_in, stdout=self.server_out)
        finally:
            self.server_out.close()
            self.server_in.close()
            self.done.set()

    def _write(self, data: bytes) -> None:
        self.client_out.write(data)
        self.client_out.flush()

    async def send(self, frame: str) -> None:
        await anyio.to_thread.run_sync(self._write, frame.encode("utf-8") + b"\n")

    def _get(self) -> bytes:
        try:
            return self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"stdio: nothing sent within {TIMEOUT} s") from None

    async def receive(self) -> Any:
        line = await anyio.to_thread.run_sync(self._get)
        assert line.endswith(b"\n"), f"stdio: the server's output ended ({line!r})"
        return json.loads(line)

    def end_input(self) -> None:
        """Close the server's stdin: it finishes what runs and returns."""
        if not self.client_out.closed:
            self.client_out.close()


class WsConn(Conn):
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, frame: str) -> None:
        await self.ws.send(frame)

    async def receive(self) -> Any:
        with anyio.fail_after(TIMEOUT):
            return json.loads(await self.ws.recv())


@dataclass
class Server:
    bridge: Bridge
    gate: Gate | None
    port: int | None = None  # WebSocket only


SERVE_FLAGS = {"--store", "--model", "--config", "--ws", "--max-iterations", "--request-log"}


def serve_options(argv: list[str], where: Block) -> argparse.Namespace:
    """The flags of a documented ``agent-reminders serve`` line."""
    assert argv[:2] == ["agent-reminders", "serve"], f"{where}: not a serve command: {argv}"
    real = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    known = {opt for param in real.params for opt in param.opts}
    parser = argparse.ArgumentParser(prog="serve", add_help=False)
    parser.add_argument("--store", default=DEFAULT_STORE)
    parser.add_argument("--model")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--ws")
    parser.add_argument("--max-iterations", type=int)
    parser.add_argument("--request-log", type=Path)
    options, rest = parser.parse_known_args(argv[2:])
    assert not rest, f"{where}: flags the test does not handle: {rest}"
    used = {a.split("=", 1)[0] for a in argv[2:] if a.startswith("--")}
    assert used <= known & SERVE_FLAGS, f"{where}: serve has no {sorted(used - known)}"
    return options


@dataclass
class Scene:
    """The servers of one ``console server`` block and the connections to them."""

    stack: AsyncExitStack
    tg: Any
    bindings: Bindings
    tokens: dict[str, str]
    stdio: tuple[Server, StdioConn] | None = None
    ws: Server | None = None
    conns: list[Conn] = field(default_factory=list)
    registered: set[str] = field(default_factory=set)
    syncs: int = 0

    async def start(self, argv: list[str], where: Block) -> None:
        options = serve_options(argv, where)
        settings = load_settings(
            options.config,
            max_iterations=options.max_iterations,
            request_log=options.request_log,
        )
        model = None if options.model is None else Gate(parse_model_spec(options.model))
        store = await self.stack.enter_async_context(await open_store(options.store))
        owner = self.bindings.fixed["owner"]
        server = Server(Bridge(store, model=model, settings=settings, worker_id=owner), model)
        self.registered |= set(server.bridge.methods)
        if options.ws is None:
            assert self.stdio is None, f"{where}: two stdio servers in one scene"
            conn = StdioConn()
            self.tg.start_soon(conn.serve, server.bridge)
            self.stdio = (server, conn)
            self.conns.append(conn)
        else:
            assert self.ws is None, f"{where}: two WebSocket servers in one scene"
            host = options.ws.rpartition(":")[0] or "127.0.0.1"
            ready = anyio.Event()

            def on_ready(port: int) -> None:
                server.port = port
                ready.set()

            self.tg.start_soon(lambda: serve_ws(server.bridge, host, 0, ready=on_ready))
            with anyio.fail_after(TIMEOUT):
                await ready.wait()
            self.ws = server

    def server_of(self, block: Block) -> Server:
        if block.attr("ws") is None:
            assert self.stdio is not None, f"{block}: no stdio server in this scene"
            return self.stdio[0]
        assert self.ws is not None, f"{block}: no WebSocket server in this scene"
        return self.ws

    async def connect(self, block: Block) -> Conn:
        token_env = block.attr("ws")
        if token_env is None:
            assert self.stdio is not None, f"{block}: no stdio server in this scene"
            return self.stdio[1]
        assert token_env in self.tokens, f"{block}: ${token_env} is no token_env of a config"
        port = self.server_of(block).port
        ws = await self.stack.enter_async_context(
            connect(
                f"ws://127.0.0.1:{port}/",
                additional_headers={"Authorization": f"Bearer {self.tokens[token_env]}"},
                max_size=None,
            )
        )
        conn = WsConn(ws)
        self.conns.append(conn)
        return conn

    async def sync(self, conn: Conn, where: str) -> None:
        """A round trip: the next message must be its reply (nothing unshown is pending)."""
        self.syncs += 1
        sync_id = f"sync-{self.syncs}"
        await conn.send(json.dumps({"jsonrpc": "2.0", "id": sync_id, "method": "sync/check"}))
        reply = await conn.receive()
        unshown = f"{where}: the server sent a message the page does not show:\n{pretty(reply)}"
        assert isinstance(reply, dict), unshown
        assert reply.get("id") == sync_id, unshown

    async def check_quiet(self) -> None:
        """The end of a scene: no connection has a message the page does not show."""
        for conn in self.conns:
            if conn.closed_with is None:
                await self.sync(conn, "end of scene")

    def shut_down(self) -> None:
        """Let everything end, also after a failure: held models answer, stdin ends."""
        for server in (self.ws, None if self.stdio is None else self.stdio[0]):
            if server is not None and server.gate is not None:
                server.gate.release()
        if self.stdio is not None:
            self.stdio[1].end_input()


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def is_notification(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(is_notification(v) for v in value)
    return isinstance(value, dict) and "id" not in value


async def http_exchange(port: int, request: str) -> tuple[str, dict[str, str], str]:
    """Send a raw HTTP request; the response's status line, headers and body."""
    raw = request.strip("\n").replace("\n", "\r\n") + "\r\n\r\n"
    chunks: list[bytes] = []
    with anyio.fail_after(TIMEOUT):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(raw.encode("latin-1"))
            while True:  # to the end; an upgraded connection only to the end of its head
                data = b"".join(chunks)
                if data.startswith(b"HTTP/1.1 101 ") and b"\r\n\r\n" in data:
                    break
                try:
                    chunks.append(await stream.receive())
                except anyio.EndOfStream:
                    break
    return parse_http(b"".join(chunks).decode("latin-1").replace("\r\n", "\n"))


def parse_http(text: str) -> tuple[str, dict[str, str], str]:
    head, _, body = text.partition("\n\n")
    status, *lines = head.split("\n")
    headers = {}
    for line in filter(None, lines):
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers, body


def token_envs(blocks: list[Block]) -> dict[str, str]:
    """A token for every ``token_env`` the page's config files name."""
    names: set[str] = set()
    for block in blocks:
        if block.lang == "toml":
            for entry in tomllib.loads(block.text).get("tokens", []):
                if "token_env" in entry:
                    names.add(entry["token_env"])
    return {name: name.lower().replace("_", "-") + "-0123456789abcdef" for name in names}


# --------------------------------------------------------------------------- replay


@asynccontextmanager
async def scene(bindings: Bindings, tokens: dict[str, str]) -> AsyncIterator[Scene]:
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        current = Scene(stack, tg, bindings, tokens)
        try:
            yield current
            await current.check_quiet()
        finally:
            current.shut_down()
            if current.stdio is not None:
                with anyio.move_on_after(TIMEOUT):
                    await current.stdio[1].done.wait()
            tg.cancel_scope.cancel()  # the WebSocket server runs until cancelled


def scenes(blocks: list[Block]) -> Iterator[tuple[Block, list[Block]]]:
    """Each ``console server`` block with the protocol blocks up to the next one."""
    start: Block | None = None
    body: list[Block] = []
    for block in blocks:
        if block.lang == "console" and block.role == "server":
            if start is not None:
                yield start, body
            start, body = block, []
        elif block.role is not None or block.lang == "http":
            assert start is not None, f"{block}: an example before any console server block"
            body.append(block)
    if start is not None:
        yield start, body


class Replay:
    """Runs the page: every example block against the servers of its scene."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = tokens
        self.bindings = Bindings()
        self.sent_methods: set[str] = set()
        self.registered: set[str] = set()
        self.error_codes: set[int] = set()
        self.rmd_codes: set[str] = set()
        self.checked = 0

    async def run(self, blocks: list[Block]) -> None:
        for start, body in scenes(blocks):
            async with scene(self.bindings, self.tokens) as current:
                for argv in commands(start):
                    await current.start(argv, start)
                await self.play(current, body)
                self.registered |= current.registered

    async def play(self, current: Scene, body: list[Block]) -> None:
        conn: Conn | None = None
        held: tuple[Conn, Gate] | None = None
        http_reply: tuple[str, dict[str, str], str] | None = None
        for block in body:
            if block.role == "request" and block.lang in ("json", "text"):
                conn = await current.connect(block)
                if block.has("hold"):
                    gate = current.server_of(block).gate
                    assert gate is not None, f"{block}: hold needs a server with a model"
                    gate.hold()
                    held = (conn, gate)
                await self.send(current, conn, block)
                if held is not None and held[0] is conn and block.has("hold"):
                    await held[1].reached(block)
            elif block.role == "response" and block.lang == "json":
                if block.has("released"):
                    assert held is not None, f"{block}: released, but nothing is held"
                    conn, gate = held
                    gate.release()
                    held = None
                assert conn is not None, f"{block}: a response before any request"
                await self.expect(conn, block)
            elif block.role == "close":
                assert isinstance(conn, WsConn), f"{block}: close needs a WebSocket request"
                await self.expect_close(conn, block)
            elif block.lang == "http" and block.role == "request":
                server = current.ws
                assert server is not None, f"{block}: no WebSocket server in this scene"
                assert server.port is not None
                text = block.text
                for name, value in self.tokens.items():
                    text = text.replace("$" + name, value)
                http_reply = await http_exchange(server.port, text)
            elif block.lang == "http" and block.role == "response":
                assert http_reply is not None, f"{block}: an http response before a request"
                self.expect_http(http_reply, block)
                http_reply = None
            else:
                raise AssertionError(f"{block}: not an example block this test knows")

    async def send(self, current: Scene, conn: Conn, block: Block) -> None:
        if block.lang == "text":
            frames = [line for line in block.text.split("\n") if line.strip()]
            notifications = False
        else:
            values = [self.bindings.fill(v, block) for v in json_values(block)]
            for value in values:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, dict) and isinstance(item.get("method"), str):
                        self.sent_methods.add(item["method"])
            frames = [json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in values]
            notifications = all(is_notification(v) for v in values)
        assert frames, f"{block}: an empty request block"
        for frame in frames:
            await conn.send(frame)
        if notifications:  # nothing comes back: prove it
            await current.sync(conn, str(block))

    async def expect(self, conn: Conn, block: Block) -> None:
        documented = json_values(block)
        assert documented, f"{block}: an empty response block"
        actual: list[Any] = []
        for _ in documented:
            try:
                actual.append(await conn.receive())
            except (AssertionError, TimeoutError, ConnectionClosed) as exc:
                got = "".join("\n" + pretty(a) for a in actual)
                raise AssertionError(
                    f"{block}: {exc!r} after {len(actual)} messages:{got}"
                ) from None
        problems: list[str] = []
        self.bindings.match(documented, actual, "messages", problems)
        assert not problems, (
            f"{block}: the server's messages differ from the page:\n  "
            + "\n  ".join(problems)
            + "\nsent:\n"
            + "\n".join(pretty(a) for a in actual)
        )
        self.checked += 1
        for message in actual:
            for reply in message if isinstance(message, list) else [message]:
                error = reply.get("error") if isinstance(reply, dict) else None
                if isinstance(error, dict):
                    self.error_codes.add(error["code"])
                    data = error.get("data")
                    if isinstance(data, dict) and str(data.get("code", "")).startswith("RMD-"):
                        self.rmd_codes.add(data["code"])

    async def expect_close(self, conn: WsConn, block: Block) -> None:
        code = int(block.text.split()[0])
        message: Any = None
        closed: ConnectionClosed | None = None
        try:
            with anyio.fail_after(TIMEOUT):
                message = await conn.ws.recv()
        except ConnectionClosed as exc:
            closed = exc
        assert closed is not None, f"{block}: a message instead of a close: {message!r}"
        assert closed.rcvd is not None, f"{block}: closed without a close frame"
        assert closed.rcvd.code == code, f"{block}: closed with {closed.rcvd.code}"
        conn.closed_with = code
        self.checked += 1

    def expect_http(self, reply: tuple[str, dict[str, str], str], block: Block) -> None:
        status, headers, body = reply
        doc_status, doc_headers, doc_body = parse_http(block.text.strip("\n") + "\n")
        assert status == doc_status, f"{block}: {status!r} sent"
        for key, value in doc_headers.items():
            assert headers.get(key) == value, f"{block}: header {key}: {headers.get(key)!r}"
        assert body == doc_body, f"{block}: body {body!r} sent"
        self.checked += 1


# --------------------------------------------------------------------------- tests


@pytest.fixture
def replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Replay:
    """The page's files written into a fresh working directory, its tokens in the env."""
    monkeypatch.chdir(tmp_path)
    names = [b.attr("file") for b in BLOCKS if b.attr("file")]
    assert len(names) == len(set(names)), "docs/protocol.md: a file is defined twice"
    for block in BLOCKS:
        name = block.attr("file")
        if name is not None:
            (tmp_path / name).write_text(block.text + "\n", encoding="utf-8")
    tokens = token_envs(BLOCKS)
    for name, value in tokens.items():
        monkeypatch.setenv(name, value)
    return Replay(tokens)


async def test_every_example_is_what_the_server_sends(replay: Replay) -> None:
    await replay.run(BLOCKS)
    assert replay.checked >= 60, "the page lost most of its examples"
    # every method the servers register has a documented request …
    missing = sorted(replay.registered - replay.sent_methods)
    assert not missing, f"methods without an example in docs/protocol.md: {missing}"
    # … and every row of the error table a documented error response
    codes = [getattr(rpc_errors, name) for name in rpc_errors.__all__]
    table = {code for code in codes if isinstance(code, int)}
    assert len(table) == 9
    missing_codes = table - replay.error_codes
    assert not missing_codes, f"error codes without an example: {missing_codes}"
    assert {"RMD-001", "RMD-002", "RMD-005", "RMD-009"} <= replay.rmd_codes


def test_every_toml_block_is_a_valid_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in token_envs(BLOCKS).items():
        monkeypatch.setenv(name, value)
    tomls = [b for b in BLOCKS if b.lang == "toml"]
    assert tomls
    for index, block in enumerate(tomls):
        path = tmp_path / f"config-{index}.toml"
        path.write_text(block.text, encoding="utf-8")
        load_settings(path)  # a ConfigError names the key


def test_the_page_names_every_setting() -> None:
    for key in (
        "allowed_origins",
        "max_frame_bytes",
        "max_body_bytes",
        "max_pending_per_session",
        "rate_per_second",
        "idle_timeout_seconds",
        "lease_seconds",
        "token_env",
        "sessions",
        "max_authority",
        "prompt",
        "admin",
        "1009",
        DEFAULT_STORE,
    ):
        assert f"`{key}`" in PAGE or key in PAGE, key


def test_bridge_page_links_here() -> None:
    bridge = (ROOT / "docs" / "bridge.md").read_text(encoding="utf-8")
    assert "(protocol.md)" in bridge


def test_a_drifted_example_fails() -> None:
    """The matcher is strict: one changed value, key or id is a difference."""
    bindings = Bindings()
    sent = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "a" * 32}}
    problems: list[str] = []
    bindings.match({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "<s>"}}, sent, "m", problems)
    assert problems == []
    assert bindings.ids == {"s": "a" * 32}
    for doc in (
        {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "<s>"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "<t>"}},  # a second name, same id
        {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "<s>", "x": 1}},
        {"jsonrpc": "2.0", "id": True, "result": {"sessionId": "<s>"}},
    ):
        problems = []
        bindings.match(doc, sent, "m", problems)
        assert problems, doc
