"""The one place where generated source becomes a function.

A few functions on the hot path are written out as straight-line source at import, from a table,
the way ``dataclasses`` writes ``__init__``: the ``__init__`` of the frozen records
:func:`~agent_reminders._core.frozen.fast_init` speeds up, and the field checks of the reminder
table (``check_record``, the strict option parser and ``ParsedOptions.given``, the bridge payload
checks) in :mod:`~agent_reminders._core.fields`. No other module compiles or executes source.

Each generated function is kept honest three ways:

- its source is kept: :data:`GENERATED` holds it by filename, :func:`generated` finds it from the
  function, and the filename (``<fast_init module.Record>``, ``<reminder field table>``, ...)
  names it in tracebacks, which show its lines (they are registered with :mod:`linecache`);
- beside it, where it is built, is a plain reference version (a loop over the same table) that
  says what it does; :class:`Generated` pairs the two;
- a property test runs both on valid and invalid inputs and requires the same result, or the
  same exception with the same message (``tests/properties/test_compiled.py``).

What the generated code buys over its reference, measured side by side in one run by
``bench/compiled.py`` (``make bench``; AMD EPYC, 2 cores, Python 3.11, a shared machine): a
record's ``__init__`` runs in 0.05 to 0.1 of the reference's time (0.4 µs against 7 µs for a
four-field record: the reference binds its arguments with :mod:`inspect`, the generated one
lets the interpreter do it), ``check_record`` in about half (1.9 µs against 4.4 µs per
``Reminder`` made from stored values), the option parser in about 0.6, ``ParsedOptions.given``
in 0.2, the payload checks in about 0.45. ``bench/results.md`` keeps the figures of the last
run.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["GENERATED", "Generated", "compile_function", "generated"]


@dataclass(frozen=True, slots=True)
class Generated:
    """A generated function, its source and its plain reference version.

    Attributes:
        name: The function's name in its source.
        filename: What tracebacks call it (``<...>``).
        source: The source text it was compiled from.
        function: The compiled function.
        reference: The plain version that specifies it: the same arguments give the same
            result, or the same exception with the same message (argument binding aside, see
            :func:`~agent_reminders._core.frozen.fast_init`).
    """

    name: str
    filename: str
    source: str
    function: Callable[..., Any]
    reference: Callable[..., Any]


# Every function compiled so far, by filename (a filename compiled again replaces its entry).
GENERATED: dict[str, Generated] = {}


def compile_function(
    source: str,
    namespace: dict[str, Any],
    name: str,
    *,
    filename: str,
    reference: Callable[..., Any],
) -> Any:
    """Compile ``source`` (which defines the function ``name``) with ``namespace`` as its
    globals and return the function.

    ``filename`` names it in tracebacks (which show its source lines); the source and
    ``reference``, the plain version that specifies it, are kept in :data:`GENERATED`.

    Example:
        >>> double = compile_function(
        ...     "def double(x):\\n    return x * 2\\n",
        ...     {},
        ...     "double",
        ...     filename="<example double>",
        ...     reference=lambda x: x + x,
        ... )
        >>> double(21)
        42
        >>> print(generated(double).source, end="")
        def double(x):
            return x * 2
    """
    if not source.endswith("\n"):
        source += "\n"
    exec(compile(source, filename, "exec"), namespace)
    function = namespace[name]
    # mtime None: linecache.checkcache keeps the entry (there is no file to compare with)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    GENERATED[filename] = Generated(name, filename, source, function, reference)
    return function


def generated(function: Callable[..., Any]) -> Generated:
    """The :class:`Generated` entry of a function :func:`compile_function` made.

    Raises:
        KeyError: ``function`` was not made by :func:`compile_function`.
    """
    filename = function.__code__.co_filename
    entry = GENERATED.get(filename)
    if entry is None or entry.function is not function:
        raise KeyError(f"{function!r} is not a generated function")
    return entry
