"""Builders and hand counts for the audit tests.

``tokens_b4`` counts like the bytes/4 tokenizer (one token per 4 bytes of the canonical JSON,
the last one shorter), which makes hand-computed figures exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def tokens_b4(value: Any) -> int:
    return -(-len(canon(value).encode("utf-8")) // 4)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def text_block(text: str, *, mark: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = {"type": "ephemeral"}
    return block


def write_jsonl(path: Path, bodies: Iterable[Any]) -> Path:
    path.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
    return path


def run_cli(
    args: Sequence[str], *, stdin: str | None = None, first_on_path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``agent-reminders ARGS`` as a real subprocess of this worktree's code
    (``first_on_path``: a folder whose modules shadow installed ones)."""
    paths = [*([str(first_on_path)] if first_on_path else []), str(ROOT / "src")]
    return subprocess.run(
        [sys.executable, "-m", "agent_reminders.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        check=False,
    )
