"""``python -m agent_reminders.cli``: the ``agent-reminders`` command without the console script
(the same entry point, so a Claude Code hook run stays light here too)."""

from __future__ import annotations

from agent_reminders.__main__ import main

if __name__ == "__main__":
    main()
