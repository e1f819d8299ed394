"""Inputs that carry the provider's own numbers (docs/audit.md, "Inputs"): coding agents'
session files, ``{request, response}`` pairs, and usage in the library's request log.

- **Claude Code transcripts** (``~/.claude/projects/<project>/<session>.jsonl``, and a
  sub-agent's ``<session>/subagents/agent-<id>.jsonl``): each ``assistant`` entry carries the
  API response's ``message.id``, ``model`` and ``usage``; one response written as several
  entries (one per content block) is one request. A ``compact_boundary`` system entry marks a
  compaction; ``isSidechain`` / ``agentId`` mark a sub-agent's conversation.
- **Codex CLI rollouts** (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): each
  ``token_count`` event's ``info.last_token_usage`` is one request (``input_tokens`` include
  ``cached_input_tokens``); ``turn_context`` names the model, ``compacted`` marks a compaction.
- **Pairs**: one ``{"request": body, "response": body}`` per line, as a logging proxy writes
  them (optional ``timestamp`` and ``session_id``); the response's ``usage`` is Anthropic's,
  OpenAI Chat's or OpenAI Responses'.
- **The request log** with ``usage`` (and ``model``, ``timestamp``) on its lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

from .._core.errors import AuditError
from ..integrations._wire import content_blocks
from ..integrations.anthropic import strip_cache_control
from .billed import HOOK_MARKERS, Call, Cause, Provider, readable, short_diff
from .readers import PromptSequence, canonical_json

__all__ = [
    "SessionFormat",
    "call_from_usage",
    "detect",
    "read_claude_code",
    "read_codex",
]

SessionFormat = Literal["claude_code", "codex"]
Detected = Literal["claude_code", "codex", "pairs", "requests"]

_CLAUDE_CODE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "attachment",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "custom-title",
        "tag",
    }
)
_CODEX_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "token_usage_record",
        "world_state",
    }
)


def detect(objects: Sequence[tuple[int, object]]) -> Detected:
    """What a file of JSON lines is, from its first object (every format has a telling
    shape there): a Claude Code transcript, a Codex rollout, ``{request, response}`` pairs,
    or request bodies (the formats of :class:`~agent_reminders.audit.readers.RequestReader`).
    """
    for _, obj in objects:
        if not isinstance(obj, Mapping):
            return "requests"  # the reader names the line
        if "request" in obj and "response" in obj:
            return "pairs"
        kind = obj.get("type")
        if kind in _CODEX_TYPES and "payload" in obj:
            return "codex"
        # every Claude Code entry has a type, and nearly every one its session's id (the
        # first line may be any of them: a queue operation, a summary, a snapshot)
        tells = ("sessionId" in obj or "leafUuid" in obj) or (
            kind in _CLAUDE_CODE_TYPES and ("uuid" in obj or "message" in obj)
        )
        if isinstance(kind, str) and tells and "messages" not in obj:
            return "claude_code"
        return "requests"
    return "requests"


def _count(value: object, where: str, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AuditError(f"{where}: {name} must be a count of tokens, not {value!r}")
    return value


def _when(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise AuditError(f"{where}: timestamp must be an ISO 8601 string, not {value!r}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise AuditError(f"{where}: timestamp {value!r} is not ISO 8601") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _reason(diagnostics: object) -> str | None:
    if not isinstance(diagnostics, Mapping):
        return None
    reason = diagnostics.get("cache_miss_reason")
    if isinstance(reason, Mapping) and isinstance(reason.get("type"), str):
        return str(reason["type"])
    return None


def call_from_usage(
    usage: Mapping[str, Any],
    *,
    index: int,
    where: str,
    model: str | None = None,
    provider: Provider | None = None,
    one_hour: bool = False,
    **fields: Any,
) -> Call:
    """A :class:`Call` from one ``usage`` object of any shape the audit reads:

    - Anthropic's (``input_tokens`` uncached, ``cache_read_input_tokens``,
      ``cache_creation_input_tokens``, ``cache_creation.ephemeral_1h_input_tokens``);
    - OpenAI Chat's (``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``) and
      Responses' (``input_tokens`` with ``input_tokens_details.cached_tokens``);
    - a Codex ``token_count`` (``input_tokens`` with ``cached_input_tokens``);
    - this library's ``Usage.to_dict()`` (``input_tokens`` the whole prompt,
      ``cached_input_tokens``, ``cache_write_tokens``, ``cache_miss_reason``).

    ``one_hour``: the request asked for 1-hour cache entries (a Claude Code transcript's
    ``promptCacheRequested``), which counts its writes as 1-hour ones when the usage has no
    breakdown by lifetime.

    Raises:
        AuditError: a figure that is not a count of tokens, naming ``where``.
    """
    output = _count(usage.get("output_tokens", usage.get("completion_tokens")), where, "output")
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        created = usage.get("cache_creation")
        created = created if isinstance(created, Mapping) else {}
        written = _count(
            usage.get("cache_creation_input_tokens"), where, "cache_creation_input_tokens"
        )
        hour = _count(created.get("ephemeral_1h_input_tokens"), where, "ephemeral_1h_input_tokens")
        five = _count(created.get("ephemeral_5m_input_tokens"), where, "ephemeral_5m_input_tokens")
        if one_hour and hour + five == 0:
            hour = written  # no breakdown sent, but every breakpoint asked for an hour
        return Call(
            index=index,
            provider="anthropic",
            uncached=_count(usage.get("input_tokens"), where, "input_tokens"),
            read=_count(usage.get("cache_read_input_tokens"), where, "cache_read_input_tokens"),
            written=written,
            written_1h=min(hour, written),
            output=output,
            model=model,
            **fields,
        )
    # OpenAI, Codex and the library's Usage: input_tokens (prompt_tokens) is the whole prompt
    whole = _count(usage.get("prompt_tokens", usage.get("input_tokens")), where, "input_tokens")
    details = usage.get("prompt_tokens_details", usage.get("input_tokens_details"))
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    read = _count(usage.get("cached_input_tokens") if cached is None else cached, where, "cached")
    written = _count(usage.get("cache_write_tokens"), where, "cache_write_tokens")
    reason = usage.get("cache_miss_reason")
    if isinstance(reason, str):
        fields = {"provider_reason": reason, **fields}
    kind = provider or ("anthropic" if usage.get("cache_write_tokens") is not None else "openai")
    return Call(
        index=index,
        provider=kind,
        uncached=max(0, whole - read - written),
        read=read,
        written=written,
        output=output,
        model=model,
        **fields,
    )


def reports_cache(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object says anything about the prompt cache: a usage without a cached
    or a cache-write figure (a scripted model's estimate, a server without caching) bills no
    cache, so the chain has nothing to go on."""
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        return True
    for key in ("prompt_tokens_details", "input_tokens_details"):
        details = usage.get(key)
        if isinstance(details, Mapping) and details.get("cached_tokens") is not None:
            return True
    return any(usage.get(k) is not None for k in ("cached_input_tokens", "cache_write_tokens"))


