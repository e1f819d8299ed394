"""The seam table: which delivery modes each loop seam drains (docs/session-loop.md, "Seams
and delivery modes").

Defined in the core (the queue and the session read it too, and sit below the loop); this
module keeps the loop's import path for it.
"""

from __future__ import annotations

from .._core.seams import SEAMS, Seam

__all__ = ["SEAMS", "Seam"]

Seam.__module__ = __name__  # the public path, in tracebacks and the docs
