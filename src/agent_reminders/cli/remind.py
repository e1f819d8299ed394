"""``agent-reminders remind``, ``pending`` and ``revoke``: host reminders from the command line
(docs/bridge.md, "Pushing reminders from the command line"; the checks are ``session/remind``'s).

Two ways to reach a session, one code path: ``--url ws://…`` talks to a running bridge through
``BridgeClient.connect_ws`` (token from ``AGENT_REMINDERS_TOKEN``); ``--store URL`` (or the
default store) opens the store and runs the bridge's own methods on it in this process
(``BridgeClient.in_process`` with the ``contract`` grant of a local, trusted caller). Either way
the request is the bridge's ``session/remind`` / ``session/pending_injections`` /
``session/revoke_reminder``, so validation, its order and its RMD codes are the bridge's — there
is no second copy here. A refused request prints one line and changes nothing.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from .. import project_reminders
from .common import emit_json, fail, handle_errors, is_terminal, safe_text, state
from .serve import DEFAULT_STORE

if TYPE_CHECKING:
    from ..bridge import BridgeClient, RpcError
    from ..storage import Store

__all__ = [
    "JsonOption",
    "LATEST",
    "StoreOption",
    "TOKEN_ENV",
    "new_session_command",
    "open_existing",
    "pending",
    "remind",
    "revoke",
]

TOKEN_ENV = "AGENT_REMINDERS_TOKEN"
LATEST = "latest"
T = TypeVar("T")

UrlOption = Annotated[
    str | None,
    typer.Option("--url", help=f"A running bridge, ws://HOST:PORT/ (token from ${TOKEN_ENV})."),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help=f"Straight into a store: sqlite:PATH or a path (default {DEFAULT_STORE}).",
    ),
]
SessionOption = Annotated[
    str,
    typer.Option(
        "--session",
        "-s",
        help="A session id, or 'latest': the store's most recently active session (through "
        "--url: the bridge's only session).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
ProjectOption = Annotated[
    bool,
    typer.Option(
        "--project",
        help="Every session of the store, now and those that start later (any coding agent).",
    ),
]


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a command goes: a bridge (``url``) or a store, and the ``--session`` asked for."""

    url: str | None
    store: str
    session: str
    project: bool = False

    @property
    def where(self) -> str:
        return f"on the bridge at {self.url}" if self.url else f"in store {self.store}"


def _target(url: str | None, store: str | None, session: str, project: bool = False) -> _Target:
    if url is not None and store is not None:
        raise fail("give --url (a running bridge) or --store (a store file), not both", 2)
    if not session.strip():
        raise fail("--session must be a session id or 'latest'", 2)
    if project and session != LATEST:
        raise fail("give --session (one session) or --project (every session), not both", 2)
    return _Target(url=url, store=store or DEFAULT_STORE, session=session, project=project)


def _session_line(target: _Target, exc: RpcError) -> str | None:
    """The one line for a session that cannot be found or chosen, else ``None``."""
    from ..bridge.errors import SESSION_NOT_FOUND

    if exc.code == SESSION_NOT_FOUND:
        return f"no session {target.session!r} {target.where} (-32004 Session not found)"
    if (exc.data or {}).get("reason") == "session_id_required":
        said = (exc.data or {}).get("message", exc.message)
        return (
            "--session latest through --url needs the bridge to hold exactly one session "
            f"(the bridge says: {said}); give --session ID"
        )
    return None


def _error_line(exc: RpcError) -> str:
    data = exc.data or {}
    code, said = data.get("code"), data.get("message")
    if isinstance(code, str) and isinstance(said, str):
        return f"{code}: {said}"
    return f"{exc.message} (JSON-RPC {exc.code})"


