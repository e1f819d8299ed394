"""The agent loop (spec 02 §3) and its seam table (spec 02 §4)."""

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
