"""Issue 8, docs conformance: the contracts users program against are written down, with
runnable examples (the Python blocks run in tests/test_cli_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSION_LOOP = (ROOT / "docs" / "session-loop.md").read_text(encoding="utf-8")


def python_blocks(text: str) -> list[str]:
    return [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]


def test_session_loop_no_longer_says_generators_are_refused() -> None:
    assert "only `None` is accepted" not in SESSION_LOOP
    assert "GeneratorRegistry" in SESSION_LOOP


@pytest.mark.parametrize(
    ("topic", "fragments"),
    [
        ("the Model protocol", ["async def __call__", "ModelResponse", "Usage("]),
        ("registering a provider", ["providers.register", "def plan_reminder(ctx"]),
        ("ProviderSkippedError", ["raise ProviderSkippedError", "ProviderContext("]),
        ("hooks", ["hooks.tool(", '"modify"', "pre=lambda call"]),
        ("the script file format", ['"delay_seconds"', "from_file"]),
        ("FunctionModel and capture_events", ["FunctionModel(", "capture_events("]),
    ],
)
def test_each_contract_has_a_runnable_example(topic: str, fragments: list[str]) -> None:
    assert any(all(f in block for f in fragments) for block in python_blocks(SESSION_LOOP)), topic


def test_the_docs_state_the_rules() -> None:
    for rule in (
        "plain, synchronous function",
        "refuses an `async def`",
        "`blocking`",
        "anyio.sleep",
        "a BOM is fine",
        "naming the file, the entry (and line) and the key",
        "`ConfigError`",
    ):
        assert rule in SESSION_LOOP, rule


def test_readme_lists_the_new_test_doubles_and_the_anyio_dependency() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "FunctionModel" in readme
    assert "capture_events" in readme
    assert "anyio" in readme.split("## Install", 1)[1]
