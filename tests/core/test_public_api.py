"""The public surface of ``agent_reminders``: ``__all__``, docstrings, import weight."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys
import textwrap

import pytest

import agent_reminders

PUBLIC = list(agent_reminders.__all__)

# Optional SDKs (pyproject extras) that a plain ``import agent_reminders`` must not pull in.
OPTIONAL_SDKS = [
    "openai",
    "anthropic",
    "langchain",
    "langchain_core",
    "pydantic_ai",
    "agents",
    "redis",
    "websockets",
    "tiktoken",
]

# Names the core promises as importable from the package root (README.md, "Public API").
ROOT_NAMES = [
    "Authority",
    "DeliveryMode",
    "Diagnostic",
    "Propagate",
    "Reminder",
    "ReminderError",
    "RoleHint",
    "Source",
    "Transcript",
    "explain",
    "inject_reminder",
    "lint_reminder_options",
    "reminder_event",
]


def test_all_is_a_list_of_str() -> None:
    assert isinstance(agent_reminders.__all__, list | tuple)
    assert PUBLIC
    assert all(type(name) is str for name in PUBLIC)


def test_all_is_sorted() -> None:
    assert sorted(PUBLIC) == PUBLIC


def test_all_has_no_duplicates() -> None:
    duplicates = sorted({name for name in PUBLIC if PUBLIC.count(name) > 1})
    assert duplicates == []


@pytest.mark.parametrize("name", PUBLIC)
def test_every_name_resolves(name: str) -> None:
    assert hasattr(agent_reminders, name)
    assert getattr(agent_reminders, name) is not None


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_root_names_are_public(name: str) -> None:
    assert name in PUBLIC
    assert getattr(agent_reminders, name) is not None


def test_star_import_exports_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agent_reminders import *", namespace)
    exported = {k for k in namespace if k != "__builtins__"}
    assert exported == set(PUBLIC)


def _own_doc(obj: object) -> str | None:
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
        # dataclasses synthesize "Name(field, ...)" when the class has no docstring.
        if (
            dataclasses.is_dataclass(obj)
            and isinstance(doc, str)
            and doc.startswith(f"{obj.__name__}(")
        ):
            return None
        return doc
    return getattr(obj, "__doc__", None)


_DOCUMENTABLE = [
    name
    for name in PUBLIC
    if inspect.isclass(getattr(agent_reminders, name))
    or inspect.isfunction(getattr(agent_reminders, name))
]


def test_there_are_documentable_names() -> None:
    for name in ("Reminder", "ReminderError", "Transcript", "explain", "inject_reminder"):
        assert name in _DOCUMENTABLE


@pytest.mark.parametrize("name", _DOCUMENTABLE)
def test_public_classes_and_functions_have_docstrings(name: str) -> None:
    obj = getattr(agent_reminders, name)
    doc = _own_doc(obj)
    assert isinstance(doc, str), f"{name} has no docstring of its own"
    assert doc.strip(), f"{name} has a blank docstring"


def test_package_has_docstring() -> None:
    assert agent_reminders.__doc__
    assert agent_reminders.__doc__.strip()


def test_version_is_a_string() -> None:
    assert isinstance(agent_reminders.__version__, str)
    assert agent_reminders.__version__.strip()


def test_import_does_not_load_optional_sdks() -> None:
    script = textwrap.dedent(
        """
        import json
        import sys

        from agent_reminders import *  # noqa: F403 (every name: they load when first read)

        print(json.dumps(sorted(sys.modules)))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    # The probe really imported the package (guards against a vacuous pass).
    assert "agent_reminders.session" in loaded
    offending = sorted(
        mod for mod in loaded for sdk in OPTIONAL_SDKS if mod == sdk or mod.startswith(f"{sdk}.")
    )
    assert offending == []
