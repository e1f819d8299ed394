"""One error tree: every error under ``AgentRemindersError``, typed by class, public paths."""

from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import agent_reminders
from agent_reminders import (
    AgentRemindersError,
    AlreadyDeliveredError,
    AuthorityError,
    InjectionQueue,
    PropagateError,
    QueueError,
    QueueErrorReason,
    QueueFullError,
    ReminderError,
    ReminderOptionError,
    Transcript,
    UnknownReminderIdError,
    explain,
    inject_reminder,
)
from agent_reminders.bridge import RpcError, SessionBusyError
from agent_reminders.bridge.errors import error_object, refusal
from agent_reminders.storage import SessionExistsError, StoredSessionError, UnknownSessionError
from agent_reminders.testing import ScriptExhaustedError


def _public_modules() -> list[str]:
    names = ["agent_reminders"]
    for found in pkgutil.iter_modules(agent_reminders.__path__):
        if not found.name.startswith("_"):
            names.append(f"agent_reminders.{found.name}")
    return names


@pytest.mark.parametrize("module", _public_modules())
def test_every_exported_class_reports_a_public_module(module: str) -> None:
    mod = importlib.import_module(module)
    private = {
        name: obj.__module__
        for name in getattr(mod, "__all__", ())
        if isinstance(obj := getattr(mod, name), type)
        and any(part.startswith("_") for part in obj.__module__.split("."))
    }
    assert private == {}


def test_exceptions_report_the_package() -> None:
    assert ReminderError.__module__ == "agent_reminders"
    assert QueueError.__module__ == "agent_reminders"
    assert ScriptExhaustedError.__module__ == "agent_reminders.testing"
    assert RpcError.__module__ == "agent_reminders.bridge.errors"


def test_every_error_is_under_the_root() -> None:
    for cls in (RpcError, SessionBusyError, ScriptExhaustedError, UnknownSessionError):
        assert issubclass(cls, AgentRemindersError)
    assert issubclass(ScriptExhaustedError, RuntimeError)
    assert ScriptExhaustedError("ran out").code == "RMD-112"
    assert explain("RMD-112").startswith("RMD-112 (model script ran out)")


def test_store_session_errors_have_a_family_and_stay_queue_errors() -> None:
    for cls in (UnknownSessionError, SessionExistsError):
        assert issubclass(cls, StoredSessionError)
        assert issubclass(cls, QueueError)
    err = UnknownSessionError("s1")
    assert (err.code, err.reason) == ("RMD-102", "unknown_session")


def test_codes_live_on_the_classes() -> None:
    assert ReminderOptionError.code == "RMD-001"
    assert QueueError.code == "RMD-102"
    assert str(QueueFullError("the queue holds 1 items already")) == (
        "RMD-102: the queue holds 1 items already"
    )
    assert QueueFullError("x").reason == QueueErrorReason.QUEUE_FULL
    assert QueueFullError("x").reason == "queue_full"


def test_reminder_error_by_code_makes_the_typed_class() -> None:
    assert type(ReminderError("RMD-009", "above")) is AuthorityError
    assert type(ReminderError("RMD-005", "bad")) is PropagateError
    assert type(ReminderError("RMD-002", "bad")) is ReminderError
    with pytest.raises(ReminderOptionError, match=r"^RMD-001: unknown option\(s\): nope$"):
        inject_reminder(Transcript(), {"body": "x", "nope": 1})
    with pytest.raises(PropagateError):
        inject_reminder(Transcript(), {"body": "x", "propagate": "sideways"})


@pytest.mark.parametrize("err", [AuthorityError("above"), QueueFullError("full")])
def test_typed_errors_pickle(err: AgentRemindersError) -> None:
    clone = pickle.loads(pickle.dumps(err))
    assert (type(clone), clone.code, str(clone)) == (type(err), err.code, str(err))


def test_queue_raises_by_reason() -> None:
    queue = InjectionQueue()
    with pytest.raises(UnknownReminderIdError):
        queue.revoke("never")
    rid = queue.remind({"body": "x"})
    queue.drain("iteration_start")
    with pytest.raises(AlreadyDeliveredError) as info:
        queue.revoke(rid)
    assert error_object(info.value)["data"]["reason"] == "already_delivered"


def test_a_refusal_is_an_rpc_error_and_the_typed_error() -> None:
    data = {"code": "RMD-102", "message": "no reminder 'r'", "reason": "unknown_reminder_id"}
    err = refusal(-32602, "Invalid params", data)
    assert isinstance(err, RpcError)
    assert isinstance(err, UnknownReminderIdError)
    assert (err.code, err.rmd_code, err.reason, err.data) == (
        -32602,
        "RMD-102",
        "unknown_reminder_id",
        data,
    )
    assert str(err) == "-32602: Invalid params (RMD-102: no reminder 'r')"
    assert err.explain() == explain("RMD-102")
    full = refusal(
        -32005, "Queue full", {"code": "RMD-102", "message": "m", "reason": "queue_full"}
    )
    assert isinstance(full, QueueFullError)
    above = refusal(-32602, "Invalid params", {"code": "RMD-009", "message": "above"})
    assert isinstance(above, AuthorityError)
    assert isinstance(above, ValueError)
    missing = refusal(-32004, "Session not found")
    assert isinstance(missing, UnknownSessionError)
    assert missing.code == -32004
    busy = refusal(-32006, "busy", {"owner": "w1"})
    assert isinstance(busy, SessionBusyError)
    assert busy.owner == "w1"
    plain = refusal(-32601, "Method not found: x")
    assert type(plain) is RpcError
    assert plain.rmd_code is None
    clone = pickle.loads(pickle.dumps(err))
    assert (type(clone), clone.code, str(clone)) == (type(err), err.code, str(err))
