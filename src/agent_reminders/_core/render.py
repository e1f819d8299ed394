"""Envelope text: escaping, directives, envelopes, and defanging of untrusted text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from .errors import ReminderError
from .records import Reminder, RoleHint

__all__ = [
    "ENVELOPE_INSTRUCTIONS",
    "EnvelopeStyle",
    "escape_body",
    "message_text",
    "neutralize_untrusted",
    "render_directive",
    "render_envelope",
]

EnvelopeStyle = Literal["context_directives", "system_reminder"]
STYLES: tuple[str, ...] = ("context_directives", "system_reminder")

ENVELOPE_INSTRUCTIONS = (
    "These context directives come from the runtime that hosts this conversation, not from a "
    "tool result or a file. Follow each directive according to its authority and its lifetime. "
    "Authority: contract overrides corrective, and corrective overrides advisory. Lifetime: a "
    'directive marked ttl_turns="N" applies only to the N assistant turns right after the '
    "message in which it first appears; it is not renewed when the conversation history is sent "
    "again, so after those turns treat it as expired. A directive appended later starts a "
    "lifetime of its own, even when its text repeats an earlier one. A directive without "
    'ttl_turns holds until a later directive changes it. speaker="harness" means the runtime '
    "wrote these directives: act on them without answering them back and without reciting "
    'them unless asked; speaker="person" means they carry the words of the person you work '
    "with. Directives never require hiding anything from the person: if asked about them, "
    "answer honestly."
)

# One rendered directive: escaped bodies hold no "<", so a match can neither start inside a
# stray unclosed opening tag nor run past its own closing tag.
DIRECTIVE_BLOCK = re.compile(
    r'<directive authority="(?:contract|corrective|advisory)"(?: ttl_turns="\d+")?>\n'
    r"[^<]*\n</directive>"
)

# Any opening or closing envelope tag, in any case, with white space or line breaks inside.
_LOOKALIKE_TAG = re.compile(
    r"<(?=\s*/?\s*(?:context-directives|directive|system-reminder))", re.IGNORECASE
)


def escape_body(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` (in that order) so no body can open or close an element."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_directive(reminder: Reminder) -> str:
    """Render one ``<directive>`` element for a reminder.

    Example:
        >>> render_directive(Reminder(body="a < b", authority="corrective", ttl_turns=1))
        '<directive authority="corrective" ttl_turns="1">\\na &lt; b\\n</directive>'
    """
    if not isinstance(reminder, Reminder):
        raise TypeError(f"expected a Reminder, not {type(reminder).__name__}")
    ttl = "" if reminder.ttl_turns is None else f' ttl_turns="{reminder.ttl_turns}"'
    return (
        f'<directive authority="{reminder.authority.value}"{ttl}>\n'
        f"{escape_body(reminder.body)}\n</directive>"
    )


def check_style(style: object) -> EnvelopeStyle:
    if style == "context_directives":
        return "context_directives"
    if style == "system_reminder":
        return "system_reminder"
    raise ReminderError(
        "RMD-001", f"style must be one of {', '.join(map(repr, STYLES))}; got {style!r}"
    )


def render_envelope(
    reminders: Iterable[Reminder],
    *,
    style: EnvelopeStyle = "context_directives",
    instructions: bool = True,
) -> str:
    """Render one envelope holding the given reminders, in the given order.

    ``context_directives`` (default) wraps the directives in ``<context-directives
    speaker="…">``, led by :data:`ENVELOPE_INSTRUCTIONS` unless ``instructions=False``.
    ``system_reminder`` joins the escaped bodies with a blank line inside ``<system-reminder>``
    and never carries the instructions. This function does not project; see ``project``.

    Raises:
        ReminderError: ``RMD-001`` for an unknown style or an empty list.
    """
    items = list(reminders)
    checked = check_style(style)
    if not items:
        raise ReminderError("RMD-001", "reminders is empty: an envelope needs at least one")
    for item in items:
        if not isinstance(item, Reminder):
            raise TypeError(f"expected Reminder items, not {type(item).__name__}")
    if checked == "system_reminder":
        text = "\n\n".join(escape_body(r.body) for r in items)
        return f"<system-reminder>\n{text}\n</system-reminder>"
    person = all(r.role_hint is RoleHint.USER_BLOCK for r in items)
    lines = [f'<context-directives speaker="{"person" if person else "harness"}">']
    if instructions:
        lines.append(ENVELOPE_INSTRUCTIONS)
    lines.extend(render_directive(r) for r in items)
    lines.append("</context-directives>")
    return "\n".join(lines)


def neutralize_untrusted(text: str) -> str:
    """Defang look-alike envelope tags in text that comes from outside.

    Every opening or closing tag of ``context-directives``, ``directive`` or
    ``system-reminder`` — any case, with attributes or white space inside — has its ``<``
    replaced by ``&lt;``. All other text is returned unchanged.

    Example:
        >>> neutralize_untrusted('ok </Directive >')
        'ok &lt;/Directive >'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    return _LOOKALIKE_TAG.sub("&lt;", text)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a neutral message: its string content, or its text blocks joined by ``\\n``."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
        )
    return ""
