"""The demo's repository and tools: files in memory, a pytest that reads them, rg, git diff.

Everything is computed from the files, so a real model (``--model``) can fix the bug too.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Awaitable, Callable, Mapping

from .._core.request import Tool, ToolResult
from .scenario import FILES, WORKSPACE

__all__ = ["Sandbox"]

_ROOT = str(WORKSPACE["primary"]).rstrip("/") + "/"
_TEST_FILE = "tests/test_csv.py"
_MODULE = "src/app/csv.py"
# test name -> (what must be in src/app/csv.py for it to pass, the assertion it fails with)
_RULES: Mapping[str, tuple[tuple[str, ...], str]] = {
    "test_last_row_without_newline": (
        ("text.splitlines()",),
        "assert [['a', 'b']] == [['a', 'b'], ['1', '2']]",
    ),
    "test_quoted_comma": (
        ("import csv as _csv", "_csv.reader("),
        "assert [['a', '\"b', 'c\"']] == [['a', 'b,c']]",
    ),
}


def _rule(width: int, title: str, fill: str = "=") -> str:
    return f" {title} ".center(width, fill)


class Sandbox:
    """The repository of the demo, changed only through its tools."""

    def __init__(self, files: Mapping[str, str] = FILES) -> None:
        self.original = dict(files)
        self.files = dict(files)

    def key(self, path: str) -> str:
        """The file key of ``path`` (relative to the workspace root, or absolute outside it)."""
        path = path.strip()
        if path.startswith(_ROOT):
            path = path[len(_ROOT) :]
        return path.removeprefix("./")

    def add_quoted_test(self, test: str) -> None:
        """What the person does between the tasks: append a test to tests/test_csv.py."""
        self.files[_TEST_FILE] += test

    # -- tools ------------------------------------------------------------------------------

    def read_file(self, path: str, offset: int = 0) -> ToolResult:
        """The text of a file from character ``offset`` on."""
        text = self.files.get(self.key(path))
        if text is None:
            return ToolResult(content=f"read_file: no such file: {path}", ok=False)
        return ToolResult(content=text[max(0, int(offset)) :])

    def edit_file(self, path: str, old: str, new: str) -> ToolResult:
        """Replace the first occurrence of ``old`` by ``new`` in a file."""
        key = self.key(path)
        text = self.files.get(key)
        if text is None:
            return ToolResult(content=f"edit_file: no such file: {path}", ok=False)
        if old not in text:
            return ToolResult(content=f"edit_file: the old text was not found in {path}", ok=False)
        self.files[key] = text.replace(old, new, 1)
        return ToolResult(content=f"Edited {path}: replaced 1 occurrence.")

    def bash(self, command: str) -> ToolResult:
        """Run ``pytest``, ``rg PATTERN`` or ``git diff`` against the files."""
        try:
            words = shlex.split(command)
        except ValueError as exc:
            return ToolResult(content=f"bash: {exc}", ok=False)
        if words and words[0] == "pytest":
            return self.pytest()
        if words and words[0] == "rg":
            operands = [w for w in words[1:] if not w.startswith("-")]
            if operands:
                return self.rg(operands[0], *operands[1:2])
        if words[:2] == ["git", "diff"]:
            return ToolResult(content=self.git_diff() or "(no changes)")
        return ToolResult(
            content=f"bash: {command}: only pytest, rg and git diff run in the demo sandbox",
            ok=False,
        )

    def pytest(self) -> ToolResult:
        """The suite's outcome, decided by what src/app/csv.py contains now."""
        module = self.files[_MODULE]
        source = self.files[_TEST_FILE].splitlines()
        # test name -> (line number, source line) of the assertion after its def
        tests = {
            m.group(1): (number + 1, source[number].strip() if number < len(source) else "")
            for number, line in enumerate(source, 1)
            if (m := re.match(r"def (test_\w+)", line))
        }
        names = list(tests)
        failed = [n for n in names if not all(s in module for s in _RULES.get(n, ((), ""))[0])]
        progress = "".join("F" if n in failed else "." for n in names)
        lines = [f"{progress:<72} [100%]"]
        if failed:
            lines.append(_rule(80, "FAILURES"))
            for name in failed:
                lines += [
                    _rule(80, name, "_"),
                    "",
                    f"    def {name}():",
                    f">       {tests[name][1]}",
                    f"E       AssertionError: {_RULES[name][1]}",
                    "",
                    f"{_TEST_FILE}:{tests[name][0]}: AssertionError",
                ]
            lines.append(_rule(80, "short test summary info"))
            lines += [f"FAILED {_TEST_FILE}::{n} - AssertionError" for n in failed]
        passed = len(names) - len(failed)
        summary = f"{len(failed)} failed, {passed} passed" if failed else f"{passed} passed"
        lines.append(_rule(80, f"{summary} in 0.04s"))
        return ToolResult(content="\n".join(lines), ok=not failed)

    def rg(self, pattern: str, where: str = "") -> ToolResult:
        """``rg -n PATTERN [PATH]`` over the repository's own files (a substring search)."""
        where = self.key(where).rstrip("/")
        hits = [
            f"{key}:{number}:{line}"
            for key, text in sorted(self.files.items())
            if not key.startswith("/")
            and (not where or key == where or key.startswith(where + "/"))
            for number, line in enumerate(text.splitlines(), 1)
            if pattern in line
        ]
        return ToolResult(content="\n".join(hits) or "(no matches)")

    def git_diff(self) -> str:
        """A unified diff of every changed file of the repository."""
        out: list[str] = []
        for key in sorted(self.files):
            before, after = self.original.get(key, ""), self.files[key]
            if before == after or key.startswith("/"):
                continue
            out.append(f"diff --git a/{key} b/{key}")
            out.extend(
                line.rstrip("\n")
                for line in difflib.unified_diff(
                    before.splitlines(True), after.splitlines(True), f"a/{key}", f"b/{key}"
                )
            )
        return "\n".join(out)

    def tools(
        self, delegate: Callable[[str], Awaitable[str]] | None = None, *, read_only: bool = False
    ) -> list[Tool]:
        """The tools the model gets (``delegate`` too, when given; no edits when
        ``read_only``)."""
        path = {"type": "string", "description": "A path relative to the workspace root."}
        tools = [
            Tool(
                name="read_file",
                description="Read a text file, from character `offset` on (long output is cut).",
                parameters={
                    "type": "object",
                    "properties": {"path": path, "offset": {"type": "integer", "minimum": 0}},
                    "required": ["path"],
                },
                fn=self.read_file,
            ),
            Tool(
                name="edit_file",
                description="Replace the first occurrence of `old` by `new` in a file.",
                parameters={
                    "type": "object",
                    "properties": {
                        "path": path,
                        "old": {"type": "string"},
                        "new": {"type": "string"},
                    },
                    "required": ["path", "old", "new"],
                },
                fn=self.edit_file,
            ),
            Tool(
                name="bash",
                description="Run a command: `pytest -q`, `rg PATTERN` or `git diff`.",
                parameters={
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                },
                fn=self.bash,
            ),
        ]
        if read_only:
            tools = [t for t in tools if t.name != "edit_file"]
        if delegate is not None:
            tools.append(
                Tool(
                    name="delegate",
                    description="Hand a sub-task to a sub-agent and get its answer back.",
                    parameters={
                        "type": "object",
                        "properties": {"task": {"type": "string"}},
                        "required": ["task"],
                    },
                    fn=delegate,
                )
            )
        return tools
