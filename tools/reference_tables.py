"""The reference pages' tables, generated from the library's own tables at build time.

A page writes ``<!-- generated: NAME -->`` on a line of its own; ``tools/mkdocs_hooks.py``
replaces it with ``TABLES[NAME]()``. Every name in a table comes from the code (the field
table, the event table, the code table, the command line, the option and provider records), so
a new field, kind, code, command or key shows up in the docs by itself; the few descriptions the
code does not hold are below, and ``tests/cli/test_reference_tables.py`` fails when one is
missing.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import typer
from typer import _click as click

from agent_reminders._core.errors import CODES, family_for_code
from agent_reminders._core.event_payloads import EVENTS, LIFECYCLE_IDS
from agent_reminders._core.events import LIFECYCLE_TOPIC
from agent_reminders._core.fields import FIELDS, OPTION_KEYS, PAYLOAD_KEYS, Field
from agent_reminders._options import DirectiveBudget, ReminderOptions
from agent_reminders.bridge import config as bridge_config
from agent_reminders.bridge.auth import TOKEN_KEYS
from agent_reminders.cli import app
from agent_reminders.providers.base import COMMON_CONFIG, ProviderSpec
from agent_reminders.providers.registry import CANONICAL_PROVIDERS, OPTIONAL_PROVIDERS

MARKER = re.compile(r"^<!-- generated: (?P<name>[\w-]+) -->$", re.M)

# What each reminder field is for (the code holds its rule and default, not its purpose).
FIELD_WORDS: dict[str, str] = {
    "id": "The reminder's id: `directive_ids`, events, `revoke` and `clear_reminders` name it.",
    "body": "The text the model reads, escaped into its directive; kept as given.",
    "tags": "Labels to select reminders by (`clear_reminders`, the bridge); never rendered.",
    "dedupe_key": "A newer reminder with the same key replaces the pending one; also the key "
    "the cadence counts.",
    "ttl_turns": "How many assistant turns the directive lives after the request that first "
    "shows it; none: until cleared, resolved or compacted away.",
    "first_after": "Cadence: the key may not fire before this turn of the session.",
    "cooldown_turns": "Cadence: once the key fired at turn T, not again before T + N.",
    "max_fires": "Cadence: the key fires at most this many times in the session.",
    "preserve_on_compact": "Kept (and stated again) when a compaction archives the history.",
    "propagate": "Whether sub-agents inherit it: `all` (every descendant), `session` (direct "
    "children only) or `none`.",
    "role_hint": "Picks the envelope's `speaker` (`user_block`: the person); never a wire role.",
    "authority": "Precedence inside the envelope: `contract` > `corrective` > `advisory`.",
    "source": "Who produced it (set by the producer, not by options): audit and grants read it.",
    "fired_at_turn": "The turn it was stamped with; its lifetime counts from there.",
    "originating_agent_id": "For an inherited reminder, the agent it came from.",
}

# What each canonical provider's own config keys mean (their types are in its CONFIG).
PROVIDER_KEY_WORDS: dict[str, str] = {
    "goal_anchor.goal": "The goal to restate; by default the session's first task.",
    "grounded_review.max_findings": "How many findings one reminder lists.",
    "grounded_review.include_warnings": "Count warnings as findings, not only failures.",
    "idle_nudge.idle_seconds": "The idle pause that earns a nudge, in seconds (wins over "
    "`seconds`; below 1 is raised to 1).",
    "idle_nudge.seconds": "The same, under a shorter name.",
    "project_facts.store": "A `FactStore` to read instead of the file at `path`.",
    "project_facts.path": "The fact store's file (default `.agent-reminders/facts.db`).",
    "project_facts.namespace": "The namespace to recall facts from.",
    "project_facts.max_facts": "How many facts one reminder states (at most 25).",
    "project_facts.min_confidence": "Facts below this confidence are left out.",
    "project_facts.kind_filter": "Only facts of these kinds (`decision`, `constraint`, …).",
    "project_facts.relevance_query": "What the recall ranks by; by default the task.",
    "project_facts.refresh_ratio": "Live tokens over the window at which it states the facts "
    "again under pressure.",
    "project_facts.context_window": "The window to measure that ratio against.",
    "token_pressure.context_window": "The model's context window, when the loop does not say.",
}

# The keys every provider takes (agent_reminders.providers.base.COMMON_CONFIG).
COMMON_KEY_WORDS: dict[str, str] = {
    "cadence": "The cadence of the provider's reminders, field by field (`first_after`, "
    "`cooldown_turns`, `max_fires`; `None` turns one off). It wins over what a result sets and "
    "over the provider's default under restraint.",
    "interval": "After a turn the provider fired at, it is not asked again for this many turns "
    "(an int > 0; the providers table shows each provider's own).",
}

# The [[tokens]] keys of the bridge's config file (checked in agent_reminders.bridge.auth).
TOKEN_KEY_WORDS: dict[str, str] = {
    "token": "The secret a WebSocket client sends (`Authorization: Bearer`), at least 16 "
    "characters.",
    "token_env": "Read the token from this environment variable instead.",
    "sessions": "The session ids it may reach (`*`: all; default).",
    "max_authority": "The highest authority its reminders may take (default `advisory`).",
    "prompt": "It may call `session/new`, `session/load`, `session/prompt` and `session/cancel`"
    " (default false: it may only push, list and revoke).",
    "admin": "Every session and `contract` authority, whatever the other keys say (default false).",
    "cadence": "A cadence every reminder pushed with it takes unless the reminder sets one.",
}


def cell(text: object) -> str:
    """``text`` fit for one cell of a Markdown table: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code(value: object) -> str:
    return f"`{value}`"


