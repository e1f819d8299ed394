"""parse_model_spec, and the import rules: no SDK on `import agent_reminders`, an ImportError
naming the extra when a backend's SDK is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_reminders import ConfigError
from agent_reminders.models import (
    KNOWN_PREFIXES,
    AnthropicModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    parse_model_spec,
)
from agent_reminders.testing import ScriptedModel


@pytest.mark.parametrize(
    ("spec", "cls", "name"),
    [
        ("openai:gpt-4.1-mini", OpenAIChatModel, "openai:gpt-4.1-mini"),
        ("openai-responses:gpt-4.1", OpenAIResponsesModel, "openai-responses:gpt-4.1"),
        ("anthropic:claude-sonnet-4-5", AnthropicModel, "anthropic:claude-sonnet-4-5"),
        ("OpenAI: llama3.1:8b ", OpenAIChatModel, "openai:llama3.1:8b"),
    ],
)
def test_backend_specs(spec: str, cls: type, name: str) -> None:
    model = parse_model_spec(spec, base_url="http://127.0.0.1:1/v1", max_retries=0)
    assert isinstance(model, cls)
    assert model.name == name  # type: ignore[attr-defined]
    assert model.base_url == "http://127.0.0.1:1/v1"  # type: ignore[attr-defined]


def test_scripted_spec_loops(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"content": "hi"}) + "\n", encoding="utf-8")
    model = parse_model_spec(f"scripted:{script}")
    assert isinstance(model, ScriptedModel)
    assert model.loop is True
    with pytest.raises(ConfigError, match="base_url do not apply to a scripted model"):
        parse_model_spec(f"scripted:{script}", base_url="http://x")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("gemini:pro", "unknown model prefix 'gemini'"),
        ("gpt-4", "is not PREFIX:NAME"),
        ("openai:", "needs a model name after 'openai:'"),
        ("scripted: ", "needs a script path"),
    ],
)
def test_bad_specs_are_value_errors_listing_the_prefixes(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as caught:
        parse_model_spec(spec)
    assert isinstance(caught.value, ConfigError)
    if "PREFIX" in fragment or "unknown" in fragment:
        assert "anthropic, openai, openai-responses, scripted" in str(caught.value)
    assert KNOWN_PREFIXES == ("anthropic", "openai", "openai-responses", "scripted")


def test_unknown_attribute_of_models() -> None:
    import agent_reminders.models as models

    with pytest.raises(AttributeError, match="Nope"):
        _ = models.Nope
    assert "OpenAIChatModel" in dir(models)


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_package_imports_no_sdk() -> None:
    proc = run(
        """
        import json, sys
        import agent_reminders, agent_reminders.models, agent_reminders.integrations
        import agent_reminders.testing
        from agent_reminders.models import parse_model_spec
        print(json.dumps(sorted(sys.modules)))
        """
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "agent_reminders.models" in loaded
    for sdk in ("openai", "anthropic", "httpx", "httpx2"):
        assert not {m for m in loaded if m == sdk or m.startswith(f"{sdk}.")}, sdk


BLOCKER = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
"""


@pytest.mark.parametrize(
    ("sdk", "statement", "extra"),
    [
        ("openai", "from agent_reminders.models import OpenAIChatModel", "openai"),
        ("openai", "import agent_reminders.models.openai", "openai"),
        ("openai", "agent_reminders.models.parse_model_spec('openai-responses:x')", "openai"),
        ("anthropic", "from agent_reminders.models import AnthropicModel", "anthropic"),
        ("anthropic", "agent_reminders.models.parse_model_spec('anthropic:x')", "anthropic"),
    ],
)
def test_a_missing_sdk_raises_import_error_naming_the_extra(
    sdk: str, statement: str, extra: str
) -> None:
    proc = run(
        BLOCKER.format(blocked={sdk})
        + f"""
import agent_reminders.models
try:
    {statement}
except ImportError as exc:
    print("IMPORT ERROR:", exc)
else:
    print("imported")
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert f'pip install "agent-reminders[{extra}]"' in proc.stdout, proc.stdout
