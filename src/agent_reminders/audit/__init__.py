"""The prompt-cache audit (docs/audit.md): read successive model requests, find every prefix break,
and measure cache reuse under four cache models.

Example:
    >>> from agent_reminders.audit import audit_requests
    >>> hi = {"role": "user", "content": "hi"}
    >>> report = audit_requests([{"messages": [hi]}, {"messages": [hi, hi]}],
    ...                         encoding="bytes/4")
    >>> report.requests, report.prefix_breaks, report.uncached_over_final
    (2, (), 1.0)
"""

from __future__ import annotations

from .._core.errors import AuditError
from .cache_models import MODELS, CacheModel
from .html import render_html
from .readers import FORMAT_OPTIONS, FORMATS, Format
from .report import (
    PRICES,
    AuditBreak,
    AuditReport,
    BreakReason,
    RequestRow,
    audit_file,
    audit_requests,
    print_table,
)
from .tokenizers import DEFAULT_ENCODING, FALLBACK, Tokenizer, load_tokenizer

__all__ = [
    "AuditBreak",
    "AuditError",
    "AuditReport",
    "BreakReason",
    "CacheModel",
    "DEFAULT_ENCODING",
    "FALLBACK",
    "FORMATS",
    "FORMAT_OPTIONS",
    "Format",
    "MODELS",
    "PRICES",
    "RequestRow",
    "Tokenizer",
    "audit_file",
    "audit_requests",
    "load_tokenizer",
    "print_table",
    "render_html",
]
