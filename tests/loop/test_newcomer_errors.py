"""The first mistakes a newcomer makes get an error that names the fix, not a traceback from
inside the library."""

from __future__ import annotations

import traceback

import anyio
import pytest

from agent_reminders import ReminderError, Session, Transcript, agent_loop, inject_reminder
from agent_reminders.testing import FunctionModel


def test_a_misspelt_option_names_the_option_meant() -> None:
    """The message keeps its fixed wording; the guess is a note under it in a traceback."""
    with pytest.raises(ReminderError) as caught:
        Session("s").inject({"body": "x", "ttl": 3})
    assert caught.value.message == "unknown option(s): ttl"
    assert caught.value.__notes__ == ["'ttl': did you mean 'ttl_turns'?"]
    with pytest.raises(ReminderError) as caught:
        inject_reminder(Transcript(), {"body": "x", "dedup_key": "k"})
    assert caught.value.__notes__ == ["'dedup_key': did you mean 'dedupe_key'?"]
    shown = "".join(traceback.format_exception(caught.value))
    assert "did you mean 'dedupe_key'?" in shown


def test_two_unknown_options_are_named_without_a_guess() -> None:
    with pytest.raises(ReminderError) as caught:
        Session("s").inject({"body": "x", "ttl": 3, "colour": "red"})
    assert caught.value.message == "unknown option(s): colour, ttl"
    assert not getattr(caught.value, "__notes__", [])


def test_a_misspelt_integration_option_names_the_integration_and_the_fix() -> None:
    pytest.importorskip("langchain")
    from agent_reminders.integrations.langchain import ReminderMiddleware

    with pytest.raises(TypeError, match="ReminderMiddleware: unknown option") as caught:
        ReminderMiddleware(contxt_window=5)
    assert "did you mean 'context_window'?" in str(caught.value)
    assert "Session.__init__" not in str(caught.value)


def test_a_plain_function_as_the_model_says_how_to_wrap_it() -> None:
    with pytest.raises(TypeError, match=r"async callable.*FunctionModel\(fn\)") as caught:
        anyio.run(agent_loop, lambda request: "hi", "t")  # type: ignore[arg-type]
    assert "can't be used in 'await' expression" not in str(caught.value)
    # the fix it names works
    result = anyio.run(agent_loop, FunctionModel(lambda request: "hi"), "t")
    assert result.final_message is not None
    assert result.final_message["content"] == "hi"
