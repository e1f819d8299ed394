"""``python -m agent_reminders.cli``: the same command as ``agent-reminders``."""

from agent_reminders.__main__ import main

main()
