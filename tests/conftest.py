"""Shared test configuration: the fixtures folder, async tests on asyncio, common fixtures.

Tests live in one folder per area (core/, session/, loop/, providers/, cli/, properties/, …)
and import only public modules of ``agent_reminders``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reminders import EventLog

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES.parents[1]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (trio is not a dependency)."""
    return "asyncio"


@pytest.fixture
def fixtures() -> Path:
    """The folder of shared test files (verifier outputs, scripts, forged tags)."""
    return FIXTURES


@pytest.fixture
def event_log() -> EventLog:
    """A fresh in-memory event log."""
    return EventLog()
