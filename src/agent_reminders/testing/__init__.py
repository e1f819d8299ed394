"""Test doubles users need: scripted and function models, a recording model server with a
simulated Anthropic prompt cache, event capture, builders.

Example:
    >>> import anyio
    >>> from agent_reminders import agent_loop
    >>> from agent_reminders.testing import ScriptedModel, capture_events, tool_call
    >>> model = ScriptedModel([{"tool_calls": [tool_call("c1", "ls")]}, {"content": "done"}])
    >>> async def main(session):
    ...     return await agent_loop(model, "list the files", session=session)
    >>> with capture_events(kind_prefix="loop.") as events:
    ...     session = make_session(event_log=events.event_log)
    ...     result = anyio.run(main, session)
    >>> result.status, len(model.requests), events.kinds()[0]
    ('completed', 2, 'loop.checkpoint')
"""

from .builders import assistant, make_session, text_of, tool_call, tool_result, user
from .events import CapturedEvents, capture_events
from .function import FunctionModel, ModelFunction
from .prompt_cache import AnthropicPromptCache, FakeClock
from .recording_server import (
    RecordedRequest,
    RecordingModelServer,
    ServerReply,
    strip_cache_control,
)
from .scripted import ScriptedModel, ScriptExhaustedError, response_from

__all__ = [
    "AnthropicPromptCache",
    "CapturedEvents",
    "FakeClock",
    "FunctionModel",
    "ModelFunction",
    "RecordedRequest",
    "RecordingModelServer",
    "ScriptExhaustedError",
    "ScriptedModel",
    "ServerReply",
    "assistant",
    "capture_events",
    "make_session",
    "response_from",
    "strip_cache_control",
    "text_of",
    "tool_call",
    "tool_result",
    "user",
]

# defined with the library's other errors; its documented home is this module
ScriptExhaustedError.__module__ = __name__
