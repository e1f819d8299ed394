"""No import cycles among the package's modules.

A module of the package is a node; an edge runs from a module to each module of the package it
imports when it is loaded: top-level import statements, including those inside top-level
``try``/``if``/``with`` blocks and class bodies, but not those inside functions (a lazy import
runs when the function is called, not when the module loads) and not those under
``if TYPE_CHECKING:`` (they never run). ``from pkg import name`` is an edge to ``pkg.name`` when
that is a module of the package, to ``pkg`` otherwise. Importing ``a.b.c`` runs the packages
``a`` and ``a.b`` first, so it is an edge to those too, except to the packages the importing
module is itself inside of (those are loading already). Any cycle in that graph fails the test,
named as a path ``a → b → a``.

The way out of a cycle is moving code to the layer where it belongs; a lazy import inside a
function only where a real upward dependency cannot be avoided.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import agent_reminders

PACKAGE = Path(agent_reminders.__file__).resolve().parent
ROOT_NAME = "agent_reminders"


def module_names(package: Path, root_name: str) -> dict[str, Path]:
    """Dotted module name → source file, for every module under ``package``."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = [root_name, *path.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` (the only guard whose body never runs)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def load_time_imports(body: Iterable[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when a module with this body is loaded."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from load_time_imports(node.body)
            yield from load_time_imports(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            yield from load_time_imports(node.body)
            for handler in node.handlers:
                yield from load_time_imports(handler.body)
            yield from load_time_imports(node.orelse)
            yield from load_time_imports(node.finalbody)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from load_time_imports(node.body)


def import_graph(package: Path, root_name: str) -> dict[str, set[str]]:
    """Module → the modules of the package it imports at load time."""
    modules = module_names(package, root_name)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for node in load_time_imports(tree.body):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            if node.level:
                # `from .x import y` inside a package's __init__ is relative to the package
                # itself; elsewhere to the module's parent package.
                here = name.split(".") if is_package else name.split(".")[:-1]
                base_parts = here[: len(here) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
        loading = _packages_of(name) | {name}
        graph[name] = {
            t
            for target in targets
            for t in (_packages_of(target) | {target})
            if t in modules and t not in loading
        }
    return graph


def _packages_of(name: str) -> set[str]:
    """The packages Python loads before the module ``name``: ``a.b.c`` → ``{a, a.b}``."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def _shortest_cycle_through(graph: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """The shortest path start → … → start (breadth first), or None."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.get(node, ())):
            if child == start:
                path = [start]
                while node != start:
                    path.append(node)
                    node = previous[node]
                return [start, *reversed(path[1:]), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return None


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every module caught in a cycle, with one shortest cycle through it (no duplicates).

    Each cycle is a path ``[a, b, …, a]`` that starts at its smallest member.
    """
    cycles: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for component in _strongly_connected(graph):
        members = set(component)
        if len(component) == 1 and component[0] not in set(graph.get(component[0], ())):
            continue
        inner = {n: [c for c in graph.get(n, ()) if c in members] for n in component}
        for node in component:
            cycle = _shortest_cycle_through(inner, node)
            assert cycle is not None
            loop = cycle[:-1]
            first = loop.index(min(loop))
            canonical = (*loop[first:], *loop[:first])
            if canonical not in seen:
                seen.add(canonical)
                cycles.append([*canonical, canonical[0]])
    return sorted(cycles)


def test_the_package_has_no_import_cycles() -> None:
    graph = import_graph(PACKAGE, ROOT_NAME)
    assert len(graph) > 50  # the walk really found the package's modules
    cycles = [" → ".join(cycle) for cycle in find_cycles(graph)]
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_find_cycles_on_a_synthetic_graph() -> None:
    acyclic = {"a": {"b", "c"}, "b": {"c"}, "c": set[str]()}
    assert find_cycles(acyclic) == []
    graph = {
        "a": {"b"},
        "b": {"a", "c"},
        "c": {"d"},
        "d": {"e"},
        "e": {"c"},
        "f": {"a", "c"},
        "g": {"g"},
    }
    assert find_cycles(graph) == [
        ["a", "b", "a"],
        ["c", "d", "e", "c"],
        ["g", "g"],
    ]


def test_the_graph_reads_imports_as_python_runs_them(tmp_path: Path) -> None:
    """Relative imports, submodules named by `from pkg import name`, and the imports that do not
    run at load time (inside functions, under TYPE_CHECKING)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n"
        "    from .c import C\n"
        "else:\n"
        "    from .sub import d\n"
        "try:\n"
        "    from pkg.sub.e import E\n"
        "except ImportError:\n"
        "    import pkg.c\n"
        "class A:\n"
        "    from .sub import __name__ as _\n"
        "def later():\n"
        "    from .c import C\n"
    )
    (pkg / "b.py").write_text("import os\n")
    (pkg / "c.py").write_text("from .a import A\n")
    # f imports a module of sub: that runs sub's __init__, which imports f
    (pkg / "f.py").write_text("from .sub.e import E\n")
    (pkg / "sub" / "__init__.py").write_text(
        "from ..b import *\nfrom . import d\nfrom ..f import F\n"
    )
    (pkg / "sub" / "d.py").write_text("from .. import a\n")
    (pkg / "sub" / "e.py").write_text("")
    graph = import_graph(pkg, "pkg")
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.b", "pkg.sub", "pkg.sub.d", "pkg.sub.e", "pkg.c"},
        "pkg.b": set(),
        "pkg.c": {"pkg.a"},
        "pkg.f": {"pkg.sub", "pkg.sub.e"},
        "pkg.sub": {"pkg.b", "pkg.sub.d", "pkg.f"},
        "pkg.sub.d": {"pkg.a"},
        "pkg.sub.e": set(),
    }
    assert find_cycles(graph) == [
        ["pkg.a", "pkg.c", "pkg.a"],
        ["pkg.a", "pkg.sub.d", "pkg.a"],
        ["pkg.f", "pkg.sub", "pkg.f"],
    ]
