"""The packages whose ``__init__`` imports its names when they are first read (PEP 562):
every name of ``__all__`` resolves, to the very object its module holds; what the type
checkers are shown (``if TYPE_CHECKING:``) is what is read at run time; ``import *`` and
``dir()`` give every name; and importing the package loads none of the lazy modules.

Each check runs in a fresh interpreter, so the names really are read through the package's
``__getattr__`` and not found in modules an earlier test imported.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import agent_reminders

SRC = Path(agent_reminders.__file__).resolve().parent

LAZY_PACKAGES = [
    "agent_reminders",
    "agent_reminders.integrations",
    "agent_reminders.loop",
    "agent_reminders.providers",
    "agent_reminders.storage",
    "agent_reminders.storage.sqlite",
]


def _init(package: str) -> Path:
    return SRC.joinpath(*package.split(".")[1:], "__init__.py")


def _imported(package: str) -> tuple[dict[str, str], dict[str, str]]:
    """The names the package's ``__init__`` imports, each with its absolute module: those it
    imports when it loads, and those only type checkers see (``if TYPE_CHECKING:``)."""
    tree = ast.parse(_init(package).read_text(encoding="utf-8"))
    eager: dict[str, str] = {}
    lazy: dict[str, str] = {}

    def walk(body: list[ast.stmt], into: dict[str, str]) -> None:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
                into.update({alias.asname or alias.name: module for alias in node.names})
            elif isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                walk(node.body, lazy)

    walk(tree.body, eager)
    return eager, lazy


def _run(script: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, Any] = json.loads(proc.stdout)
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_name_is_the_object_of_its_module(package: str) -> None:
    eager, lazy = _imported(package)
    module = __import__(package, fromlist=["__all__"])
    exported = set(module.__all__)
    assert lazy, f"{package} imports nothing lazily"
    assert not set(lazy) & set(eager)
    assert exported <= set(eager) | set(lazy), "a name of __all__ is imported nowhere"
    assert set(lazy) <= exported, "a lazy name is not in __all__"
    sources = {name: where for name, where in {**eager, **lazy}.items() if name in exported}
    found = _run(
        f"""
        import importlib, json, sys
        package = importlib.import_module({package!r})
        loaded = sorted(m for m in sys.modules if m.startswith("agent_reminders"))
        wrong = []
        for name, where in {sources!r}.items():
            value = getattr(package, name)  # through the package first, as a user reads it
            if value is not getattr(importlib.import_module(where), name):
                wrong.append(name)
        try:
            package.no_such_name
        except AttributeError as exc:
            missing = str(exc)
        print(json.dumps({{"loaded": loaded, "wrong": wrong, "missing": missing}}))
        """
    )
    assert found["wrong"] == []
    assert found["missing"] == f"module {package!r} has no attribute 'no_such_name'"
    # importing the package loaded none of the modules its lazy names live in
    assert not set(lazy.values()) & set(found["loaded"])


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_star_import_and_dir_give_every_name(package: str) -> None:
    found = _run(
        f"""
        import importlib, json
        namespace = {{}}
        exec("from {package} import *", namespace)
        package = importlib.import_module({package!r})
        print(json.dumps({{
            "star": sorted(k for k in namespace if k != "__builtins__"),
            "all": package.__all__,
            "dir": dir(package),
        }}))
        """
    )
    assert found["star"] == sorted(found["all"])
    assert set(found["all"]) <= set(found["dir"])
