"""Every source file stays at most 600 lines and every function at most 100 (``ast``:
``end_lineno - lineno + 1``), so that no module or function grows past what one reading can
hold. ``KNOWN_LARGE`` lists what exceeded it when the check was added, with its size then:
an entry may not grow, and one that no longer exceeds the limit must leave the list, so the
list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "agent_reminders"
FILE_LIMIT = 600
FUNCTION_LIMIT = 100

# "path" (relative to src/agent_reminders) for a file, "path:qualified.name" for a function
KNOWN_LARGE: dict[str, int] = {
    "_core/envelope.py": 781,
    "_core/errors.py": 705,
    "_core/fields.py": 1072,
    "_core/transcript.py": 763,
    "demo/scenario.py": 704,
    "facts.py": 619,
    "session.py": 835,
    "testing/store_contract.py": 844,
}


def _sizes() -> dict[str, tuple[int, int]]:
    """Every file's and every function's size, keyed as in ``KNOWN_LARGE``, with the line
    it starts on."""
    sizes: dict[str, tuple[int, int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        sizes[rel] = (len(text.splitlines()), 1)
        _functions(ast.parse(text), rel, "", sizes)
    return sizes


def _functions(node: ast.AST, rel: str, prefix: str, sizes: dict[str, tuple[int, int]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                assert child.end_lineno is not None
                sizes[f"{rel}:{name}"] = (child.end_lineno - child.lineno + 1, child.lineno)
            _functions(child, rel, f"{name}.", sizes)
        else:
            _functions(child, rel, prefix, sizes)


def _limit(key: str) -> int:
    return FUNCTION_LIMIT if ":" in key else FILE_LIMIT


SIZES = _sizes()


def test_no_file_or_function_exceeds_its_limit() -> None:
    offenders = [
        f"{key.split(':')[0]}:{line} {key.partition(':')[2] or '(file)'} is {size} lines "
        f"(limit {_limit(key)})"
        for key, (size, line) in SIZES.items()
        if size > _limit(key) and key not in KNOWN_LARGE
    ]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("key", sorted(KNOWN_LARGE))
def test_a_known_large_one_only_shrinks(key: str) -> None:
    assert key in SIZES, f"{key} is gone: remove it from KNOWN_LARGE"
    size, line = SIZES[key]
    where = f"{key.split(':')[0]}:{line}"
    assert size <= KNOWN_LARGE[key], (
        f"{where} {key} grew to {size} lines (KNOWN_LARGE holds {KNOWN_LARGE[key]})"
    )
    assert size > _limit(key), (
        f"{where} {key} is {size} lines, within the limit: remove it from KNOWN_LARGE"
    )
