"""The seam table: which delivery modes each loop seam drains.

The one place this rule lives. It sits in the core, below the queue, the session and the
loop, which all read it; ``agent_reminders.loop.seams`` re-exports it.
"""

from __future__ import annotations

from enum import StrEnum

from .records import DeliveryMode

__all__ = ["SEAMS", "Seam"]


class Seam(StrEnum):
    """The points of the loop where the injection queue is drained."""

    ITERATION_START = "iteration_start"
    PRE_TOOL_DISPATCH = "pre_tool_dispatch"
    POST_TOOL_DISPATCH = "post_tool_dispatch"
    ITERATION_END = "iteration_end"
    DAEMON_IDLE_PRE = "daemon_idle_pre"
    DAEMON_IDLE_POST = "daemon_idle_post"
    LOOP_EXIT = "loop_exit"


_NOW = frozenset({DeliveryMode.INTERRUPT_IMMEDIATE})
_STEP = frozenset({DeliveryMode.INTERRUPT_IMMEDIATE, DeliveryMode.FINISH_STEP})

SEAMS: dict[str, frozenset[DeliveryMode]] = {
    Seam.ITERATION_START: _STEP,
    Seam.PRE_TOOL_DISPATCH: _NOW,
    Seam.POST_TOOL_DISPATCH: _STEP,
    Seam.ITERATION_END: _STEP,
    Seam.DAEMON_IDLE_PRE: _NOW,
    Seam.DAEMON_IDLE_POST: _NOW,
    Seam.LOOP_EXIT: frozenset({DeliveryMode.AUDIT_ONLY}),
}
