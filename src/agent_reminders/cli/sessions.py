"""``agent-reminders sessions`` and ``sessions new``: the sessions of a store, and a new one.

``sessions new`` is how a folder gets its first session: it creates the store when it is
missing (the default one is ``./.agent-reminders/state.db``) and the session the same way the
bridge's ``session/new`` does, so ``serve``, ``remind``, ``pending`` and ``revoke`` all find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer

from ..project_reminders import is_project_session
from .common import emit_json, fail, handle_errors, is_terminal, safe_text
from .remind import JsonOption, StoreOption, open_existing
from .serve import DEFAULT_STORE

if TYPE_CHECKING:
    from ..storage import SessionInfo, Store

__all__ = ["sessions_app"]

sessions_app = typer.Typer(invoke_without_command=True, no_args_is_help=False)


@dataclass(frozen=True, slots=True)
class _Row:
    """One listed session: the store's record and how many items wait in its queue."""

    info: SessionInfo
    pending: int
    agent: str

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.info.session_id,
            "createdAt": _iso(self.info.created_at),
            "lastActivity": _iso(self.info.updated_at),
            "turn": self.info.turn,
            "messageCount": self.info.message_count,
            "pendingCount": self.pending,
            "agent": self.agent or None,
        }


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _local(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).astimezone().strftime("%Y-%m-%d %H:%M:%S")


async def _rows(store: str) -> list[_Row]:
    async with await open_existing(store) as opened:
        return [
            _Row(
                info=info,
                pending=len(await opened.pending(info.session_id)),
                agent=await _agent(opened, info.session_id),
            )
            for info in await opened.list_sessions()
            if not is_project_session(info.session_id)
        ]


async def _agent(store: Store, session_id: str) -> str:
    """The coding agent whose hook made the session (its agent id: ``codex`` …), or ``""``
    for a session of the library's own (whose agent id is its session id)."""
    state = await store.load_session(session_id)
    if state is None or state.agent_id == session_id:
        return ""
    return state.agent_id


async def _new(store: str) -> str:
    from ..bridge import Bridge, BridgeClient
    from ..storage import folder_options, open_store

    # a missing file is created; a missing folder only for the default store
    opened = await open_store(store, **folder_options(store, DEFAULT_STORE))
    async with opened, BridgeClient.in_process(Bridge(opened)) as client:
        return await client.new_session()


@sessions_app.callback()
@handle_errors
def sessions(ctx: typer.Context, store: StoreOption = None, as_json: JsonOption = False) -> None:
    """List the store's sessions (id, last activity, pending, agent); sessions new adds one.

    Most recent activity first. Piped, one tab-separated line per session (id, last activity
    in UTC, pending count); a table on a terminal, with the coding agent whose hook made each
    session; --json for a machine (with "agent"). A store that does not exist is not created:
    sessions new creates it.
    """
    if ctx.invoked_subcommand is not None:
        # `sessions --store X new` means the same as `sessions new --store X`
        ctx.obj = {"store": store, "json": as_json}
        return
    import anyio

    rows = anyio.run(_rows, store or DEFAULT_STORE)
    if as_json:
        emit_json({"sessions": [row.to_json() for row in rows]})
        return
    terminal = is_terminal()
    if not rows:
        # a note for a person, not data: piped output stays empty
        typer.echo("no sessions", err=not terminal)
        return
    if not terminal:
        for row in rows:
            # the three columns scripts read since before agents were listed (--json has them)
            cells = (row.info.session_id, _iso(row.info.updated_at), str(row.pending))
            typer.echo("\t".join(safe_text(c) for c in cells))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table()
    # an id is copied off the screen into --session: never wrapped, never cropped
    width = max(len(row.info.session_id) for row in rows)
    table.add_column("session", no_wrap=True, min_width=width)
    table.add_column("last activity", no_wrap=True)
    table.add_column("pending", justify="right")
    table.add_column("agent", no_wrap=True)
    for row in rows:
        info = row.info
        shown = (safe_text(info.session_id), _local(info.updated_at), str(row.pending), row.agent)
        table.add_row(*(Text(c) for c in shown))
    Console().print(table)


@sessions_app.command("new")
@handle_errors
def new(ctx: typer.Context, store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Create a session and print its id; the store is created when it does not exist.

    The session is made as the bridge's session/new makes it, so serve can prompt it and
    remind, pending and revoke reach it: it is the latest session until another one is active.
    """
    import anyio

    given: dict[str, Any] = ctx.obj if isinstance(ctx.obj, dict) else {}
    url = store or given.get("store") or DEFAULT_STORE
    if url.strip() == "memory:":
        raise fail(
            "--store memory: keeps nothing once this command ends; give sqlite:PATH, a path "
            "or redis://HOST:PORT/DB",
            2,
        )
    session_id = anyio.run(_new, url)
    if as_json or given.get("json"):
        emit_json({"sessionId": session_id})
    else:
        typer.echo(session_id)
