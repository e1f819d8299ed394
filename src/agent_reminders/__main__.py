"""``agent-reminders`` / ``python -m agent_reminders``: the command line.

A coding agent's hook run (``agent-reminders hook claude-code``, ``hook codex``, ``hook
gemini-cli``, ``hook cursor``) runs before every prompt and after every tool call, so it skips
the full command line (typer, rich): the installed ``agent-reminders`` script starts in
``_agent_reminders_hook`` beside the package, which hands the run to a hook server or imports
only what its agent's hook needs; ``python -m agent_reminders hook <agent>`` comes here first.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    argv = sys.argv[1:]
    from _agent_reminders_hook import HOOK_AGENTS, run

    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in HOOK_AGENTS:
        if {"--debug", "--help", "-h"}.isdisjoint(argv):
            sys.exit(run(argv[1], argv[2:]))
        from .integrations.agents import hook_main

        sys.exit(hook_main(argv[1], argv[2:]))
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
