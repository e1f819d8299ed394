"""Lazy exports for the package ``__init__`` modules (PEP 562).

A package lists its public names with the module each lives in; a name's module is imported
the first time the name is read, so importing the package costs nothing of what its names
need (a coding agent's hook runs a fresh process for every event). Each ``__init__`` also
imports every name under ``if TYPE_CHECKING:``, for type checkers and editors;
``tests/core/test_lazy_exports.py`` checks that both say the same.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["exports"]


def exports(
    package: str, modules: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, whose public names are
    ``modules``' values, each read from its key (a module of ``package``, relative to it:
    ``".session"``, ``"._core.errors"``). A name read once is kept in the package's
    namespace, so it is looked up like any other global after that."""
    where = {name: module for module, names in modules.items() for name in names}

    def getattr_(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        absolute = f"{package}{module}"
        __import__(absolute)
        value = getattr(sys.modules[absolute], name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return getattr_, dir_
