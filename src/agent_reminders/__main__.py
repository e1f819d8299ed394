"""``agent-reminders`` / ``python -m agent_reminders``: the command line.

A coding agent's hook run (``agent-reminders hook claude-code``, ``hook codex``, ``hook
gemini-cli``, ``hook cursor``) runs before every prompt and after every tool call, so it skips
the full command line (typer, rich) and imports only what its agent's hook needs.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

# the agents of ``hook <agent>`` (integrations.agents.AGENTS, checked equal by a test): named
# here so that a hook run imports nothing else before it reaches a hook server
HOOK_AGENTS = ("claude-code", "codex", "gemini-cli", "cursor")


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in HOOK_AGENTS:
        if {"--debug", "--help", "-h"}.isdisjoint(argv):
            from ._hook_client import run

            sys.exit(run(argv[1], argv[2:]))
        from .integrations.agents import agent_module

        sys.exit(agent_module(argv[1]).hook_main(argv[2:]))
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
