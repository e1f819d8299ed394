"""``agent-reminders serve``: the JSON-RPC bridge over stdio (docs/bridge.md)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import handle_errors

__all__ = ["DEFAULT_STORE", "serve"]

DEFAULT_STORE = "sqlite:./.agent-reminders/state.db"


def _store_options(store: str) -> dict[str, Any]:
    """The SQLite-only options of serve's store: the whole file checked at start (serve opens
    it once, then runs for long), and missing folders made only for the default store."""
    from ..storage import folder_options

    options = folder_options(store, DEFAULT_STORE)
    return {**options, "check": "full"} if options else {}


def _address(text: str) -> tuple[str, int]:
    from .._core.errors import ConfigError

    host, sep, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--ws takes [HOST:]PORT; got {text!r}")
    return (host if sep and host else "127.0.0.1", int(port))


@handle_errors
def serve(
    store: Annotated[
        str,
        typer.Option(
            "--store",
            help="memory:, sqlite:PATH (default), a path, or redis://HOST:PORT/DB (many workers).",
        ),
    ] = DEFAULT_STORE,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="scripted:PATH (loops its script), openai:NAME, openai-responses:NAME, "
            "anthropic:NAME.",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="An OpenAI-compatible server (vLLM, llama.cpp, Ollama)."),
    ] = None,
    max_iterations: Annotated[
        int, typer.Option("--max-iterations", min=1, help="Bound one prompt (max_turn_requests).")
    ] = 25,
    request_log: Annotated[
        Path | None,
        typer.Option(
            "--request-log",
            help="Append every model request (with its answer's usage) as one JSON line.",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML config ([server], [[tokens]]).")
    ] = None,
    ws: Annotated[
        str | None,
        typer.Option("--ws", help="Serve WebSocket on [HOST:]PORT (host 127.0.0.1) instead."),
    ] = None,
    channel: Annotated[
        str | None,
        typer.Option(
            "--channel",
            help="The role new sessions send their envelopes in: auto (the most trusted one "
            "the model takes: a mid-conversation system entry on Claude Opus 4.8 and later, "
            "developer on OpenAI; default), user or system.",
        ),
    ] = None,
) -> None:
    """Run an agent as an ACP-style JSON-RPC server on stdin/stdout (logs on stderr).

    The store is opened (checked and migrated) before the first frame is read: a store that
    cannot be opened — damaged, or in a folder that does not exist (only the default store's
    folder is created) — ends the command at once with one line on stderr. Then one line
    names this worker (``worker HOST:PID:RANDOM (RedisStore)``): the owner other workers on
    the same store report while it prompts a session (``-32006``, ``data.owner``).
    """
    import anyio

    from .._core.errors import ConfigError
    from ..bridge import Bridge, load_settings
    from ..bridge.stdio import serve_stdio
    from ..models import parse_model_spec
    from ..storage import open_store
    from ..testing.scripted import ScriptedModel

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings = load_settings(
        config, max_iterations=max_iterations, request_log=request_log, channel=channel
    )
    chosen = None if model is None else parse_model_spec(model, base_url=base_url)
    if isinstance(chosen, ScriptedModel):
        # nothing in a server reads the requests back (--request-log records them), and a
        # looping script kept every one it got: a long-running server grew without end
        chosen.keep_requests = 0
    address = None if ws is None else _address(ws)
    if address is not None and not settings.tokens:
        raise ConfigError("--ws needs at least one [[tokens]] entry in the --config file")

    async def main() -> None:
        opened = await open_store(store, **_store_options(store))
        async with opened:
            bridge = Bridge(opened, model=chosen, settings=settings)
            # the id other workers name in -32006 (data.owner) while this one prompts
            worker = f"worker {bridge.worker_id} ({type(opened).__name__})"
            if address is None:
                print(worker, file=sys.stderr, flush=True)
                await serve_stdio(bridge)
            else:
                from ..bridge.ws import serve_ws

                def ready(port: int) -> None:
                    print(f"listening on ws://{address[0]}:{port}/", file=sys.stderr, flush=True)
                    print(worker, file=sys.stderr, flush=True)

                await serve_ws(bridge, address[0], address[1], ready=ready)

    anyio.run(main)