def attributes(cls: type) -> dict[str, str]:
    """The ``Attributes:`` section of a Google-style class docstring, by name."""
    doc = inspect.getdoc(cls) or ""
    found: dict[str, str] = {}
    if "Attributes:" not in doc:
        return found
    name = None
    for line in doc.split("Attributes:", 1)[1].splitlines()[1:]:
        if line and not line.startswith(" "):
            break  # the next section
        entry = re.match(r"^    (\w+): (.*)$", line)
        if entry:
            name, found[entry.group(1)] = entry.group(1), entry.group(2)
        elif name and line.startswith("        "):
            found[name] += " " + line.strip()
    return {k: re.sub(r"``(.*?)``", r"`\1`", re.sub(r":\w+:`", "`", v)) for k, v in found.items()}


# -- reminder fields ---------------------------------------------------------------------------


def field_rule(f: Field) -> str:
    """The field's rule in its own words: what it says to a value it refuses."""
    try:
        f.rule(object(), f.name, "RMD-001")
    except Exception as exc:  # every rule refuses a bare object, naming the field
        text = str(getattr(exc, "message", exc))
        return text.split("; got")[0].removeprefix(f.name + " ").removeprefix("RMD-001: ")
    raise AssertionError(f"the rule of {f.name} accepted a bare object")


def field_default(f: Field) -> str:
    if f.factory is not None:
        return "a new id (UUIDv7)" if f.name == "id" else "made for you"
    if f.required:
        return "required"
    value = f.wire(f.default) if f.wire and f.default is not None else f.default
    return _default(value)


def fields_table() -> str:
    def where(f: Field) -> str:
        places = [
            p
            for p, ok in (("options", f.name in OPTION_KEYS), ("bridge", f.name in PAYLOAD_KEYS))
            if ok
        ]
        return ", ".join(places) or "set by the library"

    rows = [
        (
            code(f.name),
            field_rule(f),
            field_default(f),
            where(f),
            code(f.event),
            FIELD_WORDS[f.name],
        )
        for f in FIELDS
    ]
    return table(("field", "rule", "default", "set through", "event key", "what it is"), rows)


# -- events ------------------------------------------------------------------------------------


def events_table() -> str:
    def keys(shape: Any) -> str:
        text = ", ".join(code(k) for k in shape.keys)
        if shape.optional:
            text += "; sometimes " + ", ".join(code(k) for k in shape.optional)
        return text

    rows = [
        (
            code(s.kind),
            code(s.topic) if s.topic != LIFECYCLE_TOPIC else "lifecycle",
            s.when,
            keys(s),
        )
        for s in EVENTS
    ]
    note = (
        f"\n\nEvery record on the lifecycle topic (`{LIFECYCLE_TOPIC}`) starts its payload with "
        + ", ".join(code(k) for k in LIFECYCLE_IDS)
        + "; the keys above come after them."
    )
    return table(("kind", "topic", "when", "payload keys"), rows) + note


# -- error codes -------------------------------------------------------------------------------


def errors_table() -> str:
    def raised_by(number: str) -> str:
        cls = family_for_code(number)
        return code(cls.__name__) if cls is not None else "a diagnostic (not raised)"

    rows = [(code(n), title, raised_by(n), text) for n, (title, text) in CODES.items()]
    return table(("code", "title", "raised as", "cause and fix"), rows)


# -- the command line --------------------------------------------------------------------------


def _help(text: str | None) -> str:
    return (text or "").replace("\\[", "[").strip()


