"""The prompt-cache audit (docs/audit.md): read successive model requests, find every prefix break,
and measure cache reuse under four cache models; from the provider's own numbers (coding agents'
session files, request/response pairs, a request log with usage), find every cache miss, its
cause and its cost; and the nag rate — how often directives reach the model, and again
(:func:`nag_from_events`, :func:`nag_from_requests`).

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
from .billed import CAUSES, BilledReport, BilledRow, Call, Cause, Miss, analyze
from .cache_models import MODELS, CacheModel
from .html import render_html
from .nag import FAST_REPEAT_WINDOW, NagFigures, NagReport, nag_from_events, nag_from_requests
from .prices import PRICES_AS_OF, Price, PriceTable
from .readers import FORMAT_OPTIONS, FORMATS, Format
from .report import (
    PRICES,
    AuditBreak,
    AuditReport,
    BreakReason,
    ReportFormat,
    RequestRow,
    audit_directory,
    audit_file,
    audit_requests,
)
from .table import print_table
from .tokenizers import DEFAULT_ENCODING, FALLBACK, Tokenizer, load_tokenizer

__all__ = [
    "AuditBreak",
    "AuditError",
    "AuditReport",
    "BilledReport",
    "BilledRow",
    "BreakReason",
    "CAUSES",
    "CacheModel",
    "Call",
    "Cause",
    "DEFAULT_ENCODING",
    "FALLBACK",
    "FAST_REPEAT_WINDOW",
    "FORMATS",
    "FORMAT_OPTIONS",
    "Format",
    "MODELS",
    "Miss",
    "NagFigures",
    "NagReport",
    "PRICES",
    "PRICES_AS_OF",
    "Price",
    "PriceTable",
    "ReportFormat",
    "RequestRow",
    "Tokenizer",
    "analyze",
    "audit_directory",
    "audit_file",
    "audit_requests",
    "load_tokenizer",
    "nag_from_events",
    "nag_from_requests",
    "print_table",
    "render_html",
]
