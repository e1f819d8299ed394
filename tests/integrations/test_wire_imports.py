"""`agent_reminders.integrations` is pure: importing it loads no SDK or framework."""

from __future__ import annotations

import json
import subprocess
import sys

import agent_reminders.integrations as integrations
from agent_reminders.integrations import anthropic, gemini, openai

SDKS = ("openai", "anthropic", "google", "langchain", "langchain_core", "pydantic_ai", "agents")


def test_importing_the_wire_formats_imports_no_sdk() -> None:
    script = (
        "import json, sys\nimport agent_reminders.integrations\n"
        "from agent_reminders.integrations import openai, anthropic, gemini\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "agent_reminders.integrations.openai" in loaded
    assert not {m for m in loaded if m.split(".")[0] in SDKS}


def test_each_function_is_also_importable_from_its_own_module() -> None:
    assert integrations.to_openai_chat is openai.to_openai_chat
    assert integrations.to_openai_responses is openai.to_openai_responses
    assert integrations.from_openai_chat is openai.from_openai_chat
    assert integrations.to_anthropic is anthropic.to_anthropic
    assert integrations.from_anthropic is anthropic.from_anthropic
    assert integrations.to_gemini is gemini.to_gemini
