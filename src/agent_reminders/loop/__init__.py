"""The agent loop and its seam table (docs/session-loop.md, "The loop, step by step").

The loop's names are imported when first read: a process that needs only the steps
(``agent_reminders.loop.steps``, a coding agent's hook) does not load the loop.
"""

from .._lazy import exports
from .seams import SEAMS, Seam

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .run import Cancel, LoopResult, LoopStatus, agent_loop
else:
    __getattr__, __dir__ = exports(
        __name__, {".run": ("Cancel", "LoopResult", "LoopStatus", "agent_loop")}
    )

__all__ = [
    "Cancel",
    "LoopResult",
    "LoopStatus",
    "SEAMS",
    "Seam",
    "agent_loop",
]
