"""The reference pages' tables (``tools/reference_tables.py``, filled in by the mkdocs hook) hold
every name the code defines: every reminder field, event kind, error code, command, option and
configuration key. A name added to the code without its words here fails, so the reference
cannot fall behind silently."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import typer

from agent_reminders import Kind, Reminder, explain
from agent_reminders.bridge import config as bridge_config
from agent_reminders.bridge.auth import TOKEN_KEYS
from agent_reminders.cli import app
from agent_reminders.config import DirectiveBudget, ReminderOptions
from agent_reminders.providers.base import COMMON_CONFIG
from agent_reminders.providers.registry import CANONICAL_PROVIDERS, OPTIONAL_PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def ref() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_tables", ROOT / "tools" / "reference_tables.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reference_tables"] = module
    spec.loader.exec_module(module)
    return module


def test_every_field_is_in_the_fields_table(ref: ModuleType) -> None:
    text = ref.fields_table()
    names = [f.name for f in dataclasses.fields(Reminder)]
    assert set(ref.FIELD_WORDS) == set(names)
    for name in names:
        assert f"| `{name}` |" in text
    assert "`reminder_id`" in text  # id's key in events


def test_every_kind_is_in_the_events_table(ref: ModuleType) -> None:
    text = ref.events_table()
    names = [k for k in vars(Kind) if k.isupper()]
    assert len(names) >= 13
    for name in names:
        assert f"| `{getattr(Kind, name)}` |" in text, name


def known_codes() -> list[str]:
    """Every code ``explain`` knows, found by asking it (RMD-001 … RMD-999)."""
    codes = []
    for number in range(1, 1000):
        try:
            explain(f"RMD-{number:03d}")
        except KeyError:
            continue
        codes.append(f"RMD-{number:03d}")
    return codes


def test_every_code_is_in_the_errors_table(ref: ModuleType) -> None:
    text = ref.errors_table()
    codes = known_codes()
    assert {"RMD-001", "RMD-009", "RMD-101"} <= set(codes)
    for code in codes:
        title = explain(code).split(" (", 1)[1].split("): ", 1)[0]
        assert f"| `{code}` | {title} |" in text


def _command_paths() -> set[str]:
    """Every command path, from typer's own registrations (not the walk under test)."""
    paths = set()

    def walk(typer_app: typer.Typer, prefix: str) -> None:
        for command in typer_app.registered_commands:
            name = command.name or (command.callback.__name__ if command.callback else "")
            paths.add(f"{prefix} {name.replace('_', '-')}")
        for group in typer_app.registered_groups:
            assert group.typer_instance is not None
            assert group.name is not None
            paths.add(f"{prefix} {group.name}")
            walk(group.typer_instance, f"{prefix} {group.name}")

    walk(app, "agent-reminders")
    return paths


def test_every_command_and_option_is_in_the_cli_table(ref: ModuleType) -> None:
    text = ref.cli_table()
    paths = _command_paths()
    assert {"agent-reminders remind", "agent-reminders hook install codex"} <= paths
    for path in paths:
        assert f"### `{path}`" in text, path
    for path, command, _ in ref.commands():
        section = text.split(f"### `{path}`\n", 1)[1].split("\n### ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                assert param.opts[0] in section, (path, param.opts)


def test_every_config_key_is_in_the_config_tables(ref: ModuleType) -> None:
    options = ref.reminder_options_table()
    for f in dataclasses.fields(ReminderOptions):
        assert f"| `{f.name}` |" in options
    assert "restraint" in options
    assert "directive_budget" in options
    budget = ref.directive_budget_table()
    for f in dataclasses.fields(DirectiveBudget):
        assert f"| `{f.name}` |" in budget
    providers = ref.providers_table()
    keys = set()
    for spec in (*CANONICAL_PROVIDERS, *OPTIONAL_PROVIDERS):
        assert f"| `{spec.id}` |" in providers
        for key in spec.config_schema:
            keys.add(f"{spec.id}.{key}")
            assert f"| `{spec.id}.{key}` |" in providers
    assert set(ref.PROVIDER_KEY_WORDS) == keys
    common = ref.common_provider_keys_table()
    assert set(ref.COMMON_KEY_WORDS) == set(COMMON_CONFIG)
    for key in COMMON_CONFIG:
        assert f"| `{key}` |" in common
    server = ref.bridge_server_table()
    for key in bridge_config.SERVER_KEYS:
        assert f"| `{key}` |" in server
    tokens = ref.bridge_tokens_table()
    assert set(ref.TOKEN_KEY_WORDS) == set(TOKEN_KEYS)
    for key in TOKEN_KEYS:
        assert f"| `{key}` |" in tokens


def test_every_table_has_words_for_every_row(ref: ModuleType) -> None:
    for name, make in ref.TABLES.items():
        for row in make().splitlines():
            if row.startswith("| `"):
                assert not row.endswith("|  |"), (name, row)  # an empty last cell


def test_every_table_is_on_a_page_and_every_marker_names_a_table(ref: ModuleType) -> None:
    used = set()
    for page in DOCS.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for name in re.findall(r"^<!-- generated: ([\w-]+) -->$", text, re.M):
            assert name in ref.TABLES, f"{page.name}: no table {name!r}"
            used.add(name)
        assert "<!-- generated:" not in ref.expand(text)
    assert used == set(ref.TABLES)