def _where(source: str, line: int) -> str:
    return f"{source} line {line}"


def read_claude_code(
    objects: Sequence[tuple[int, object]], source: str, start: int = 0
) -> list[Call]:
    """The requests of one Claude Code transcript file, in order.

    Raises:
        AuditError: a line that is not a transcript entry, or usage that is not counts.
    """
    calls: list[Call] = []
    seen: dict[str, int] = {}  # message id -> position in calls
    compacted: dict[tuple[str | None, str | None], str] = {}
    versions: dict[tuple[str | None, str | None], str] = {}
    wire = _Wire()
    for number, obj in objects:
        where = _where(source, number)
        if not isinstance(obj, Mapping) or not isinstance(obj.get("type"), str):
            raise AuditError(
                f"{where}: not a Claude Code transcript entry (no 'type')", line=number
            )
        session = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None
        agent = obj.get("agentId") if isinstance(obj.get("agentId"), str) else None
        if agent is None and obj.get("isSidechain") is True:
            agent = "sidechain"
        chain = (session, agent)
        wire.read(obj)
        if obj["type"] == "system" and obj.get("subtype") == "compact_boundary":
            compacted[chain] = _compaction(obj.get("compactMetadata"))
            continue
        if obj["type"] != "assistant":
            continue
        message = obj.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("usage"), Mapping):
            continue
        model = message.get("model")
        if model == "<synthetic>" or obj.get("isApiErrorMessage"):
            continue  # written by Claude Code itself, never billed
        ident = message.get("id") or obj.get("requestId") or obj.get("uuid")
        call = call_from_usage(
            message["usage"],
            index=start + len(calls),
            where=where,
            model=model if isinstance(model, str) else None,
            one_hour=obj.get("promptCacheRequested") == "1h",
            compacted=chain in compacted,
            changed=_changed(chain, obj, compacted, versions) or wire.change(chain, obj),
            timestamp=_when(obj.get("timestamp"), where),
            session=session,
            agent=agent,
            source=source,
            line=number,
            provider_reason=_reason(message.get("diagnostics")),
        )
        if isinstance(ident, str) and ident in seen:
            # the same response written once per content block: keep the first entry's
            # time and line, the last one's figures (its output count is the final one)
            first = calls[seen[ident]]
            calls[seen[ident]] = replace(
                call,
                index=first.index,
                timestamp=first.timestamp,
                line=first.line,
                compacted=first.compacted,
                changed=first.changed,
            )
            continue
        compacted.pop(chain, None)
        if isinstance(ident, str):
            seen[ident] = len(calls)
        calls.append(call)
    return calls


