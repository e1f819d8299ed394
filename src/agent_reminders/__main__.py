"""``agent-reminders`` / ``python -m agent_reminders``: the command line.

A Claude Code hook run (``agent-reminders hook claude-code``) runs before every prompt and after
every tool call, so it skips the full command line (typer, rich) and imports only what it needs.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    argv = sys.argv[1:]
    if argv[:2] == ["hook", "claude-code"]:
        from .integrations.claude_code import hook_main

        sys.exit(hook_main(argv[2:]))
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