def _run(target: _Target, call: Callable[[BridgeClient, str | None], Awaitable[T]]) -> T:
    """Run ``call(client, session_id)`` against the target; one line and exit 1 on refusal."""
    import anyio

    from .._core.errors import BridgeConnectionError
    from ..bridge import RpcError

    try:
        return anyio.run(_call, target, call)
    except RpcError as exc:
        if state.debug:
            raise
        raise fail(_session_line(target, exc) or _error_line(exc)) from None
    except BridgeConnectionError as exc:
        if state.debug:
            raise
        unset = exc.status == 401 and not os.environ.get(TOKEN_ENV)
        hint = f" (the token comes from ${TOKEN_ENV}, which is not set)" if unset else ""
        raise fail(f"{exc}{hint}") from None


async def _call(target: _Target, call: Callable[[BridgeClient, str | None], Awaitable[T]]) -> T:
    from ..bridge import Bridge, BridgeClient

    if target.url is not None:
        token = os.environ.get(TOKEN_ENV) or None
        async with BridgeClient.connect_ws(target.url, token) as client:
            # the bridge has no "latest session" method: leaving sessionId out asks for its
            # only session (the one the caller can see; several or none is an error)
            return await call(client, None if target.session == LATEST else target.session)
    if target.project:  # every session, and those to come: a project with none yet is fine
        from ..storage import folder_options, open_store

        options = folder_options(target.store, DEFAULT_STORE)
        async with (
            await open_store(target.store, **options) as store,
            BridgeClient.in_process(Bridge(store)) as client,
        ):
            return await call(client, None)
    async with await open_existing(target.store) as store:
        session_id = target.session
        if session_id == LATEST:
            latest = await project_reminders.latest_session(store)
            if latest is None:
                raise fail(
                    f"no session {target.where} yet: --session latest needs one (start one "
                    f"with: {new_session_command(target.store)}; or give --session ID)"
                )
            session_id = latest
        async with BridgeClient.in_process(Bridge(store)) as client:
            return await call(client, session_id)


def new_session_command(store: str) -> str:
    """The command line that makes a session in ``store`` (the store too, when missing)."""
    given = "" if store == DEFAULT_STORE else f" --store {shlex.quote(store)}"
    return f"agent-reminders sessions new{given}"


async def open_existing(store: str) -> Store:
    """Open ``store`` without creating it: a command that finds no store has nothing to read
    or remind there, and says how to make one."""
    from .._core.errors import StoreError
    from ..storage import folder_options, open_store, sqlite_path

    file = sqlite_path(store)
    options: dict[str, Any] = {} if file is None else {"create": False}
    try:
        return await open_store(store, **options)
    except StoreError as exc:
        if file is None or Path(file).exists():
            raise
        if not (
            Path(file).parent.is_dir() or folder_options(store, DEFAULT_STORE).get("create_folders")
        ):
            raise  # sessions new would refuse that folder too: no command to suggest
        raise StoreError(f"{exc.message}; create it with: {new_session_command(store)}") from None