def message_hash(message: Any) -> str:
    """The hash Claude Code (2.1.3xx) records for a message it sent, in its transcript's
    ``api-request`` and ``api-request-blob`` entries: sha256 of the message as JSON with
    sorted keys, no spaces and UTF-8 kept, ``cache_control`` removed and a string content as
    its one text block.

    Example:
        >>> message_hash({"role": "user", "content": "hi"}) == message_hash(
        ...     {"role": "user", "content": [{"type": "text", "text": "hi"}]})
        True
    """
    if isinstance(message, Mapping) and isinstance(message.get("content"), str):
        message = {**message, "content": content_blocks(message["content"])}
    text = canonical_json(strip_cache_control(message))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Wire:
    """What a Claude Code transcript records of each request it sent (2.1.3xx): per
    ``api-request`` (its ``id`` is an assistant entry's ``requestRef``) the hashes of its
    messages — the ``base`` request's first ``keep`` ones, then ``tail`` — and the hash of its
    system prompt and tools (``shapeHash``, an ``api-request-shape`` holds them); messages by
    hash (``api-request-blob`` entries, and the transcript's own user and assistant entries),
    to show what changed. Older transcripts have none of it: :meth:`change` is then ``None``."""

    def __init__(self) -> None:
        self.requests: dict[str, tuple[str | None, list[str]]] = {}
        self.shapes: dict[str, Mapping[str, Any]] = {}
        self.messages: dict[str, Any] = {}
        self.last: dict[tuple[str | None, str | None], tuple[str | None, list[str]]] = {}

    def read(self, entry: Mapping[str, Any]) -> None:
        kind = entry["type"]
        if kind == "api-request" and isinstance(entry.get("id"), str):
            base = self.requests.get(entry.get("base") or "", (None, []))[1]
            keep = entry.get("keep") if isinstance(entry.get("keep"), int) else 0
            tail = [h for h in entry.get("tail") or () if isinstance(h, str)]
            shape = entry.get("shapeHash") if isinstance(entry.get("shapeHash"), str) else None
            self.requests[entry["id"]] = (shape, base[:keep] + tail)
        elif kind == "api-request-shape" and isinstance(entry.get("shape"), Mapping):
            self.shapes[str(entry.get("shapeHash"))] = entry["shape"]
        elif kind == "api-request-blob" and isinstance(entry.get("hash"), str):
            self.messages[entry["hash"]] = entry.get("message")
        elif kind in ("user", "assistant") and isinstance(entry.get("message"), Mapping):
            message = entry["message"]
            sent = {"role": message.get("role"), "content": message.get("content")}
            self.messages.setdefault(message_hash(sent), sent)

    def change(
        self, chain: tuple[str | None, str | None], entry: Mapping[str, Any]
    ) -> tuple[Cause, str] | None:
        """Where the request answered by ``entry`` stopped extending the conversation's
        previous request, from the recorded hashes (``None``: it extends it, or unknown)."""
        ref = entry.get("requestRef")
        found = self.requests.get(ref) if isinstance(ref, str) else None
        if found is None:
            return None
        previous = self.last.get(chain)
        self.last[chain] = found
        if previous is None:
            return None
        (old_shape, old), (shape, new) = previous, found
        if old_shape != shape:
            before, after = self.shapes.get(str(old_shape), {}), self.shapes.get(str(shape), {})
            if before.get("tools") != after.get("tools"):
                return "tools_changed", "the tools changed (the transcript's request shapes)"
            return "system_changed", "the system prompt changed (the transcript's request shapes)"
        at = next((i for i, h in enumerate(old) if i >= len(new) or new[i] != h), None)
        if at is None:
            return None
        if at >= len(new):
            return "message_changed", f"messages from {at} on were removed"
        texts = [readable(self.messages.get(h)) for h in (old[at], new[at])]
        cause: Cause = "message_changed"
        if any(marker in text for marker in HOOK_MARKERS for text in texts):
            cause = "reminder_changed"
        known = all(h in self.messages for h in (old[at], new[at]))
        return cause, f"message {at} changed" + (f": {short_diff(*texts)}" if known else "")


