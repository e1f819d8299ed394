"""A missing optional package is not an internal error: the command prints one line naming what
is missing and the ``pip install "agent-reminders[…]"`` that brings it, and exits 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_process import run_python

TOKEN = "token-0123456789abcdef"

# (package hidden, command, extra that brings it back)
CASES = {
    "remind --url without websockets": (
        "websockets",
        ["remind", "hi", "--url", "ws://127.0.0.1:9/"],
        "bridge",
    ),
    "serve --ws without websockets": (
        "websockets",
        ["serve", "--store", "memory:", "--ws", "127.0.0.1:0", "--config", "bridge.toml"],
        "bridge",
    ),
    "serve on redis without redis-py": (
        "redis",
        ["serve", "--store", "redis://127.0.0.1:9/0"],
        "redis",
    ),
    "serve --model openai without the SDK": (
        "openai",
        ["serve", "--store", "memory:", "--model", "openai:gpt-4.1-mini"],
        "openai",
    ),
    "serve --model anthropic without the SDK": (
        "anthropic",
        ["serve", "--store", "memory:", "--model", "anthropic:claude-sonnet-4-5"],
        "anthropic",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_missing_extra_is_one_line_with_its_install_command(tmp_path: Path, case: str) -> None:
    package, args, extra = CASES[case]
    (tmp_path / "bridge.toml").write_text(f'[[tokens]]\ntoken = "{TOKEN}"\n', encoding="utf-8")
    hide = f"import sys; sys.modules[{package!r}] = None  # as if it were not installed"
    done = run_python(hide, *args, cwd=tmp_path)
    assert done.code == 1, done
    assert done.out == ""
    line = done.line
    assert line.startswith("error: ")
    assert "internal error" not in line
    assert "--debug" not in line
    assert package in line
    # worded in one place: what needs it, then the install command, last
    assert line.endswith(f'is not installed: pip install "agent-reminders[{extra}]"'), line
