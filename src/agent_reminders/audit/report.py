"""The audit itself: prefix breaks and cache figures over successive requests, the report and
its JSON object and table (see docs/audit.md, "The figures")."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._core.errors import AuditError, ConfigError
from .breaks import AuditBreak, BreakReason, Breaks, first_difference
from .cache_models import MODELS, CacheModel, CacheSimulator
from .nag import NagCounter, NagReport
from .readers import RequestReader, read_lines
from .tokenizers import DEFAULT_ENCODING, load_tokenizer

if TYPE_CHECKING:
    from .billed import BilledReport, Call
    from .prices import PriceTable

__all__ = [
    "AuditBreak",
    "AuditReport",
    "BreakReason",
    "PRICES",
    "RequestRow",
    "audit_file",
    "audit_directory",
    "audit_requests",
    "ReportFormat",
    "first_difference",
]

ReportFormat = Literal[
    "openai_chat", "openai_responses", "anthropic", "log", "claude_code", "codex", "directory"
]
"""A report's ``format``: a format of request bodies, a coding agent's session files, or a
folder of them."""

PRICES: Mapping[str, float] = {"read": 0.1, "write": 1.25}
"""Default prices relative to an uncached input token: a cache read (OpenAI and Anthropic)
and an Anthropic cache write."""


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request's figures (the table and the HTML chart draw these).

    Attributes:
        index: The request's index, from 0.
        line: The line of the file (``audit_requests``: ``None``).
        session_id: The request log's session (other formats: ``None``).
        prompt_tokens: The request's prompt sequence, in tokens.
        cached: Per cache model, the tokens that could have been read from the cache.
        anthropic_written: The tokens written to Anthropic's cache by this request.
        directive_tokens: Tokens of its messages that carry an envelope.
        prefix_break: The break at this request, if any.
        model: The body's ``model``, when it names one.
    """

    index: int
    line: int | None
    session_id: str | None
    prompt_tokens: int
    cached: Mapping[CacheModel, int]
    anthropic_written: int
    directive_tokens: int
    prefix_break: AuditBreak | None = None
    model: str | None = None

    def uncached(self, model: CacheModel) -> int:
        """Prompt tokens the provider had to prefill under ``model``."""
        return self.prompt_tokens - self.cached[model]


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What :func:`audit_file` / :func:`audit_requests` found; :meth:`to_json` is the
    ``--json`` object (docs/audit.md, "The figures").

    Attributes:
        format: ``openai_chat``, ``openai_responses``, ``anthropic`` or ``log`` (request
            bodies: ``{request, response}`` pairs report their requests' format);
            ``claude_code`` or ``codex`` (a coding agent's session file: no request bodies,
            so no request-side figures); ``directory`` (every session file under a folder).
        encoding: The tokenizer used: a tiktoken encoding, or ``bytes/4`` (the fallback).
        rows: One :class:`RequestRow` per request, in input order.
        prefix_breaks: Every break, in request order.
        price_read: The price of a cached input token (1.0 = an uncached one).
        price_write: The price of a token written to Anthropic's cache.
        tokenizer_note: Why the fallback tokenizer was used, when it was not asked for.
        source: The file read (``"-"``: standard input), when one was.
        billed: What the provider billed, per request, with every cache miss, its cause and
            its cost — when the input carries the provider's numbers (``None`` otherwise).
        files: The session files read, for a ``directory`` report.
        nag: The nag rate of the requests (docs/audit.md, "Nag rate"); ``None`` for session
            files, which hold no envelopes.
    """

    format: ReportFormat
    encoding: str
    rows: tuple[RequestRow, ...]
    prefix_breaks: tuple[AuditBreak, ...]
    price_read: float = PRICES["read"]
    price_write: float = PRICES["write"]
    tokenizer_note: str | None = None
    source: str | None = None
    billed: BilledReport | None = None
    files: tuple[str, ...] = ()
    nag: NagReport | None = None
    _sums: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sums = self._sums
        sums["prompt"] = sum(r.prompt_tokens for r in self.rows)
        sums["directive"] = sum(r.directive_tokens for r in self.rows)
        for model in MODELS:
            sums[model] = sum(r.cached[model] for r in self.rows)
        sums["written"] = sum(r.anthropic_written for r in self.rows)

    @property
    def requests(self) -> int:
        """How many requests were read."""
        if not self.rows and self.billed is not None:
            return len(self.billed.rows)
        return len(self.rows)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens summed over all requests."""
        return self._sums["prompt"]

    @property
    def final_prompt_tokens(self) -> int:
        """The last request's prompt: what an append-only log prefills in all."""
        return self.rows[-1].prompt_tokens if self.rows else 0

    @property
    def reuse(self) -> dict[CacheModel, float]:
        """Per model, cached prompt tokens ÷ all prompt tokens."""
        return {m: _ratio(self._sums[m], self.prompt_tokens) for m in MODELS}

    @property
    def uncached_tokens(self) -> dict[CacheModel, int]:
        """Per model, the sum over requests of prompt minus cached tokens."""
        return {m: self.prompt_tokens - self._sums[m] for m in MODELS}

    @property
    def uncached_over_final(self) -> float:
        """``uncached_tokens["exact"]`` ÷ ``final_prompt_tokens``: 1.0 for an append-only
        log; each break adds what had to be prefilled again."""
        return _ratio(self.uncached_tokens["exact"], self.final_prompt_tokens)

    @property
    def cost_ratio(self) -> dict[str, float]:
        """Input cost with caching ÷ without, at :attr:`price_read` / :attr:`price_write`."""
        prompt, read, write = self.prompt_tokens, self.price_read, self.price_write
        openai = self._sums["openai"]
        anthropic, written = self._sums["anthropic"], self._sums["written"]
        return {
            "openai": _ratio(prompt - openai + openai * read, prompt),
            "anthropic": _ratio(
                prompt - anthropic - written + anthropic * read + written * write, prompt
            ),
        }

    @property
    def model_changes(self) -> tuple[dict[str, Any], ...]:
        """Each request whose body names another model than the previous request of its
        session: ``{"request", "from", "to"}``. Not a prefix break (the prompt may be the same
        bytes), but no cache is shared across models: the cache models start again."""
        last: dict[str | None, str] = {}
        found = []
        for row in self.rows:
            if row.model is None:
                continue
            before = last.get(row.session_id)
            last[row.session_id] = row.model
            if before is not None and before != row.model:
                found.append({"request": row.index, "from": before, "to": row.model})
        return tuple(found)

    @property
    def directive_tokens(self) -> int:
        """Tokens of the messages that carry an envelope, summed over requests."""
        return self._sums["directive"]

    @property
    def directive_overhead(self) -> float:
        """``directive_tokens`` ÷ ``prompt_tokens``."""
        return _ratio(self.directive_tokens, self.prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: exactly the documented keys, in their order
        (ratios rounded to 4 places).

        Example:
            >>> report = audit_requests([{"messages": [{"role": "user", "content": "hi"}]}],
            ...                         encoding="bytes/4")
            >>> report.to_json()["prefix_breaks"], report.to_json()["uncached_over_final"]
            ([], 1.0)
        """
        if not self.rows:  # session files: only the provider's numbers
            out: dict[str, Any] = {"format": self.format, "requests": self.requests}
            if self.files:
                out["files"] = list(self.files)
            if self.billed is not None:
                out["billed"] = self.billed.to_json()
            return out
        out = {
            "format": self.format,
            "encoding": self.encoding,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "final_prompt_tokens": self.final_prompt_tokens,
            "prefix_breaks": [b.to_json() for b in self.prefix_breaks],
            "reuse": {m: round(v, 4) for m, v in self.reuse.items()},
            "uncached_tokens": self.uncached_tokens,
            "uncached_over_final": round(self.uncached_over_final, 4),
            "cost_ratio": {m: round(v, 4) for m, v in self.cost_ratio.items()},
            "directive_tokens": self.directive_tokens,
            "directive_overhead": round(self.directive_overhead, 4),
        }
        if self.model_changes:
            out["model_changes"] = list(self.model_changes)
        if self.billed is not None:
            out["billed"] = self.billed.to_json()
        if self.nag is not None:
            out["nag"] = self.nag.to_json()
        return out


def _price(value: float | None, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"--{name} must be a finite number; got {value!r}")
    if value < 0:
        raise ConfigError(f"--{name} must be 0 or more (1.0 = an uncached token); got {value}")
    return float(value)


def _request_bodies(
    objects: list[tuple[int, object]], where: Callable[[int], str]
) -> list[tuple[int, object]]:
    """The request of each ``{request, response}`` pair."""
    bodies = []
    for number, obj in objects:
        if not (isinstance(obj, Mapping) and "request" in obj and "response" in obj):
            raise AuditError(
                f"{where(number)}: not a {{request, response}} pair like the lines before it"
            )
        bodies.append((number, obj["request"]))
    return bodies


def _audit(
    items: Iterable[tuple[int, object]],
    where: Callable[[int], str],
    *,
    from_file: bool,
    format: str,
    encoding: str,
    price_read: float | None,
    price_write: float | None,
    source: str | None,
    prices: PriceTable | None = None,
) -> AuditReport:
    from .billed import analyze
    from .sources import detect, log_call, pair_call, read_claude_code, read_codex

    read_price = _price(price_read, "price-read", PRICES["read"])
    write_price = _price(price_write, "price-write", PRICES["write"])
    reader = RequestReader(format)
    tokenizer = load_tokenizer(encoding)
    objects = list(items)
    kind = detect(objects)
    name = "the input" if source is None else ("stdin" if source == "-" else source)
    if kind in ("claude_code", "codex"):
        if format != "auto":
            raise AuditError(
                f"{name}: a {kind.replace('_', ' ')} session file, not request bodies of "
                f"--format {format}; leave --format out"
            )
        label = name if source is not None else "requests"
        read = read_claude_code if kind == "claude_code" else read_codex
        found = read(objects, label)
        if not found:
            raise AuditError(f"{name} holds no billed model request (no usage in it)")
        return AuditReport(
            format=kind,
            encoding=tokenizer.name,
            rows=(),
            prefix_breaks=(),
            price_read=read_price,
            price_write=write_price,
            source=source,
            billed=analyze(found, prices),
        )
    bodies = _request_bodies(objects, where) if kind == "pairs" else objects
    simulator, breaks, nag = CacheSimulator(tokenizer), Breaks(), NagCounter(tokenizer.encode)
    rows: list[RequestRow] = []
    calls: list[Call] = []
    for (number, body), (_, obj) in zip(bodies, objects, strict=True):
        line = number if from_file else None
        seq = reader.read(body, where(number), line=line)
        index = len(rows)
        figures = simulator.add(seq)
        nag.add(seq, prompt_tokens=figures.prompt_tokens)
        rows.append(
            RequestRow(
                index=index,
                line=line,
                session_id=seq.session_id,
                prompt_tokens=figures.prompt_tokens,
                cached=figures.cached,
                anthropic_written=figures.anthropic_written,
                directive_tokens=figures.directive_tokens,
                prefix_break=breaks.check(index, line, seq),
                model=seq.model,
            )
        )
        if isinstance(obj, Mapping) and (kind == "pairs" or "usage" in obj):
            make = pair_call if kind == "pairs" else log_call
            call = make(obj, seq, index=index, where=where(number), source=source, line=line)
            if call is not None:
                calls.append(call)
    if not rows:
        raise AuditError(f"{name} holds no requests (one JSON object per line)")
    billed = None
    if calls:
        model: Mapping[str, CacheModel] = {"anthropic": "anthropic", "openai": "openai"}
        predicted = {c.index: rows[c.index].cached[model[c.provider]] for c in calls}
        billed = analyze(calls, prices, predicted=predicted)
    return AuditReport(
        format=reader.format,
        encoding=tokenizer.name,
        rows=tuple(rows),
        prefix_breaks=tuple(r.prefix_break for r in rows if r.prefix_break is not None),
        price_read=read_price,
        price_write=write_price,
        tokenizer_note=tokenizer.note,
        source=source,
        billed=billed,
        nag=nag.report(),
    )


def audit_requests(
    requests: Iterable[object],
    *,
    format: str = "auto",
    encoding: str = DEFAULT_ENCODING,
    price_read: float | None = None,
    price_write: float | None = None,
    prices: PriceTable | None = None,
) -> AuditReport:
    """Audit successive model requests given as parsed JSON objects.

    Args:
        requests: OpenAI Chat or Responses bodies, Anthropic Messages bodies, lines of the
            library's request log, ``{request, response}`` pairs, or the entries of a Claude
            Code transcript or a Codex rollout — all of one kind.
        format: ``auto`` (detected), ``openai``, ``anthropic`` or ``log``.
        encoding: A tiktoken encoding, or ``bytes/4`` for the fallback.
        price_read: A cached token's price in the request-side cost ratio (default 0.1 of an
            uncached one).
        price_write: An Anthropic cache write's price there (default 1.25).
        prices: The price table the provider's numbers are billed at (default: the
            published prices, :meth:`PriceTable.default`).

    Raises:
        AuditError: ``RMD-111`` naming the request (``requests[3]``) that is not one.
        ConfigError: ``RMD-104`` for an unknown format or encoding, or a negative price.

    Example:
        >>> hi = [{"role": "user", "content": "hi"}]
        >>> report = audit_requests([{"messages": hi}, {"messages": [{"role": "user",
        ...                          "content": "bye"}]}], encoding="bytes/4")
        >>> [(b.request, b.message, b.reason) for b in report.prefix_breaks]
        [(1, 0, 'message_changed')]
    """
    return _audit(
        enumerate(requests),
        lambda i: f"requests[{i}]",
        from_file=False,
        format=format,
        encoding=encoding,
        price_read=price_read,
        price_write=price_write,
        source=None,
        prices=prices,
    )


def audit_file(
    path_or_dash: str | Path,
    *,
    format: str = "auto",
    encoding: str = DEFAULT_ENCODING,
    price_read: float | None = None,
    price_write: float | None = None,
    prices: PriceTable | None = None,
) -> AuditReport:
    """Audit a JSON Lines file (``"-"``: standard input), or every session file under a
    folder.

    A file holds successive model requests (bodies, request-log lines or ``{request,
    response}`` pairs) or is a coding agent's session file (a Claude Code transcript, a Codex
    rollout); which, is detected. Blank lines are skipped; every other line must fit the
    file's kind. The whole file is read before anything is reported. A folder: every
    ``*.jsonl`` under it (a Claude Code project folder, a Codex sessions folder), the
    provider's numbers aggregated across sessions (:func:`audit_directory`).

    Raises:
        AuditError: ``RMD-111`` naming the line that is not valid JSON, not an object, not a
            request, or of another format than the lines before it; or no request at all.
        ConfigError: ``RMD-104`` for an unknown format or encoding, or a negative price.
        OSError: the file cannot be read.
    """
    source = str(path_or_dash)
    if source != "-" and Path(source).is_dir():
        return audit_directory(source, prices=prices, encoding=encoding)
    label = "stdin" if source == "-" else source
    lines: Iterator[tuple[int, object]] = read_lines(path_or_dash, name=label)
    return _audit(
        lines,
        lambda n: f"{label} line {n}",
        from_file=True,
        format=format,
        encoding=encoding,
        price_read=price_read,
        price_write=price_write,
        source=source,
        prices=prices,
    )


def _billed_calls(path: Path, *, encoding: str, prices: PriceTable | None) -> list[Call]:
    """The billed requests of one file of a folder: none for an empty file, a session with
    no answer yet, or request bodies without usage (a folder holds such files; they are left
    out, not refused). A line that is not what its file is still refuses the whole folder."""
    from .sources import detect, read_claude_code, read_codex

    label = str(path)
    objects = list(read_lines(path, name=label))
    if not objects:
        return []
    kind = detect(objects)
    if kind == "claude_code":
        return read_claude_code(objects, label)
    if kind == "codex":
        return read_codex(objects, label)
    report = _audit(
        objects,
        lambda n: f"{label} line {n}",
        from_file=True,
        format="auto",
        encoding=encoding,
        price_read=None,
        price_write=None,
        source=label,
        prices=prices,
    )
    return [] if report.billed is None else [r.call for r in report.billed.rows]


def audit_directory(
    folder: str | Path, *, prices: PriceTable | None = None, encoding: str = DEFAULT_ENCODING
) -> AuditReport:
    """Every ``*.jsonl`` under ``folder`` (searched recursively, in name order), the
    provider's numbers of all of them in one report: each file's requests keep their
    session (a file without session ids is a session of its own), so misses are found per
    conversation and counted across sessions. Files with nothing billed in them (empty, a
    session with no answer, request bodies without usage) are left out; ``files`` lists the
    others.

    Raises:
        AuditError: ``RMD-111``: a file that is not a session file or a request log, naming
            it and the line; a folder with no ``*.jsonl`` or no billed request.
    """
    from .billed import analyze

    root = Path(folder)
    files = sorted(p for p in root.rglob("*.jsonl") if p.is_file())
    if not files:
        raise AuditError(f"{folder}: no *.jsonl file under this folder")
    calls: list[Call] = []
    read: list[str] = []
    for path in files:
        found = _billed_calls(path, encoding=encoding, prices=prices)
        if found:
            read.append(str(path))
        for call in found:
            session = call.session if call.session is not None else str(path)
            calls.append(replace(call, index=len(calls), session=session))
    if not calls:
        raise AuditError(f"{folder}: no file under it holds the provider's numbers (usage)")
    # one timeline across files: by time where known (stable: a file keeps its order)
    if all(c.timestamp is not None for c in calls):
        calls.sort(key=lambda c: c.timestamp or datetime.min)
        calls = [replace(c, index=i) for i, c in enumerate(calls)]
    return AuditReport(
        format="directory",
        encoding=encoding,
        rows=(),
        prefix_breaks=(),
        source=str(folder),
        billed=analyze(calls, prices),
        files=tuple(read),
    )