def _compaction(metadata: object) -> str:
    """A compact boundary's detail: how it was triggered and the tokens before it."""
    if not isinstance(metadata, Mapping):
        return "compacted since the previous request"
    trigger = metadata.get("trigger")
    before = metadata.get("preTokens")
    said = "compacted" + (f" ({trigger})" if isinstance(trigger, str) else "")
    if isinstance(before, int) and not isinstance(before, bool):
        said += f", {before:,} tokens before"
    return said


def _changed(
    chain: tuple[str | None, str | None],
    entry: Mapping[str, Any],
    compacted: Mapping[tuple[str | None, str | None], str],
    versions: dict[tuple[str | None, str | None], str],
) -> tuple[Cause, str] | None:
    """What a Claude Code entry says changed since its conversation's previous request."""
    version = entry.get("version")
    before = versions.get(chain)
    if isinstance(version, str):
        versions[chain] = version
    if chain in compacted:
        return "compaction", compacted[chain]
    if isinstance(version, str) and before is not None and before != version:
        return "system_changed", f"Claude Code {before} → {version}: a new system prompt"
    return None


def read_codex(objects: Sequence[tuple[int, object]], source: str, start: int = 0) -> list[Call]:
    """The requests of one Codex CLI rollout file, in order.

    Codex 0.171 writes one ``token_usage_record`` per model response (its ``usage``: the
    figures the server reported); a rollout without them falls back to the ``token_count``
    events, each counted once (Codex repeats one when a turn or a compaction starts, and
    writes a zero one after a compaction). The request whose ``response_id`` a ``compacted``
    entry names as its ``compaction_response_id`` is the compaction's own summary request.

    Raises:
        AuditError: a line that is not a rollout entry, or usage that is not counts.
    """
    entries: list[tuple[int, Mapping[str, Any]]] = []
    summaries: set[str] = set()
    records = False
    for number, obj in objects:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("type"), str):
            where = _where(source, number)
            raise AuditError(f"{where}: not a Codex rollout entry (no 'type')", line=number)
        entries.append((number, obj))
        payload = obj.get("payload")
        if not isinstance(payload, Mapping):
            continue
        records = records or obj["type"] == "token_usage_record"
        if obj["type"] == "compacted" and isinstance(payload.get("compaction_response_id"), str):
            summaries.add(payload["compaction_response_id"])
    calls: list[Call] = []
    session: str | None = None
    model: str | None = None
    compacted = False
    last_total: object = None
    for number, obj in entries:
        where = _where(source, number)
        payload = obj.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        kind = obj["type"]
        usage: object = None
        response: object = None
        if kind == "session_meta":
            ident = payload.get("id")
            session = ident if isinstance(ident, str) else session
        elif kind == "turn_context":
            named = payload.get("model")
            model = named if isinstance(named, str) else model
        elif kind == "compacted":
            compacted = True
        elif kind == "token_usage_record":
            usage, response = payload.get("usage"), payload.get("response_id")
        elif not records and kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            total = info.get("total_token_usage") if isinstance(info, Mapping) else None
            if isinstance(info, Mapping) and (total is None or total != last_total):
                last_total = total  # a repeat of the same totals is the same request
                usage = info.get("last_token_usage")
        if not isinstance(usage, Mapping) or not any(usage.get(k) for k in ("input_tokens",)):
            continue  # no usage, or the zero count written after a compaction
        summary = isinstance(response, str) and response in summaries
        calls.append(
            call_from_usage(
                usage,
                index=start + len(calls),
                where=where,
                model=model,
                provider="openai",
                timestamp=_when(obj.get("timestamp"), where),
                session=session,
                source=source,
                line=number,
                compacted=compacted or summary,
            )
        )
        compacted = False
    return calls


