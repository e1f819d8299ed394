"""The package layout rules of ARCHITECTURE.md: import directions, light imports, __all__."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agent_reminders

PACKAGE = Path(agent_reminders.__file__).resolve().parent
CORE = PACKAGE / "_core"

# Every public module path (docs/core.md, "Layout"), plus the public subpackages of the layout.
PUBLIC_MODULES = [
    "agent_reminders",
    "agent_reminders.audit",
    "agent_reminders.bridge",
    "agent_reminders.cli",
    "agent_reminders.config",
    "agent_reminders.demo",
    "agent_reminders.demo.scenario",
    "agent_reminders.facts",
    "agent_reminders.generators",
    "agent_reminders.hooks",
    "agent_reminders.integrations",
    "agent_reminders.integrations.anthropic",
    "agent_reminders.integrations.claude_agent_sdk",
    "agent_reminders.integrations.claude_code",
    "agent_reminders.integrations.driver",
    "agent_reminders.integrations.gemini",
    "agent_reminders.integrations.langchain",
    "agent_reminders.integrations.openai",
    "agent_reminders.integrations.pydantic_ai",
    "agent_reminders.integrations.openai_agents",
    "agent_reminders.loop",
    "agent_reminders.models",
    "agent_reminders.models.anthropic",
    "agent_reminders.models.openai",
    "agent_reminders.providers",
    "agent_reminders.queue",
    "agent_reminders.session",
    "agent_reminders.storage",
    "agent_reminders.testing",
]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) for every import statement of a source file (level 0 = absolute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
        elif isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
    return found


def test_the_core_exists_and_has_modules() -> None:
    names = {p.stem for p in CORE.glob("*.py")}
    assert {"errors", "records", "fields", "messages", "transcript", "lifecycle"} <= names
    assert {"envelope", "events", "request"} <= names


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_imports_nothing_else_of_the_package(path: Path) -> None:
    stdlib = set(sys.stdlib_module_names)
    for level, module in _imports(path):
        if level == 0:
            top = module.split(".")[0]
            assert top != "agent_reminders", f"{path.name} imports {module}"
            assert top in stdlib or top == "__future__", f"{path.name} imports {module}"
        else:
            assert level == 1, f"{path.name} reaches out of _core with a level-{level} import"


def test_core_modules_import_in_isolation() -> None:
    """Each core module imports on its own, in a fresh interpreter, loading no other part of
    the package but _core (the package __init__ runs first; look at what it needs)."""
    script = textwrap.dedent(
        """
        import importlib, json, sys
        for name in %r:
            importlib.import_module(name)
        print(json.dumps(sorted(sys.modules)))
        """
    ) % ([f"agent_reminders._core.{p.stem}" for p in sorted(CORE.glob("*.py"))],)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("module", ["sqlite3", "typer", "rich", "anyio", "click"])
def test_import_agent_reminders_stays_light(module: str) -> None:
    # every name of the package (they are imported when first read), not only its __init__
    script = (
        "import json, sys\nfrom agent_reminders import *\nprint(json.dumps(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "agent_reminders.session" in loaded  # the probe really imported the package
    assert not {m for m in loaded if m == module or m.startswith(f"{module}.")}


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_has_a_sorted_resolvable_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert isinstance(exported, list), f"{name}.__all__ must be a list"
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr!r}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_classes_and_functions_have_docstrings(name: str) -> None:
    module = importlib.import_module(name)
    for attr in module.__all__:
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), f"{name}.{attr} has no docstring"


# Names that refer to an object of the class being defined (its own private members).
OWN = {"self", "cls", "new", "child", "view", "other", "err", "sys", "os"}


def test_no_module_uses_another_modules_private_members() -> None:
    """`x._name` attribute access where x is not self/cls is confined to the module defining it."""
    offenders: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in OWN)
            ):
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                offenders.append(f"{where} {ast.unparse(node)}")
    assert offenders == []


# Tests that read private modules on purpose, and why.
PRIVATE_READERS = {
    "properties/test_compiled.py": "compares the generated functions with their references",
    "core/test_event_payloads.py": "checks the event table the docs are made from against the "
    "records a session writes",
}


def test_no_test_imports_a_private_module() -> None:
    tests = Path(__file__).resolve().parents[1]
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        if path.relative_to(tests).as_posix() in PRIVATE_READERS:
            continue
        for _, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "agent_reminders" and any(p.startswith("_") for p in parts[1:]):
                offenders.append(f"{path.relative_to(tests)}: {module}")
    assert offenders == []
