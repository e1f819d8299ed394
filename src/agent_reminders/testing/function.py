"""A model made from a plain function: the test double for logic a script cannot express."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._core.request import ModelInfo, ModelRequest, ModelResponse
from .scripted import _ScriptTypeError, _step

__all__ = ["FunctionModel", "ModelFunction"]

ModelFunction = Callable[
    [ModelRequest],
    "ModelResponse | Mapping[str, Any] | str | Awaitable[ModelResponse | Mapping[str, Any] | str]",
]


class FunctionModel:
    """A model that answers each request with ``fn(request)`` and records the requests.

    ``fn`` may be a plain or an ``async`` function. It returns a :class:`ModelResponse`, a
    response mapping (as :class:`ScriptedModel` takes them, ``delay_seconds`` included) or a
    ``str`` (the assistant's text). Every request is kept in ``requests``, in order.

    Example:
        >>> import anyio
        >>> from agent_reminders import agent_loop
        >>> def echo(request):
        ...     return "You said: " + request.messages[-1]["content"]
        >>> model = FunctionModel(echo)
        >>> result = anyio.run(agent_loop, model, "hi")
        >>> result.final_message["content"], len(model.requests)
        ('You said: hi', 1)

        A function can look at the request to decide, e.g. call a tool once, then answer:

        >>> def agent(request):
        ...     if any(m["role"] == "tool" for m in request.messages):
        ...         return {"content": "done"}
        ...     return {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}]}
        >>> anyio.run(agent_loop, FunctionModel(agent), "list").iterations
        2
    """

    def __init__(
        self, fn: ModelFunction, *, name: str | None = None, model_info: ModelInfo | None = None
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionModel needs a callable fn(request); got {fn!r}")
        if model_info is not None and not isinstance(model_info, ModelInfo):
            raise TypeError(f"model_info must be a ModelInfo, not {type(model_info).__name__}")
        #: the model this double stands in for (the channel of ``"auto"`` sessions follows it)
        self.model_info = model_info
        self.fn = fn
        self.name: str = name or f"function:{getattr(fn, '__name__', type(fn).__name__)}"
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        value: Any = self.fn(request)
        if inspect.isawaitable(value):
            value = await value
        where = f"{self.name} response {len(self.requests) - 1}"
        if isinstance(value, str):
            return ModelResponse(message={"role": "assistant", "content": value})
        if not isinstance(value, ModelResponse | Mapping):
            raise _ScriptTypeError(
                f"{where}: fn returned {type(value).__name__}; expected a ModelResponse, a "
                "response mapping or a str"
            )
        step = _step(value, where)
        if step.delay > 0:
            import anyio  # here, so `import agent_reminders` imports no third-party package

            await anyio.sleep(step.delay)
        return step.response
