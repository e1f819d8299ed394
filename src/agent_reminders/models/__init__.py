"""Model backends on the official SDKs, and ``parse_model_spec`` for the command line.

``OpenAIChatModel`` and ``OpenAIResponsesModel`` (module ``agent_reminders.models.openai``,
extra ``[openai]``) and ``AnthropicModel`` (``agent_reminders.models.anthropic``, extra
``[anthropic]``) are imported on first use: ``import agent_reminders.models`` works without
any SDK, and touching a backend whose SDK is missing raises an ``ImportError`` naming the extra.

Example:
    >>> from agent_reminders.models import parse_model_spec
    >>> parse_model_spec("openai:gpt-4.1-mini").name
    'openai:gpt-4.1-mini'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._core.errors import ConfigError
from .._core.request import Model

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .openai import OpenAIChatModel, OpenAIResponsesModel

__all__ = [
    "AnthropicModel",
    "KNOWN_PREFIXES",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "parse_model_spec",
]

_LAZY = {
    "AnthropicModel": "anthropic",
    "OpenAIChatModel": "openai",
    "OpenAIResponsesModel": "openai",
}

KNOWN_PREFIXES = ("anthropic", "openai", "openai-responses", "scripted")
"""The prefixes :func:`parse_model_spec` knows, in sorted order."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def parse_model_spec(
    spec: str, *, base_url: str | None = None, api_key: str | None = None, **options: Any
) -> Model:
    """Build a model from ``"PREFIX:NAME"``.

    ``"openai:NAME"`` → :class:`OpenAIChatModel`, ``"openai-responses:NAME"`` →
    :class:`OpenAIResponsesModel`, ``"anthropic:NAME"`` → :class:`AnthropicModel`,
    ``"scripted:PATH"`` → ``ScriptedModel.from_file(PATH, loop=True)`` (a JSON or JSON Lines
    script). ``base_url``, ``api_key`` and ``options`` (``system_role="system"`` for
    ``openai:``…) go to the backend's constructor; nothing is sent and no credential is read
    until the model is first called. A backend reports its ``model_info`` (provider, model,
    endpoint), from which a session's ``channel="auto"`` picks the role of its envelopes.

    Example:
        >>> model = parse_model_spec("openai:qwen2.5", base_url="http://127.0.0.1:8080/v1")
        >>> model.name, model.base_url, model.model_info.key
        ('openai:qwen2.5', 'http://127.0.0.1:8080/v1', 'openai-compatible:qwen2.5')
        >>> parse_model_spec("gemini:pro")
        Traceback (most recent call last):
        ...
        agent_reminders.ConfigError: RMD-104: unknown model prefix 'gemini' in 'gemini:pro'; known prefixes: anthropic, openai, openai-responses, scripted (e.g. 'openai:gpt-4.1-mini')

    Raises:
        ConfigError: (a ``ValueError``) no ``PREFIX:NAME`` shape, an unknown prefix (listing
            the known ones), an empty name, or options given to ``scripted:``.
        ImportError: the backend's SDK is missing (naming the extra to install).
    """  # noqa: E501
    known = ", ".join(KNOWN_PREFIXES)
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigError(
            f"model spec {spec!r} is not PREFIX:NAME; known prefixes: {known} "
            "(e.g. 'openai:gpt-4.1-mini')"
        )
    prefix, _, name = spec.partition(":")
    prefix = prefix.strip().lower()
    name = name.strip()
    if prefix not in KNOWN_PREFIXES:
        raise ConfigError(
            f"unknown model prefix {prefix!r} in {spec!r}; known prefixes: {known} "
            "(e.g. 'openai:gpt-4.1-mini')"
        )
    if not name:
        what = "a script path" if prefix == "scripted" else "a model name"
        raise ConfigError(f"model spec {spec!r} needs {what} after {prefix + ':'!r}")
    if prefix == "scripted":
        given = sorted(
            k
            for k, v in {"base_url": base_url, "api_key": api_key, **options}.items()
            if v is not None
        )
        if given:
            raise ConfigError(f"{', '.join(given)} do not apply to a scripted model ({spec!r})")
        from ..testing.scripted import ScriptedModel

        return ScriptedModel.from_file(name, loop=True)
    backend: Any
    if prefix == "openai":
        backend = __getattr__("OpenAIChatModel")
    elif prefix == "openai-responses":
        backend = __getattr__("OpenAIResponsesModel")
    else:
        backend = __getattr__("AnthropicModel")
    model: Model = backend(name, base_url=base_url, api_key=api_key, **options)
    return model
