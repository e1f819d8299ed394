"""The model's turn after a directive, read from the next request, and the nag rate's one
heuristic on it (docs/audit.md, "Nag rate"): did the turn mention the directive or act on it?

A heuristic, named as one everywhere: a turn that obeys a directive without a word of it, or
mentions it while doing the opposite, is judged wrong.

Example:
    >>> turn = AssistantTurn.of([{"role": "assistant", "content": "Running the tests.",
    ...                           "tool_calls": [{"id": "c1", "name": "bash",
    ...                                           "arguments": {"command": "pytest -q"}}]}])
    >>> turn.ignored("Run `pytest` before you finish."), turn.ignored("Update CHANGELOG.md.")
    (False, True)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["STOP_WORDS", "AssistantTurn", "next_assistant_turn", "strings"]

_STOP_TEXT = """
about above after again against always among another before being below between cannot
could doing during either every first further having might maybe never often other others
ought please rather really shall should since still their theirs there these thing things
those through under until using where which while whose would yours
directive directives reminder reminders runtime harness
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""Words of five letters or more that say nothing about what a directive asks for: they do not
count as the model mentioning it."""

_SALIENT = re.compile(r"[^\W\d_]{5,}")  # a run of five letters or more
_LETTERS = re.compile(r"[^\W\d_]+")
_NAME = re.compile(r"[^\W_][\w.-]*|_[\w.-]+")  # a tool or command name: read_file, pytest, rg
# keys whose strings name things rather than say them: never read as the turn's words
_ID_KEYS = frozenset(
    {
        "id",
        "call_id",
        "tool_use_id",
        "tool_call_id",
        "type",
        "role",
        "signature",
        "encrypted_content",
    }
)
_COMMAND_KEYS = frozenset({"command", "cmd"})


def strings(value: Any) -> Iterable[str]:
    """Every string of a JSON value but those under id-like keys, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in _ID_KEYS:
                yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def _is_assistant(item: Any) -> bool:
    """A message or item of the model's own turn: an assistant message, or a Responses item
    without a role that the model made (``function_call``, ``reasoning``…)."""
    if not isinstance(item, Mapping):
        return False
    if "role" in item:
        return bool(item["role"] == "assistant")
    kind = str(item.get("type", ""))
    return kind.endswith("_call") or kind == "reasoning"


def _calls(value: Any) -> Iterable[tuple[str, Any]]:
    """``(name, arguments)`` of every tool call in a JSON value (Chat's ``function``,
    Anthropic's ``tool_use``, a Responses ``function_call``, a neutral ``tool_call``)."""
    if isinstance(value, Mapping):
        name = value.get("name")
        if isinstance(name, str) and ("arguments" in value or "input" in value):
            yield name, value.get("arguments", value.get("input"))
        for item in value.values():
            yield from _calls(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _calls(item)


def _commands(value: Any) -> Iterable[str]:
    """The strings under ``command`` / ``cmd`` keys of tool-call arguments (a JSON string of
    arguments is read as JSON)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:  # arguments that are not JSON are the model's text, not a command
            return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in _COMMAND_KEYS:
                yield from strings(item)
            else:
                yield from _commands(item)


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """The model's turn after a request: its words, and the tools and commands it ran."""

    words: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, items: Sequence[Any]) -> AssistantTurn:
        text = "\n".join(s for item in items for s in strings(item)).lower()
        names = set()
        for name, arguments in _calls(items):
            names.add(name.lower())
            for command in _commands(arguments):
                names.update(_names(command)[:1])
        return cls(words=frozenset(_LETTERS.findall(text)), names=frozenset(names))

    def ignored(self, body: str) -> bool | None:
        """Whether this turn ignored directive ``body``: ``False`` when the turn mentions one
        of its salient words (five letters or more, not :data:`STOP_WORDS`) or runs a tool or
        command it names; else ``True`` — or ``None`` (not judged) when the body has no
        salient word to look for (``"Run `make lint`."`` is judged only by the command)."""
        lowered = body.lower()
        salient = {w for w in _SALIENT.findall(lowered) if w not in STOP_WORDS}
        if salient & self.words or self.names.intersection(_names(lowered)):
            return False
        return True if salient else None


def _names(text: str) -> list[str]:
    """The names in ``text`` a tool or command could have, lower-cased, in order."""
    return [w.rstrip(".-") for w in _NAME.findall(text.lower())]


def next_assistant_turn(messages: Sequence[Any], start: int) -> AssistantTurn | None:
    """The first assistant turn at or after ``start`` (its consecutive items), if any."""
    at = start
    while at < len(messages) and not _is_assistant(messages[at]):
        at += 1
    end = at
    while end < len(messages) and _is_assistant(messages[end]):
        end += 1
    return AssistantTurn.of(messages[at:end]) if end > at else None