def commands() -> list[tuple[str, click.Command, click.Context]]:
    """Every command of the ``agent-reminders`` app, groups too, as ``(path, command, ctx)``."""
    found: list[tuple[str, click.Command, click.Context]] = []

    def walk(command: click.Command, path: str, parent: click.Context | None) -> None:
        ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        found.append((path, command, ctx))
        if hasattr(command, "list_commands"):  # a group
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}", ctx)

    walk(typer.main.get_command(app), "agent-reminders", None)
    return found


def cli_table() -> str:
    parts = []
    for path, command, ctx in commands():
        help_text = _help(command.help).split("\n\n")
        parts.append(f"### `{path}`\n\n" + "\n\n".join(help_text))
        rows = []
        for param in command.params:
            record = param.get_help_record(ctx)
            if record is not None and not getattr(param, "hidden", False):
                rows.append((code(_help(record[0])), _help(record[1])))
        if rows:
            parts.append(table(("option or argument", "meaning"), rows))
    return "\n\n".join(parts)


# -- configuration -----------------------------------------------------------------------------


def _default(value: object) -> str:
    if value is dataclasses.MISSING:
        return "required"
    if isinstance(value, bool):
        return code(str(value).lower())
    if value is None:
        return "none"
    if value == () or value == {}:
        return "empty"
    return code(value)


def dataclass_rows(cls: type, names: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    words = attributes(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    rows = []
    for name in names or by_name:
        f = by_name[name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        rows.append((code(name), _default(default), words.get(name, "")))
    return rows


def reminder_options_table() -> str:
    return table(("`reminders.` key", "default", "meaning"), dataclass_rows(ReminderOptions))


def directive_budget_table() -> str:
    return table(
        ("`reminders.directive_budget.` key", "default", "meaning"), dataclass_rows(DirectiveBudget)
    )


def common_provider_keys_table() -> str:
    rows = [(code(k), COMMON_KEY_WORDS[k]) for k in COMMON_CONFIG]
    return table(("`reminders.config.<id>.` key", "meaning"), rows)


def _types(types: tuple[type, ...]) -> str:
    names = ["list of str" if t in (list, tuple) else t.__name__ for t in types]
    return " or ".join(dict.fromkeys(names))


def _cadence(spec: ProviderSpec) -> str:
    return "; ".join(
        f"{event}: " + ", ".join(f"{k}={v}" for k, v in fields.items())
        for event, fields in spec.cadence.items()
    )


def providers_table() -> str:
    specs: list[ProviderSpec] = [*CANONICAL_PROVIDERS, *OPTIONAL_PROVIDERS]
    rows = [
        (
            code(s.id),
            "yes" if s.canonical else "no (name it in `reminders.providers`)",
            ", ".join(code(e) for e in s.subscribes_to),
            _cadence(s) or "none",
            "none" if s.interval is None else str(s.interval),
            s.description,
        )
        for s in specs
    ]
    header = (
        "provider",
        "on by default",
        "evaluated on",
        "cadence under restraint",
        "interval",
        "what it does",
    )
    keys = [
        (code(f"{s.id}.{k}"), _types(t), PROVIDER_KEY_WORDS[f"{s.id}.{k}"])
        for s in specs
        for k, t in s.config_schema.items()
    ]
    return (
        table(header, rows)
        + "\n\nEach provider's own keys (`reminders.config.<id>.<key>`; `None` means the "
        "default):\n\n" + table(("key", "type", "meaning"), keys)
    )


def bridge_server_table() -> str:
    words = attributes(bridge_config.BridgeSettings)
    defaults = {f.name: f.default for f in dataclasses.fields(bridge_config.BridgeSettings)}
    rows = []
    for key, kind in bridge_config.SERVER_KEYS.items():
        setting = bridge_config.SERVER_SETTINGS.get(key, key)
        kind_name = getattr(kind, "__name__", str(kind)).replace(" | ", " or ")
        rows.append((code(key), kind_name, _default(defaults.get(setting)), words.get(setting, "")))
    return table(("`[server]` key", "type", "default", "meaning"), rows)


def bridge_tokens_table() -> str:
    return table(
        ("`[[tokens]]` key", "meaning"), [(code(k), TOKEN_KEY_WORDS[k]) for k in TOKEN_KEYS]
    )


TABLES: Mapping[str, Callable[[], str]] = {
    "fields": fields_table,
    "events": events_table,
    "errors": errors_table,
    "cli": cli_table,
    "reminder-options": reminder_options_table,
    "directive-budget": directive_budget_table,
    "provider-common": common_provider_keys_table,
    "providers": providers_table,
    "bridge-server": bridge_server_table,
    "bridge-tokens": bridge_tokens_table,
}


def expand(markdown: str) -> str:
    """``markdown`` with every ``<!-- generated: NAME -->`` line replaced by its table."""
    return MARKER.sub(lambda m: TABLES[m.group("name")](), markdown)
