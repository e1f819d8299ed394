"""The tools of a session that come and go, and how each change reaches the model.

A request's ``tools`` list sits at the very front of the cached prompt: changing it makes the
provider prefill the whole prompt again. :class:`ToolSet` keeps the tools a session offers now
(``Session.add_tools`` / ``Session.remove_tools``, or ``agent_loop``'s ``tools``) and decides,
at each request, how a change is told:

- on a model that takes tool changes inside a mid-conversation system entry (Anthropic's
  tool-change beta), the request keeps the ``tools`` it declared first, byte for byte, and the
  change rides the next system-channel envelope as ``tool_addition`` / ``tool_removal``
  blocks — nothing is prefilled again;
- elsewhere the request's ``tools`` change (a prefix break an audit names ``tools_changed``;
  the session records a ``tools_changed`` event), and an announced-delta generator tells the
  model what changed (``create_announced_delta`` over the tool names; see
  ``examples/mcp_tools_delta.py``) — the session adds no text of its own there, so a session
  that never uses the tool-change path sends exactly what it always sent.

Neutral blocks: ``{"type": "tool_addition", "name", "description", "parameters"}`` and
``{"type": "tool_removal", "name"}``; each wire format renders them its own way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._core.events import EventLog, Kind
from ._core.request import Tool

__all__ = ["ToolPlan", "ToolSet", "tool_change_text"]


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """What one request does about tools.

    Attributes:
        specs: The request's ``tools``.
        blocks: Tool-change blocks for the envelope (the tool-change path).
        added: Names offered since the model was last told.
        removed: Names withdrawn since the model was last told.
    """

    specs: tuple[dict[str, Any], ...]
    blocks: tuple[dict[str, Any], ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def record(self, log: EventLog, turn: int) -> None:
        """A ``tools_changed`` event on ``log`` when this plan adds or removes a tool."""
        if self.added or self.removed:
            payload = {"turn_number": turn, "added": list(self.added)}
            payload["removed"], payload["in_envelope"] = list(self.removed), bool(self.blocks)
            log.keep(Kind.TOOLS_CHANGED, "transcript.tools", payload)


def tool_change_text(block: Mapping[str, Any]) -> str:
    """A tool-change block as one line of text, for a wire format without such blocks.

    Example:
        >>> tool_change_text({"type": "tool_removal", "name": "browser"})
        'Tool browser is no longer available.'
    """
    name = block.get("name", "")
    if block.get("type") == "tool_removal":
        return f"Tool {name} is no longer available."
    description = str(block.get("description") or "").strip()
    return f"Tool {name} is available from here on" + (f": {description}" if description else ".")


class ToolSet:
    """The tools a session offers, and what the model was last told about them.

    Example:
        >>> tools = ToolSet()
        >>> tools.add(Tool(name="ls", description="List files.", parameters={}, fn=lambda: ""))
        >>> tools.plan(tool_changes=False).specs[0]["name"]
        'ls'
        >>> tools.remove("ls")
        >>> tools.plan(tool_changes=False).removed
        ('ls',)
    """

    def __init__(
        self,
        declared: Sequence[Mapping[str, Any]] | None = None,
        announced: Iterable[str] | None = None,
    ) -> None:
        self.tools: dict[str, Tool] = {}
        # the ``tools`` the tool-change path declared in its first request (kept byte for
        # byte after), and the names the model was last told of; None: nothing yet
        self.declared: tuple[dict[str, Any], ...] | None = (
            None if declared is None else tuple(dict(s) for s in declared)
        )
        self.announced: tuple[str, ...] | None = None if announced is None else tuple(announced)

    def add(self, *tools: Tool) -> None:
        """Offer ``tools`` from the next request on (a tool already offered under the same
        name and spec is left as it is).

        Raises:
            TypeError: not a ``Tool``.
            ValueError: another tool of the same name is offered already.
        """
        for tool in tools:
            if not isinstance(tool, Tool):
                raise TypeError(f"tools must be Tool values, not {type(tool).__name__}")
            offered = self.tools.get(tool.name)
            if offered is not None and offered.spec() != tool.spec():
                raise ValueError(f"a tool named {tool.name!r} is offered already; remove it first")
        for tool in tools:
            self.tools.setdefault(tool.name, tool)

    def remove(self, *names: str) -> None:
        """Stop offering the named tools from the next request on.

        Raises:
            ValueError: a name that is not offered (naming it and those that are).
        """
        unknown = sorted(n for n in names if n not in self.tools)
        if unknown:
            offered = ", ".join(sorted(self.tools)) or "none"
            raise ValueError(f"no tool named {', '.join(unknown)}; offered now: {offered}")
        for name in names:
            del self.tools[name]

    def sync(self, tools: Iterable[Tool]) -> None:
        """Offer exactly ``tools`` (what ``agent_loop`` was given), in their order."""
        wanted = list(tools)
        self.add(*[t for t in wanted if t.name not in self.tools])
        names = {t.name for t in wanted}
        self.remove(*[n for n in self.tools if n not in names])

    def plan(self, *, tool_changes: bool) -> ToolPlan:
        """What the next request sends, and what it tells the model; the told state moves
        on (call it once per request). ``tool_changes``: the request's envelope goes on a
        system entry of a model that takes tool-change blocks."""
        current = tuple(t.spec() for t in self.tools.values())
        names = tuple(s["name"] for s in current)
        told = self.announced
        # a session that never offered a tool has nothing told (and nothing to save)
        self.announced = names if names or told is not None else None
        if tool_changes:
            if self.declared is None:
                self.declared = current
            if told is None:
                told = tuple(s["name"] for s in self.declared)
        before = names if told is None else told  # nothing told yet: nothing to tell
        added = [s for s in current if s["name"] not in before]
        removed = [n for n in before if n not in names]
        delta = {"added": tuple(s["name"] for s in added), "removed": tuple(removed)}
        if tool_changes:
            assert self.declared is not None
            blocks = [{"type": "tool_addition", **s} for s in added]
            blocks += [{"type": "tool_removal", "name": n} for n in removed]
            return ToolPlan(specs=self.declared, blocks=tuple(blocks), **delta)
        self.declared = None  # a model without tool changes is sent what is offered now
        return ToolPlan(specs=current, **delta)
