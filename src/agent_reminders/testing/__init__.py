"""Test doubles users need: scripted and function models, event capture, builders."""

from .scripted import ScriptedModel, ScriptExhaustedError, response_from

__all__ = ["ScriptExhaustedError", "ScriptedModel", "response_from"]
