"""The agent loop and its seam table (docs/session-loop.md, "The loop, step by step")."""

from .run import Cancel, LoopResult, LoopStatus, agent_loop
from .seams import SEAMS, Seam

__all__ = [
    "Cancel",
    "LoopResult",
    "LoopStatus",
    "SEAMS",
    "Seam",
    "agent_loop",
]