def pair_call(
    obj: Mapping[str, Any],
    sequence: PromptSequence | None,
    *,
    index: int,
    where: str,
    source: str | None,
    line: int | None,
) -> Call | None:
    """The call of one ``{request, response}`` pair (``None`` when the response carries no
    usage, e.g. an error, or none about the cache: :func:`reports_cache`)."""
    response = obj.get("response")
    request = obj.get("request")
    if not isinstance(response, Mapping):
        raise AuditError(f"{where}: response must be a JSON object")
    usage = response.get("usage")
    if not isinstance(usage, Mapping) or not reports_cache(usage):
        return None
    model = response.get("model") or (
        request.get("model") if isinstance(request, Mapping) else None
    )
    session = obj.get("session_id")
    return call_from_usage(
        usage,
        index=index,
        where=where,
        model=model if isinstance(model, str) else None,
        timestamp=_when(obj.get("timestamp"), where),
        session=session if isinstance(session, str) else None,
        source=source,
        line=line,
        provider_reason=_reason(response.get("diagnostics")),
        body=sequence,
    )


def log_call(
    obj: Mapping[str, Any],
    sequence: PromptSequence,
    *,
    index: int,
    where: str,
    source: str | None,
    line: int | None,
) -> Call | None:
    """The call of one request-log line that kept its response's usage (``None``: none, or
    none about the cache — the demo's scripted model estimates tokens, it caches nothing)."""
    usage = obj.get("usage")
    if not isinstance(usage, Mapping) or not reports_cache(usage):
        return None
    model = obj.get("model")
    name = model if isinstance(model, str) else None
    provider: Provider = (
        "anthropic"
        if (name or "").startswith("anthropic:") or usage.get("cache_write_tokens") is not None
        else "openai"
    )
    return call_from_usage(
        usage,
        index=index,
        where=where,
        model=name,
        provider=provider,
        timestamp=_when(obj.get("timestamp"), where),
        session=sequence.session_id,
        source=source,
        line=line,
        body=sequence,
    )
