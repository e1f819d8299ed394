"""Audit tests read tiktoken's encodings from the shared offline copy when nothing else is set
(the Makefile exports the same folder); a user's machine downloads them as usual."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tiktoken"


@pytest.fixture(autouse=True)
def _tiktoken_files(monkeypatch: pytest.MonkeyPatch) -> None:
    if "TIKTOKEN_CACHE_DIR" not in os.environ and SHARED.is_dir():
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHARED))
