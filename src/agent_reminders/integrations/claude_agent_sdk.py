"""The library's reminders in the Claude Agent SDK for Python (see docs/claude-code.md).

:func:`reminder_hooks` gives ``ClaudeAgentOptions(hooks=...)`` callbacks that do in process
what ``agent-reminders hook claude-code`` does as a command — the same event mapping
(:func:`agent_reminders.integrations.claude_code.answer_hook`), so facts and the workspace
anchor at ``SessionStart``, pushed reminders at ``UserPromptSubmit``, a grounded review of a
failing test run after a ``Bash`` call, the summarizer's instructions at ``PreCompact`` and
the handoff at ``SubagentStart`` — without starting a process per event.

Needs the ``claude-agent-sdk`` package (``pip install 'agent-reminders[claude-agent-sdk]'``);
importing this module does not import it.

Example:
    >>> from agent_reminders import Session
    >>> hooks = reminder_hooks(session=Session())  # doctest: +SKIP
    >>> options = ClaudeAgentOptions(hooks=hooks)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from .._core.errors import ConfigError, missing_extra
from .claude_code import HOOK_EVENTS, answer_hook

if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookJSONOutput, HookMatcher

    from ..session import Session
    from ..storage import Store

__all__ = ["HOOK_EVENTS", "reminder_hooks"]

_NO_ENV: dict[str, str] = {}  # this process's environment says nothing of the project: use cwd


def _sdk() -> Any:
    try:
        import claude_agent_sdk
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise missing_extra("the Claude Agent SDK", "claude-agent-sdk", "reminder_hooks") from exc
    return claude_agent_sdk


def reminder_hooks(
    *,
    store: Store | str | None = None,
    session: Session | None = None,
    style: str = "context_directives",
) -> dict[str, list[HookMatcher]]:
    """Hook matchers for ``ClaudeAgentOptions(hooks=...)``, one per event of
    :data:`HOOK_EVENTS`, each answering as the hook command would.

    Args:
        store: Where the library sessions live, one per Claude Code ``session_id``: an open
            :class:`~agent_reminders.storage.Store` (the caller closes it) or a store URL
            (opened and closed at each event). By default the hook command's store,
            ``sqlite:<cwd>/.agent-reminders/state.db`` for the session's ``cwd`` — so
            ``agent-reminders remind --session latest`` reaches the agent from any process.
        session: Instead of a store, one in-process :class:`~agent_reminders.Session` that
            answers every event of this client (whatever its ``session_id``); push with
            ``session.queue.remind(...)`` or ``session.inject(...)`` from the same program.
            Its own envelope style applies and nothing is stored.
        style: ``"context_directives"`` (default) or ``"system_reminder"``, for sessions
            kept in a store.

    The Python SDK runs no ``SessionStart`` callbacks, so the session start's work (facts,
    the workspace anchor) is done at a session's first ``UserPromptSubmit`` or tool call;
    the ``SessionStart`` matcher is there for when it does (a compaction restating the
    preserved reminders).

    Returns:
        ``{event: [HookMatcher(hooks=[callback])]}``. A callback returns
        ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` when there is
        something new, ``{"systemMessage": text}`` at ``PreCompact`` (the CLI adds a
        callback's ``systemMessage`` to the compaction instructions, as it adds a command's
        stdout), else ``{}``. A callback raises (the SDK reports it; the CLI goes on) on a
        bad hook input or a store that cannot be used, and the store is then unchanged.

    Raises:
        ConfigError: both ``store`` and ``session`` were given.
        ImportError: ``claude-agent-sdk`` is not installed.
    """
    if store is not None and session is not None:
        raise ConfigError(
            "reminder_hooks takes store= (sessions kept per Claude Code session_id) or "
            "session= (one in-process session), not both"
        )
    from .._core.envelope import check_style

    checked = check_style(style)
    sdk = _sdk()
    url = store if isinstance(store, str) else None
    opened = None if isinstance(store, str) else store

    async def callback(
        input_data: Any, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        reply = await answer_hook(
            input_data,
            store=opened,
            store_url=url,
            session=session,
            style=checked,
            env=_NO_ENV,
            implicit_start=True,
        )
        if reply.event == "PreCompact":
            return {"systemMessage": reply.text} if reply.text else {}
        output = reply.hook_output()
        return cast("HookJSONOutput", output or {})

    hook: Callable[[Any, str | None, HookContext], Awaitable[HookJSONOutput]] = callback
    return {event: [sdk.HookMatcher(hooks=[hook])] for event in HOOK_EVENTS}