def _number(text: str | None) -> int | str | None:
    """An integer when the text is one; else the text itself, for the bridge's own check to
    refuse with its RMD code."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return text


@handle_errors
def remind(
    body: Annotated[
        str,
        typer.Argument(help="The reminder's text; '-' reads it from stdin.", show_default=False),
    ],
    session: SessionOption = LATEST,
    ttl_turns: Annotated[
        str | None,
        typer.Option("--ttl-turns", metavar="N", help="Expire after N turns (an integer > 0)."),
    ] = None,
    dedupe_key: Annotated[
        str | None, typer.Option("--dedupe-key", help="A newer reminder with it replaces this.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Repeatable.")] = None,
    authority: Annotated[
        str | None,
        typer.Option("--authority", help="contract, corrective or advisory (default: the grant)."),
    ] = None,
    preserve_on_compact: Annotated[
        bool | None,
        typer.Option("--preserve-on-compact/--no-preserve-on-compact", help="Survive compaction."),
    ] = None,
    propagate: Annotated[
        str | None, typer.Option("--propagate", help="all, session or none (sub-agents).")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="interrupt_immediate, finish_step (default) or audit_only, or an alias.",
        ),
    ] = None,
    url: UrlOption = None,
    store: StoreOption = None,
    project: ProjectOption = False,
    as_json: JsonOption = False,
) -> None:
    """Queue a reminder for a session and print its id (validated as session/remind is).

    BODY '-' reads the text from stdin (for CI jobs and file watchers); the line breaks at its
    end are dropped. --project queues it in every session of the store and keeps it for every
    session that starts later, whatever coding agent runs it, each once (revoke --project ID
    ends that).
    """
    target = _target(url, store, session, project)
    if body == "-":
        body = _stdin_body()
    given = {
        "ttl_turns": _number(ttl_turns),
        "dedupe_key": dedupe_key,
        "tags": tag,
        "authority": authority,
        "preserve_on_compact": preserve_on_compact,
        "propagate": propagate,
    }
    fields = {key: value for key, value in given.items() if value is not None}

    async def call(client: BridgeClient, session_id: str | None) -> tuple[str, list[str] | None]:
        if target.project:
            return await client.remind_project(body, mode=mode, **fields)
        return await client.remind(body, session_id=session_id, mode=mode, **fields), None

    reminder_id, reached = _run(target, call)
    if as_json:
        emit_json(
            {"reminderId": reminder_id}
            if reached is None
            else {"reminderId": reminder_id, "sessionIds": reached}
        )
        return
    typer.echo(reminder_id)
    if reached is not None:  # a note for a person: piped output stays the id alone
        typer.echo(
            f"queued in {len(reached)} session(s); every session that starts later gets it too",
            err=True,
        )


def _stdin_body() -> str:
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise fail("remind -: standard input is not UTF-8 text", 2) from None
    if not text.strip():
        raise fail(
            "remind -: standard input is empty; pipe the reminder's text in "
            "(echo TEXT | agent-reminders remind -)",
            2,
        )
    return text


@handle_errors
def pending(
    session: SessionOption = LATEST,
    url: UrlOption = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a session's queued reminders and messages, first to be delivered first."""
    target = _target(url, store, session)

    async def call(client: BridgeClient, session_id: str | None) -> list[dict[str, Any]]:
        return await client.pending(session_id)

    rows = _run(target, call)
    if as_json:
        emit_json({"pendingCount": len(rows), "injections": rows})
        return
    terminal = is_terminal()
    if not rows:
        # a note for a person, not data: piped output stays empty
        typer.echo("nothing pending", err=not terminal)
        return
    cells = [
        [safe_text(c) for c in (row["id"], row["kind"], row["mode"], _text(row))]
        + [safe_text(" ".join(row.get("tags", ())))]
        for row in rows
    ]
    if not terminal:
        for cell in cells:
            typer.echo("\t".join(cell))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table()
    # an id is copied off the screen into revoke: never wrapped, never cropped
    table.add_column("id", no_wrap=True, min_width=max(len(cell[0]) for cell in cells))
    for column in ("kind", "mode", "text", "tags"):
        table.add_column(column, overflow="fold")
    for cell in cells:
        # Text cells: a stored "[bold]" is shown as typed, never as rich markup
        table.add_row(*(Text(c) for c in cell))
    Console().print(table)


def _text(row: dict[str, Any]) -> str:
    if row["kind"] == "reminder":
        return str(row["body"])
    content = row["content"]
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", f"[{b.get('type')}]")) for b in content)


@handle_errors
def revoke(
    reminder_id: Annotated[str, typer.Argument(help="The id printed by `remind`.")],
    session: SessionOption = LATEST,
    url: UrlOption = None,
    store: StoreOption = None,
    project: Annotated[
        bool,
        typer.Option(
            "--project", help="A project reminder: no longer standing, and revoked where it waits."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Revoke a queued reminder: prints revoked (or already_revoked)."""
    target = _target(url, store, session, project)

    async def call(client: BridgeClient, session_id: str | None) -> tuple[str, list[str] | None]:
        if target.project:
            return await client.revoke_project(reminder_id)
        return await client.revoke(reminder_id, session_id=session_id), None

    status, sessions = _run(target, call)
    if as_json:
        said: dict[str, Any] = {"reminderId": reminder_id, "status": status}
        if sessions is not None:
            said["sessionIds"] = sessions
        emit_json(said)
    else:
        typer.echo(status)
