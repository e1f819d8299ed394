"""``python -m agent_reminders.cli``: the ``agent-reminders`` command without the console script."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    main()
